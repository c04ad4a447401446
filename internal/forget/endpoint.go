package forget

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/micro"
	"github.com/nats-io/nuid"

	"github.com/agentmem/agentmem/internal/fact"
	"github.com/agentmem/agentmem/internal/graph"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/reply"
	"github.com/agentmem/agentmem/pkg/events"
)

// instances is how many forget requests are served at once (package reply's AddEndpoint): a
// whole user's forget takes a second or more, a fact's delete or correction milliseconds.
const instances = 8

// AddEndpoint adds the endpoint "forget" on events.ForgetSubjects to svc; requests are served
// until svc stops, each under ctx. It fails as micro's AddEndpoint does.
func (s *Service) AddEndpoint(ctx context.Context, svc micro.Service) error {
	// instances instances of the endpoint, each answering synchronously: micro's stats count
	// every request, its processing time and its errors.
	return reply.AddEndpoint(svc, "forget", events.ForgetSubjects, instances, micro.HandlerFunc(func(req micro.Request) {
		tenant, _ := events.ParseForgetSubject(req.Subject())
		if err := reply.Check(tenant, req.Reply()); err != nil {
			s.cfg.Metrics.Refused("forget")
			s.log.Debug().Err(err).Str("subject", req.Subject()).Msg("request refused")
			return
		}
		s.serve(ctx, req)
	}))
}

func (s *Service) serve(ctx context.Context, req micro.Request) {
	fail := func(code int, field, msg string) {
		if err := reply.Error(req, code, field, msg); err != nil {
			s.log.Debug().Err(err).Msg("responding")
		}
	}
	answer := func(v any) {
		data, err := json.Marshal(v)
		if err != nil {
			fail(500, "", "encoding the reply: "+err.Error())
			return
		}
		if err := req.Respond(data); err != nil {
			s.log.Debug().Err(err).Msg("responding")
		}
	}
	tenant, err := events.ParseForgetSubject(req.Subject())
	if err != nil {
		fail(400, "subject", err.Error())
		return
	}
	var named struct {
		Tenant *string `json:"tenant"`
	}
	if json.Unmarshal(req.Data(), &named) == nil && named.Tenant != nil && *named.Tenant != tenant {
		fail(400, "tenant", fmt.Sprintf("the request names tenant %q on the subject of tenant %q: the tenant is the subject's", *named.Tenant, tenant))
		return
	}
	fr, err := events.ParseForgetRequest(req.Data())
	if err != nil {
		var fe *events.FieldError
		if errors.As(err, &fe) {
			fail(400, fe.Field, fe.Message)
			return
		}
		fail(400, "body", err.Error())
		return
	}
	fctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if fr.FactID != "" {
		res, err := s.Fact(fctx, tenant, fr)
		var fe *events.FieldError
		switch {
		case errors.As(err, &fe):
			fail(400, fe.Field, fe.Message)
		case errors.Is(err, longterm.ErrNotFound):
			fail(404, "fact_id", fmt.Sprintf("user %q has no fact %q", fr.User, fr.FactID))
		case err != nil:
			fail(500, "", "forgetting the fact: "+err.Error())
		default:
			answer(res)
		}
		return
	}
	counts, err := s.Forget(fctx, tenant, fr.User)
	if err != nil {
		fail(500, "", "forgetting: "+err.Error())
		return
	}
	answer(events.ForgetReply{Forgotten: counts})
}

// Fact deletes one fact (op "deleted") or, when fr has content, corrects it (a new fact
// supersedes it), publishes the fact events of the change and records the edit in the turns
// stream (events.Edit), from which a replay makes it again. It fails with longterm.ErrNotFound
// for a fact the user does not have, and with an *events.FieldError for a correction that states
// the fact as it is.
func (s *Service) Fact(ctx context.Context, tenant string, fr events.ForgetRequest) (events.ForgetReply, error) {
	e := events.Edit{Op: events.EditDeleteFact, User: fr.User, FactID: fr.FactID, At: time.Now().UTC()}
	if fr.Content != "" {
		e.Op, e.NewID, e.Content, e.Tokens = events.EditCorrectFact, fact.ID(tenant, fr.User, fr.Content), fr.Content, s.counter.Count(fr.Content)
	}
	res, changed, err := s.ApplyEdit(ctx, tenant, e)
	if err != nil || !changed {
		return res, err
	}
	if err := s.record(ctx, tenant, e); err != nil {
		return events.ForgetReply{}, err
	}
	return res, nil
}

// ApplyEdit makes edit e of a user's facts (Fact's, or a replay's of the edit's record) and
// publishes the fact events of the change (unless Config.NoEvents). changed is false when there
// was nothing to change (a fact deleted already). It fails as Fact does.
func (s *Service) ApplyEdit(ctx context.Context, tenant string, e events.Edit) (res events.ForgetReply, changed bool, err error) {
	if err := e.Validate(); err != nil {
		return events.ForgetReply{}, false, err
	}
	if e.Op == events.EditDeleteFact {
		f, changed, err := s.long.DeleteFact(ctx, tenant, e.User, e.FactID, e.At)
		if err != nil {
			return events.ForgetReply{}, false, err
		}
		if changed {
			s.cfg.Metrics.Facts("deleted", 1)
			// A live fact's relation ends with it (a superseded one's ended already).
			if f.SupersededBy == "" {
				if _, err := graph.WriteEdit(ctx, s.long, f, true, "deletion", e.At); err != nil {
					return events.ForgetReply{}, false, fmt.Errorf("ending the deleted fact's relation: %w", err)
				}
			}
			if err := s.publishFact(ctx, tenant, e.User, "fact-deleted-"+f.ID, events.FactDeleted, f); err != nil {
				return events.ForgetReply{}, false, err
			}
		}
		return events.ForgetReply{Forgotten: map[string]int{"facts": 1}}, changed, nil
	}
	nf, old, err := s.long.Correct(ctx, tenant, e.User, e.FactID, e.NewID, e.Content, e.Tokens, e.At)
	if errors.Is(err, longterm.ErrSameContent) {
		return events.ForgetReply{}, false, &events.FieldError{Field: "content", Message: fmt.Sprintf("states fact %q as it is: nothing to correct", e.FactID)}
	}
	if err != nil {
		return events.ForgetReply{}, false, err
	}
	s.cfg.Metrics.Facts("corrected", 1)
	// The graph follows: the relation the correction states supersedes the corrected one's.
	if _, err := graph.WriteEdit(ctx, s.long, nf, false, "correction", e.At); err != nil {
		return events.ForgetReply{}, false, fmt.Errorf("writing the corrected relation: %w", err)
	}
	if err := s.publishFact(ctx, tenant, e.User, "fact-added-"+nf.ID, events.FactAdded, nf); err != nil {
		return events.ForgetReply{}, false, err
	}
	if err := s.publishFact(ctx, tenant, e.User, "fact-superseded-"+old.ID+"-"+nf.ID, events.FactSuperseded, old); err != nil {
		return events.ForgetReply{}, false, err
	}
	ev := nf.Event()
	return events.ForgetReply{Forgotten: map[string]int{"facts": 0}, Fact: &ev}, true, nil
}

// record stores edit e in the turns stream (synced with the turns), after it was made and
// before it is answered.
func (s *Service) record(ctx context.Context, tenant string, e events.Edit) error {
	msg, err := events.NewMsg(ctx, tenant, e.User, "edit-"+nuid.Next(), events.TypeEdit, s.cfg.Source, e.At, e)
	if err != nil {
		return err
	}
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := s.js.PublishMsg(pctx, msg); err != nil {
		return fmt.Errorf("recording the edit: %w", err)
	}
	return nil
}

// publishFact publishes a fact event of a change ApplyEdit made (none with Config.NoEvents).
func (s *Service) publishFact(ctx context.Context, tenant, user, id, op string, f longterm.Fact) error {
	if s.cfg.NoEvents {
		return nil
	}
	msg, err := events.NewMsg(ctx, tenant, user, id, events.TypeFact, s.cfg.Source, f.ValidFrom, events.FactEvent{Op: op, Fact: f.Event()})
	if err != nil {
		return err
	}
	// A publish lost in a leader change fails after 10 s rather than at the handler's timeout.
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if _, err := s.js.PublishMsg(pctx, msg); err != nil {
		return fmt.Errorf("publishing fact event %s: %w", id, err)
	}
	return nil
}

package extract

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/internal/fact"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/reply"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/events"
)

// ServiceName is the micro service the extractor registers; its endpoint "forget" answers on
// memory.forget.<tenant>.
const ServiceName = "agentmem-extractor"

// forgetInstances is how many forget requests are served at once (package reply's
// AddEndpoint): a whole user's forget takes a second or more, a fact's delete or correction
// milliseconds.
const forgetInstances = 8

// forgetGrace is how long Forget waits before its second pass, which removes what work in
// flight (a compression or extraction that started before the forget) wrote meanwhile.
const forgetGrace = 750 * time.Millisecond

// forgetEmbedWait bounds how long after its first pass Forget waits for the embedding stage to
// finish what it had in flight (awaitEmbedders), so that the second pass removes those vectors
// too; with the passes it keeps a forget within pkg/client's default timeout (5 s).
const forgetEmbedWait = 2500 * time.Millisecond

// Forget removes everything of one user: every session's short-term state (replaced by a
// tombstone header so that turns in flight are not applied again), archived turns, pressure,
// summary and fact events, dead letters, usage counters, facts, summaries, the session index and
// the user's vectors (purged, history included); it does so twice, the second time after the
// grace and after the embedding stage finished what it had in flight (awaitEmbedders), then
// announces it with a "forgotten" fact event, which retrievers use to drop their caches. It
// returns counts of what it removed.
func (w *Worker) Forget(ctx context.Context, tenant, user string) (map[string]int, error) {
	if err := events.ValidateToken("tenant", tenant); err != nil {
		return nil, err
	}
	if err := events.ValidateToken("user", user); err != nil {
		return nil, err
	}
	counts := map[string]int{}
	if err := w.forgetPass(ctx, tenant, user, counts); err != nil {
		return counts, err
	}
	// What the streams held when the first pass was done: the embedding stage's work on any of
	// it may still be in flight.
	marks, err := w.streamMarks(ctx)
	if err != nil {
		return counts, err
	}
	deadline := time.Now().Add(forgetEmbedWait)
	timer := time.NewTimer(forgetGrace)
	select {
	case <-ctx.Done():
		timer.Stop()
		return counts, ctx.Err()
	case <-timer.C:
	}
	if err := w.awaitEmbedders(ctx, marks, deadline); err != nil {
		if ctx.Err() != nil {
			return counts, ctx.Err()
		}
		w.log.Warn().Err(err).Str("tenant", tenant).Str("user", user).
			Msg("forget: the embedding stage did not finish its work in flight in time; a vector it stores in the moment before it sees the forget outlives it")
	}
	if err := w.forgetPass(ctx, tenant, user, counts); err != nil {
		return counts, err
	}
	msg, err := events.NewMsg(ctx, tenant, user, "forgotten-"+strconv.FormatInt(time.Now().UnixNano(), 36), events.TypeFact, w.cfg.Source, time.Now(),
		events.FactEvent{Op: events.FactForgotten, Fact: events.Fact{ID: "user:" + user}})
	if err != nil {
		return counts, err
	}
	if _, err := w.js.PublishMsg(ctx, msg); err != nil {
		return counts, fmt.Errorf("announcing the forget: %w", err)
	}
	// The announcement is for live subscribers; it is not kept as memory of the user.
	if _, err := w.purge(ctx, w.cfg.Topology.FactStream(), msg.Subject); err != nil {
		return counts, err
	}
	w.log.Info().Str("tenant", tenant).Str("user", user).Interface("forgotten", counts).Msg("user forgotten")
	return counts, nil
}

func (w *Worker) forgetPass(ctx context.Context, tenant, user string, counts map[string]int) error {
	topo := w.cfg.Topology
	recs, err := w.store.User(ctx, tenant, user)
	if err != nil {
		return err
	}
	turnsInfo, err := w.streamLast(ctx, topo.TurnsStream())
	if err != nil {
		return err
	}
	var sessions []string
	for _, r := range recs.Sessions {
		sessions = append(sessions, r.Session)
	}
	for _, sess := range sessions {
		k := session.Key{Tenant: tenant, Session: sess}
		h, _, err := w.sessions.Header(ctx, k)
		if err != nil && !errors.Is(err, session.ErrNotFound) {
			return err
		}
		if err == nil && h.User != "" && h.User != user {
			continue // the index named a session another user owns
		}
		if err := w.sessions.Tombstone(ctx, k, turnsInfo); err != nil {
			return err
		}
		if n, err := w.purgeKV(ctx, topo.ChunkBucket(), tenant+"."+sess+".>"); err != nil {
			return err
		} else if n > 0 {
			counts["sessions"]++
		}
		for _, p := range []struct{ name, stream, subject string }{
			{"turns", topo.TurnsStream(), events.SessionFilter(tenant, sess)},
			{"summary_events", topo.SummaryStream(), "*.memory.summaries." + tenant + "." + sess},
			{"pressure_events", topo.PressureStream(), "memory.pressure." + tenant + "." + sess},
			{"dead_letters", topo.DeadLetterStream(), "memory.dlq." + tenant + "." + sess},
		} {
			n, err := w.purge(ctx, p.stream, p.subject)
			if err != nil {
				return err
			}
			counts[p.name] += int(n)
		}
		// Ingest's announcements of the session's ends (ids and sequences; not counted). A
		// session name that is not a subject token was never announced.
		if ended, err := events.EndedSubject(tenant, sess); err == nil {
			if _, err := w.purge(ctx, topo.TurnsStream(), ended); err != nil {
				return err
			}
		}
		if _, err := w.purgeKV(ctx, topo.UsageBucket(), tenant+"."+sess); err != nil {
			return err
		}
		// LLM answers of a compression of the session still in progress, or never finished.
		if _, err := w.purgeKV(ctx, topo.MemoBucket(), tenant+"."+sess+".>"); err != nil {
			return err
		}
	}
	counts["facts"] += len(recs.Facts)
	counts["summaries"] += len(recs.Summaries)
	subject, _ := events.FactSubject(tenant, user)
	n, err := w.purge(ctx, topo.FactStream(), subject)
	if err != nil {
		return err
	}
	counts["fact_events"] += int(n)
	if _, err := w.store.Forget(ctx, tenant, user); err != nil {
		return err
	}
	// The user's vectors, every model's (package embedder), history included.
	n, err = w.vectors.Forget(ctx, tenant, user)
	if err != nil {
		return err
	}
	counts["vectors"] += int(n)
	return nil
}

// streamMarks returns the last sequence of each stream an embedder consumer reads.
func (w *Worker) streamMarks(ctx context.Context) (map[string]uint64, error) {
	marks := map[string]uint64{}
	for _, c := range w.cfg.ForgetWaits {
		last, err := w.streamLast(ctx, c.Stream)
		if err != nil {
			return nil, err
		}
		marks[c.Stream] = last
	}
	return marks, nil
}

// awaitEmbedders waits until each embedder consumer has acknowledged every message it reads up
// to its stream's mark, or until deadline. The embedding stage acknowledges a message once its
// vector is stored, and a message it is delivered later finds the session a tombstone or the
// entry purged; but one it was embedding when the forget began (a slow or retried embedding
// call, or a turn decided from a session state it had read before) is stored whenever the call
// returns, and only a pass after that removes it. A consumer that does not exist (no embedder
// deployed) has nothing in flight.
func (w *Worker) awaitEmbedders(ctx context.Context, marks map[string]uint64, deadline time.Time) error {
	pause := 20 * time.Millisecond
	for _, c := range w.cfg.ForgetWaits {
		stream, cfg := c.Stream, c.Config
		for {
			done, err := w.embedderDone(ctx, stream, cfg.Durable, marks[stream])
			if err != nil {
				return err
			}
			if done {
				break
			}
			if !time.Now().Before(deadline) {
				return fmt.Errorf("consumer %s of %s has not acknowledged up to sequence %d", cfg.Durable, stream, marks[stream])
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(min(pause, time.Until(deadline))):
			}
			pause = min(2*pause, 200*time.Millisecond)
		}
	}
	return nil
}

// embedderDone reports whether consumer name of stream has nothing unacknowledged at or below
// sequence mark.
func (w *Worker) embedderDone(ctx context.Context, stream, name string, mark uint64) (bool, error) {
	// Binding the consumer reads its info (CachedInfo): one request per look.
	cons, err := w.js.Consumer(ctx, stream, name)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading consumer %s of %s: %w", name, stream, err)
	}
	info := cons.CachedInfo()
	// The ack floor is the last message below which everything is acknowledged; with nothing
	// unacknowledged, everything delivered is, and what was not delivered yet finds the forget.
	return info.AckFloor.Stream >= mark || (info.NumAckPending == 0 && (info.Delivered.Stream >= mark || info.NumPending == 0)), nil
}

// streamLast is the last sequence of a stream.
func (w *Worker) streamLast(ctx context.Context, name string) (uint64, error) {
	// Binding the stream reads its info; a second request would read the same.
	s, err := w.js.Stream(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("reading %q: %w", name, err)
	}
	return s.CachedInfo().State.LastSeq, nil
}

// purge removes every message on subject from a stream and returns how many there were.
func (w *Worker) purge(ctx context.Context, stream, subject string) (uint64, error) {
	return archive.Purge(ctx, w.js, stream, subject)
}

// purgeKV removes keys matching pattern from a bucket, history included.
func (w *Worker) purgeKV(ctx context.Context, bucket, pattern string) (uint64, error) {
	return archive.PurgeKV(ctx, w.js, bucket, pattern)
}

// startForget registers the agentmem-extractor micro service with its forget endpoint.
func (w *Worker) startForget(ctx context.Context, nc *nats.Conn) (micro.Service, error) {
	svc, err := micro.AddService(nc, micro.Config{
		Name: ServiceName, Version: "0.1.0",
		Description: "agentmem fact extraction and forgetting: memory.forget.<tenant> removes everything of a user",
	})
	if err != nil {
		return nil, fmt.Errorf("registering %s: %w", ServiceName, err)
	}
	// forgetInstances instances of the endpoint, each answering synchronously: micro's stats count
	// every request, its processing time and its errors.
	err = reply.AddEndpoint(svc, "forget", events.ForgetSubjects, forgetInstances, micro.HandlerFunc(func(req micro.Request) {
		tenant, _ := events.ParseForgetSubject(req.Subject())
		if err := reply.Check(tenant, req.Reply()); err != nil {
			w.cfg.Metrics.Refused("forget")
			w.log.Debug().Err(err).Str("subject", req.Subject()).Msg("request refused")
			return
		}
		w.serveForget(ctx, req)
	}))
	if err != nil {
		_ = svc.Stop()
		return nil, err
	}
	if err := nc.Flush(); err != nil {
		_ = svc.Stop()
		return nil, err
	}
	return svc, nil
}

func (w *Worker) serveForget(ctx context.Context, req micro.Request) {
	fail := func(code int, field, msg string) {
		if err := reply.Error(req, code, field, msg); err != nil {
			w.log.Debug().Err(err).Msg("responding")
		}
	}
	answer := func(v any) {
		data, err := json.Marshal(v)
		if err != nil {
			fail(500, "", "encoding the reply: "+err.Error())
			return
		}
		if err := req.Respond(data); err != nil {
			w.log.Debug().Err(err).Msg("responding")
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
		res, err := w.forgetFact(fctx, tenant, fr)
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
	counts, err := w.Forget(fctx, tenant, fr.User)
	if err != nil {
		fail(500, "", "forgetting: "+err.Error())
		return
	}
	answer(events.ForgetReply{Forgotten: counts})
}

// forgetFact deletes one fact (op "deleted") or corrects it (a new fact supersedes it).
func (w *Worker) forgetFact(ctx context.Context, tenant string, fr events.ForgetRequest) (events.ForgetReply, error) {
	now := time.Now().UTC()
	if fr.Content == "" {
		f, changed, err := w.store.DeleteFact(ctx, tenant, fr.User, fr.FactID, now)
		if err != nil {
			return events.ForgetReply{}, err
		}
		if changed {
			w.cfg.Metrics.Facts("deleted", 1)
			if err := w.publishFact(ctx, tenant, fr.User, "fact-deleted-"+f.ID, events.FactDeleted, f); err != nil {
				return events.ForgetReply{}, err
			}
		}
		return events.ForgetReply{Forgotten: map[string]int{"facts": 1}}, nil
	}
	newID := fact.ID(tenant, fr.User, fr.Content)
	nf, old, err := w.store.Correct(ctx, tenant, fr.User, fr.FactID, newID, fr.Content, w.counter.Count(fr.Content), now)
	if errors.Is(err, longterm.ErrSameContent) {
		return events.ForgetReply{}, &events.FieldError{Field: "content", Message: fmt.Sprintf("states fact %q as it is: nothing to correct", fr.FactID)}
	}
	if err != nil {
		return events.ForgetReply{}, err
	}
	w.cfg.Metrics.Facts("corrected", 1)
	if err := w.publishFact(ctx, tenant, fr.User, "fact-added-"+nf.ID, events.FactAdded, nf); err != nil {
		return events.ForgetReply{}, err
	}
	if err := w.publishFact(ctx, tenant, fr.User, "fact-superseded-"+old.ID+"-"+nf.ID, events.FactSuperseded, old); err != nil {
		return events.ForgetReply{}, err
	}
	ev := nf.Event()
	return events.ForgetReply{Forgotten: map[string]int{"facts": 0}, Fact: &ev}, nil
}

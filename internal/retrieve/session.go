package retrieve

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/agentmem/agentmem/internal/reply"
	"github.com/agentmem/agentmem/internal/session"
	shown "github.com/agentmem/agentmem/internal/view"
	"github.com/agentmem/agentmem/pkg/events"
)

// addSessionEndpoint adds the endpoint "session" on memory.session.* to svc: a session's
// short-term state for agents, which have no JetStream or KV access (memctl session with an
// agent's credentials). Its answers follow the retrieve endpoint's rules: only at an inbox of
// the requester, the tenant is the subject's, a request counts against the tenant's retrieve
// rate.
func (s *Service) addSessionEndpoint(ctx context.Context, svc micro.Service) error {
	err := svc.AddEndpoint("session", micro.HandlerFunc(func(req micro.Request) {
		r := reply.From(req)
		tenant, _ := events.ParseSessionSubject(r.Subject)
		if err := reply.Check(tenant, r.Reply); err != nil {
			s.cfg.Metrics.Refused("session")
			s.log.Debug().Err(err).Str("subject", r.Subject).Msg("request refused")
			return
		}
		s.sem <- struct{}{}
		go func() {
			defer func() { <-s.sem }()
			res, rerr := s.serveSession(ctx, r.Subject, r.Data)
			var err error
			if rerr != nil {
				err = reply.ErrorTo(s.nc, r.Reply, rerr.Code, rerr.Field, rerr.Message)
			} else {
				err = reply.JSON(s.nc, r.Reply, res)
			}
			if err != nil {
				s.log.Debug().Err(err).Msg("responding")
			}
		}()
	}), micro.WithEndpointSubject(events.SessionSubjects))
	if err != nil {
		return fmt.Errorf("adding endpoint session: %w", err)
	}
	return nil
}

// serveSession answers one request on memory.session.<tenant>: the session's short-term state as
// the HTTP API shows it (package view), 404 when the tenant has no such session (or it was
// forgotten).
func (s *Service) serveSession(ctx context.Context, subject string, body []byte) (shown.Session, *Error) {
	tenant, err := events.ParseSessionSubject(subject)
	if err != nil {
		return shown.Session{}, &Error{Code: 400, Field: "subject", Message: err.Error()}
	}
	if named, ok := bodyTenant(body); ok && named != tenant {
		return shown.Session{}, &Error{Code: 400, Field: "tenant", Message: fmt.Sprintf("the request names tenant %q on the subject of tenant %q: the tenant is the subject's", named, tenant)}
	}
	if !s.cfg.Limits.AllowRetrieve(tenant, time.Now()) {
		l := s.cfg.Limits.For(tenant)
		return shown.Session{}, &Error{Code: 429, Message: fmt.Sprintf("rate limit: tenant %q makes more than %g retrieves/s (burst %d)", tenant, l.RetrievesPerSecond, max(l.RetrieveBurst, 1))}
	}
	req, err := events.ParseSessionRequest(body)
	if err != nil {
		var fe *events.FieldError
		if errors.As(err, &fe) {
			return shown.Session{}, &Error{Code: 400, Field: fe.Field, Message: fe.Message}
		}
		return shown.Session{}, &Error{Code: 400, Message: err.Error()}
	}
	lctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	st, err := s.store.Load(lctx, session.Key{Tenant: tenant, Session: req.Session}, 0)
	if err != nil {
		return shown.Session{}, readError("reading session", err)
	}
	if h := st.Header; st.Revision() == 0 || (!h.Forgotten.IsZero() && h.Head == "") {
		return shown.Session{}, &Error{Code: 404, Field: "session", Message: fmt.Sprintf("tenant %q has no session %q", tenant, req.Session)}
	}
	return shown.NewSession(st), nil
}

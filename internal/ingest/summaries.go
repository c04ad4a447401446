package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/worker"
	"github.com/agentmem/agentmem/pkg/events"
)

// errNotNamedYet: a summary arrived before ingest committed the pressure that asked for it.
var errNotNamedYet = errors.New("ingest: summary for a range not named yet")

// parseSummarySubject reads "<p>.memory.summaries.<tenant>.<session>".
func parseSummarySubject(subject string) (session.Key, error) {
	tenant, sess, err := events.ParseKindSubject(events.KindSummaries, subject)
	return session.Key{Tenant: tenant, Session: sess}, err
}

// applySummaries applies a session's agentmem.summary.v1 events of a batch, in order, through
// handler (summaryHandler): the placeholder a pressure event named gets the summary's text.
// Applying the same summary again changes nothing. It returns each event's outcome.
func (w *Worker) applySummaries(ctx context.Context, handler worker.Handler, group []worker.Delivery[session.Key]) []error {
	outcomes, _ := worker.Each[session.Key](handler)(ctx, group)
	for i, err := range outcomes {
		if err != nil && !errors.Is(err, events.ErrInvalid) {
			w.failures.Add(1)
			w.log.Debug().Err(err).Str("subject", group[i].Msg.Subject()).Msg("summary not applied yet; will retry")
		} else if err != nil {
			w.rejected.Add(1)
		}
	}
	return outcomes
}

// summaryHandler returns the handler of a partition's summaries: decoded and validated once
// (worker.Dispatch), each in its "agentmem.ingest.summary" span, and applied within opTimeout.
func (w *Worker) summaryHandler(part *partition) worker.Handler {
	return worker.Chain(worker.Dispatch{
		Kinds: []string{events.KindSummaries},
		Routes: []worker.Route{worker.On(events.TypeSummary, func(ctx context.Context, e worker.Event, sum events.Summary) error {
			return w.applySummary(ctx, part, session.Key{Tenant: e.Address.Tenant, Session: e.Address.Key}, sum)
		}).Traced("agentmem.ingest.summary")},
		Tracer: w.tracer,
	}.Handler(), worker.Timeout(opTimeout))
}

func (w *Worker) applySummary(ctx context.Context, part *partition, k session.Key, sum events.Summary) (err error) {
	if sum.Session != k.Session {
		return fmt.Errorf("%w: summary names session %q on the subject of session %q", events.ErrInvalid, sum.Session, k.Session)
	}
	st := part.get(k)
	if st == nil {
		if st, err = w.store.Load(ctx, k, w.cfg.Budget.Conversation()); err != nil {
			return err
		}
		part.put(st)
	}
	if !holdsPlaceholder(st, sum.SummaryID) {
		if sum.Pressure > st.Header.Pressures {
			return fmt.Errorf("%w: %s (pressure %d, session at %d)", errNotNamedYet, sum.SummaryID, sum.Pressure, st.Header.Pressures)
		}
		// Already applied, covered by a later summary, or forgotten: nothing to do.
		return nil
	}
	fillPlaceholder(st, sum.SummaryID, sum.Content, sum.Timestamp, sum.Provenance, sum.Summarizer, sum.Pressure, sum.Usage)
	if err := w.commit(ctx, part, st); err != nil {
		part.drop(k)
		return err
	}
	w.summaries.Add(1)
	w.cfg.Metrics.SummaryApplied()
	return nil
}

// fillPlaceholder gives the placeholder of summary id its text, if the session still waits for
// it, and reports whether it did: live ingest and replay apply summaries through it.
func fillPlaceholder(st *session.State, id, content string, ts time.Time, provenance []string, summarizer string, pressure int, u events.Usage) bool {
	if !holdsPlaceholder(st, id) {
		return false
	}
	st.ApplySummary(summaryEntry(id, content, ts, provenance, summarizer, pressure, u))
	return true
}

// holdsPlaceholder reports whether the session still waits for the text of summary id.
func holdsPlaceholder(st *session.State, id string) bool {
	if e, ok := st.Short.Get(id); ok {
		return e.Content == ""
	}
	return st.CoversPlaceholder(id)
}

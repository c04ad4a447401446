package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/tracing"
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

// applySummaries applies a session's agentmem.summary.v1 events of a batch, in order: the
// placeholder a pressure event named gets the summary's text. Applying the same summary again
// changes nothing. It returns each event's outcome.
func (w *Worker) applySummaries(part *partition, group []worker.Delivery) []error {
	outcomes := make([]error, len(group))
	for i, d := range group {
		outcomes[i] = w.applySummary(part, d.Key.(session.Key), d.Msg)
		if err := outcomes[i]; err != nil && !errors.Is(err, events.ErrInvalid) {
			w.failures.Add(1)
			w.log.Debug().Err(err).Str("subject", d.Msg.Subject()).Msg("summary not applied yet; will retry")
		} else if err != nil {
			w.rejected.Add(1)
		}
	}
	return outcomes
}

func (w *Worker) applySummary(part *partition, k session.Key, m jetstream.Msg) (err error) {
	ev, err := events.Decode(natsMsg(m.Subject(), m.Headers(), m.Data()))
	if err != nil {
		return err
	}
	_, span := w.tracer.Start(events.TraceContext(context.Background(), ev), "agentmem.ingest.summary",
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String("agentmem.tenant", k.Tenant), attribute.String("agentmem.session", k.Session),
			attribute.String("messaging.message.id", ev.ID())))
	defer func() { tracing.End(span, err) }()
	if ev.Type() != events.TypeSummary {
		return fmt.Errorf("%w: unexpected event type %q on a summaries subject", events.ErrInvalid, ev.Type())
	}
	sum, err := events.DecodeData[events.Summary](ev)
	if err != nil {
		return err
	}
	if err := sum.Validate(); err != nil {
		return err
	}
	if sum.Session != k.Session {
		return fmt.Errorf("%w: summary names session %q on the subject of session %q", events.ErrInvalid, sum.Session, k.Session)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
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

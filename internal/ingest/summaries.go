package ingest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmem/agentmem/internal/deadletter"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/tracing"
	"github.com/agentmem/agentmem/pkg/events"
)

// errNotNamedYet: a summary arrived before ingest committed the pressure that asked for it.
var errNotNamedYet = errors.New("ingest: summary for a range not named yet")

// parseSummarySubject reads "<p>.memory.summaries.<tenant>.<session>".
func parseSummarySubject(subject string) (session.Key, error) {
	tenant, sess, err := events.ParseKindSubject(events.KindSummaries, subject)
	return session.Key{Tenant: tenant, Session: sess}, err
}

// applySummaries applies agentmem.summary.v1 events to their sessions: the placeholder a pressure
// event named gets the summary's text. Applying the same summary again changes nothing.
func (w *Worker) applySummaries(part *partition, batch []jetstream.Msg) {
	for _, m := range batch {
		meta, err := m.Metadata()
		if err != nil {
			_ = m.Term()
			continue
		}
		err = w.applySummary(part, m)
		switch {
		case err == nil:
			_ = m.Ack()
		case errors.Is(err, events.ErrInvalid):
			w.deadLetterSummary(m, meta, err.Error())
		default:
			w.failures.Add(1)
			w.cfg.Metrics.TransientFailure("ingest", 1)
			w.log.Debug().Err(err).Str("subject", m.Subject()).Msg("summary not applied yet; will retry")
			_ = m.NakWithDelay(backoff(meta.NumDelivered))
		}
	}
}

func (w *Worker) applySummary(part *partition, m jetstream.Msg) (err error) {
	k, err := parseSummarySubject(m.Subject())
	if err != nil {
		return err
	}
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
	st.ApplySummary(summaryEntry(sum.SummaryID, sum.Content, sum.Timestamp, sum.Provenance, sum.Summarizer, sum.Pressure, sum.Usage))
	if sum.SummaryID == st.Header.SummaryID {
		st.Header.AwaitingSince = time.Time{}
	}
	writes, err := w.store.Commit(ctx, st)
	w.writes.Add(uint64(writes))
	if err != nil {
		part.drop(k)
		return err
	}
	w.commits.Add(1)
	w.summaries.Add(1)
	w.cfg.Metrics.SummaryApplied()
	w.idle.touch(st.Header)
	return nil
}

// holdsPlaceholder reports whether the session still waits for the text of summary id.
func holdsPlaceholder(st *session.State, id string) bool {
	if e, ok := st.Short.Get(id); ok {
		return e.Content == ""
	}
	return st.CoversPlaceholder(id)
}

func (w *Worker) deadLetterSummary(m jetstream.Msg, meta *jetstream.MsgMetadata, reason string) {
	k, _ := parseSummarySubject(m.Subject())
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	err := w.dlq.Write(ctx, deadletter.Record{
		Msg: natsMsg(m.Subject(), m.Headers(), m.Data()), Tenant: k.Tenant, Session: k.Session,
		Stream: meta.Stream, Seq: meta.Sequence.Stream, Consumer: meta.Consumer, Delivered: meta.NumDelivered, Reason: reason,
		Class: deadletter.ClassInvalid,
	})
	if err != nil {
		_ = m.NakWithDelay(backoff(meta.NumDelivered))
		return
	}
	w.rejected.Add(1)
	_ = m.TermWithReason(reason)
}

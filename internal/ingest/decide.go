package ingest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmem/agentmem/internal/deadletter"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/tracing"
	"github.com/agentmem/agentmem/internal/worker"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// message is a turns-stream message as ingest decides on it, whether it was delivered by the
// consumer or read back from the stream to fill a gap.
type message struct {
	subject   string
	header    nats.Header
	data      []byte
	seq       uint64
	stored    time.Time
	consumer  string
	delivered uint64
	addr      events.TurnAddress
}

func natsMsg(subject string, h nats.Header, data []byte) *nats.Msg {
	return &nats.Msg{Subject: subject, Header: h, Data: data}
}

// effects are what a session's batch must publish before it is committed.
type effects struct {
	msgs []*nats.Msg
	// ended are the announcements of the session ends the batch applied (the extractors'
	// triggers), published with the pressure events; a replay extracts by itself instead.
	ended   []*nats.Msg
	letters []deadletter.Record
	// spans are the batch's spans, ended once it is committed (or failed); trace is the
	// context of the turn being decided, the parent of its pressure span.
	spans []trace.Span
	trace context.Context
	// For the metrics, recorded once the session is committed: the turns, session ends,
	// duplicates and pressure events of the batch.
	turns, ends, idleEnds, dups, pressures int
}

// processSession decides a session's messages of one batch, in order, and commits the session.
// It returns each message's outcome: nil, or worker.Recorded for a rejected message (its dead
// letter is written before the commit that records the rejection); or the error that leaves
// every message of the batch for redelivery, when nothing was committed.
func (w *Worker) processSession(ctx context.Context, part *partition, items []worker.Delivery[events.TurnAddress]) (outcomes []error, err error) {
	addr := items[0].Key
	k := session.Key{Tenant: addr.Tenant, Session: addr.Session}
	fx := &effects{trace: ctx}
	fail := func(err error) ([]error, error) {
		for _, s := range fx.spans {
			tracing.End(s, err)
		}
		w.failures.Add(1)
		part.drop(k)
		lvl := w.log.Warn()
		if errors.Is(err, session.ErrConflict) {
			w.conflicts.Add(1)
			w.cfg.Metrics.Conflict()
			lvl = w.log.Info()
		}
		lvl.Err(err).Str("tenant", k.Tenant).Str("session", k.Session).Int("messages", len(items)).
			Msg("session batch not applied; left for redelivery")
		return nil, err
	}
	st := part.get(k)
	if st == nil {
		if st, err = w.store.Load(ctx, k, w.cfg.Budget.Conversation()); err != nil {
			return fail(err)
		}
		part.put(st)
	}
	st.PlaceIn(addr.Partition)
	stored := items[0].Msg.Subject()
	before := st.Header.LastSeq
	outcomes = make([]error, len(items))
	prevNew, prevRun := false, uint64(0)
	for i, it := range items {
		seq := it.Meta.Sequence.Stream
		if seq <= st.Header.LastSeq {
			prevNew = false
			continue
		}
		// First deliveries of one consumer that this process received one after the other (the
		// same delivery run: consecutive consumer sequences) have nothing of their filter between
		// them. Otherwise, and when the partition's deliveries went to another member in between
		// (a hand-over, a pin that moved), ask the stream for an undecided earlier message of this
		// session.
		if !prevNew || it.Meta.NumDelivered != 1 || it.Run != prevRun {
			if err := w.fillGap(ctx, st, stored, seq, it, addr, fx); err != nil {
				return fail(err)
			}
		}
		if bad := w.decide(st, message{
			subject: it.Msg.Subject(), header: it.Msg.Headers(), data: it.Msg.Data(), seq: seq,
			stored: it.Meta.Timestamp, consumer: it.Meta.Consumer, delivered: it.Meta.NumDelivered, addr: addr,
		}, fx); bad != "" {
			outcomes[i] = worker.Recorded(bad)
		}
		prevNew, prevRun = it.Meta.NumDelivered == 1, it.Run
	}
	if st.Header.LastSeq != before || st.Uncommitted() > 0 {
		if err := w.publish(ctx, fx); err != nil {
			return fail(err)
		}
		if err := w.commit(ctx, part, st); err != nil {
			return fail(err)
		}
		w.record(fx)
	}
	for _, s := range fx.spans {
		s.End()
	}
	return outcomes, nil
}

// commit writes the session: first its entry in the user's session index (the long-term
// store lists every session a user owns: the archive source and forget start from it;
// idempotent, written once per session and process), then the session itself. Live ingest and
// replay commit through it.
func (w *Worker) commit(ctx context.Context, part *partition, st *session.State) error {
	if h := st.Header; h.User != "" && (st.Revision() == 0 || part == nil || !part.indexed(st.Key)) {
		if err := w.long.TouchSession(ctx, st.Key.Tenant, h.User, st.Key.Session, h.FirstTurnAt, h.LastTurnAt); err != nil {
			return err
		}
		if part != nil {
			part.markIndexed(st.Key)
		}
	}
	writes, err := w.store.Commit(ctx, st)
	w.writes.Add(uint64(writes))
	if err != nil {
		return err
	}
	w.commits.Add(1)
	w.idle.touch(st.Header)
	return nil
}

// record counts a committed batch of one session in the metrics.
func (w *Worker) record(fx *effects) {
	m := w.cfg.Metrics
	if m == nil {
		return
	}
	m.Applied(fx.turns, fx.ends)
	m.Duplicates(fx.dups)
	m.Pressure(fx.pressures)
	for range fx.ends - fx.idleEnds {
		m.SessionEnded("event")
	}
	for range fx.idleEnds {
		m.SessionEnded("idle")
	}
}

// fillGap applies, in order, every message of the session stored before seq that was not
// decided yet.
func (w *Worker) fillGap(ctx context.Context, st *session.State, stored string, seq uint64, it worker.Delivery[events.TurnAddress], addr events.TurnAddress, fx *effects) error {
	next, err := w.reader.Next(ctx, stored, st.Header.LastSeq+1)
	if err != nil {
		return err
	}
	if next == nil || next.Sequence >= seq {
		return nil
	}
	w.log.Debug().Str("subject", stored).Uint64("from", next.Sequence).Uint64("to", seq-1).Msg("applying undecided earlier messages first")
	return w.reader.Scan(ctx, stored, next.Sequence, seq-1, func(m *jetstream.RawStreamMsg) error {
		w.messages.Add(1)
		w.filled.Add(1)
		w.decide(st, message{
			subject: m.Subject, header: m.Header, data: m.Data, seq: m.Sequence, stored: m.Time,
			consumer: it.Meta.Consumer, delivered: 0, addr: addr,
		}, fx)
		return nil
	})
}

func (w *Worker) publish(ctx context.Context, fx *effects) error {
	for _, m := range append(fx.msgs, fx.ended...) {
		if _, err := w.js.PublishMsg(ctx, m); err != nil {
			return fmt.Errorf("publishing %s: %w", m.Subject, err)
		}
	}
	for _, r := range fx.letters {
		if err := w.dlq.Write(ctx, r); err != nil {
			return err
		}
	}
	return nil
}

// decide applies one message to the session, or rejects it. It returns the reason when the
// message is bad input ("" otherwise). It never fails: every outcome is recorded.
func (w *Worker) decide(st *session.State, m message, fx *effects) (bad string) {
	defer st.Advance(m.seq, m.stored)
	// A panic while deciding one message dead-letters that message: retrying would only panic
	// again and hold up the session's later turns.
	var p *worker.PanicError
	if err := worker.Protect(func() error { bad = w.apply(st, m, fx); return nil }); errors.As(err, &p) {
		bad = fmt.Sprintf("internal error while applying the message: %v", p.Value)
		w.reject(st, m, "", bad, deadletter.ClassInternal, fx)
	}
	return bad
}

// apply decides one message (decide), without its recovery.
func (w *Worker) apply(st *session.State, m message, fx *effects) (bad string) {
	ev, err := events.Decode(natsMsg(m.subject, m.header, m.data))
	if err != nil {
		return w.reject(st, m, m.header.Get("ce-id"), err.Error(), deadletter.ClassMalformed, fx)
	}
	id := ev.ID()
	if ev.Type() == events.TypeTurn || ev.Type() == events.TypeSessionEnded {
		tctx, span := w.tracer.Start(events.TraceContext(context.Background(), ev), "agentmem.ingest."+spanName(ev.Type()),
			trace.WithSpanKind(trace.SpanKindConsumer),
			trace.WithAttributes(attribute.String("agentmem.tenant", m.addr.Tenant), attribute.String("agentmem.session", m.addr.Session),
				attribute.String("messaging.message.id", id), attribute.Int64("messaging.nats.stream_seq", int64(m.seq)),
				attribute.Int("agentmem.partition", m.addr.Partition)))
		fx.spans = append(fx.spans, span)
		fx.trace = tctx
		defer func() {
			if bad != "" {
				span.SetAttributes(attribute.String("agentmem.dead_letter.reason", bad))
				span.SetStatus(codes.Error, "dead-lettered")
			}
		}()
	}
	if named, ok := events.NamedTenant(ev.Extensions(), ev.Data()); ok && named != m.addr.Tenant {
		return w.reject(st, m, id, fmt.Sprintf("the event names tenant %q on the subject of tenant %q: the tenant is the subject's", named, m.addr.Tenant), deadletter.ClassTenantMismatch, fx)
	}
	want := events.MsgID(m.addr.Tenant, m.addr.Session, id)
	if got := m.header.Get(events.HeaderMsgID); got != "" && got != want {
		return w.reject(st, m, id, fmt.Sprintf("Nats-Msg-Id %q does not match the subject and ce-id: want %q", got, want), deadletter.ClassMsgID, fx)
	}
	if st.Seen(id) {
		w.duplicates.Add(1)
		fx.dups++
		trace.SpanFromContext(fx.trace).SetAttributes(attribute.Bool("agentmem.duplicate", true))
		return ""
	}
	at := events.StoredTime(ev, m.stored)
	switch ev.Type() {
	case events.TypeTurn:
		turn, err := events.DecodeTurn(ev)
		if err != nil {
			return w.reject(st, m, id, err.Error(), deadletter.ClassInvalid, fx)
		}
		if err := turn.Validate(); err != nil {
			return w.reject(st, m, id, err.Error(), deadletter.ClassInvalid, fx)
		}
		maxBytes := w.cfg.MaxContentBytes
		if l := w.cfg.Limits.For(m.addr.Tenant); l.MaxTurnBytes > 0 {
			maxBytes = l.MaxTurnBytes
		}
		if n := len(turn.Content); n > maxBytes {
			return w.reject(st, m, id, fmt.Sprintf("content is %d bytes; the limit is %d", n, maxBytes), deadletter.ClassTooLarge, fx)
		}
		if !w.cfg.Limits.AllowTurn(m.addr.Tenant, m.stored) {
			l := w.cfg.Limits.For(m.addr.Tenant)
			return w.reject(st, m, id, fmt.Sprintf("rate limit: tenant %q sends more than %g turns/s (burst %d)", m.addr.Tenant, l.TurnsPerSecond, max(l.TurnBurst, 1)), deadletter.ClassRateLimited, fx)
		}
		if reason := ownerMismatch(st, turn.User, true); reason != "" {
			return w.reject(st, m, id, reason, deadletter.ClassOwner, fx)
		}
		e := memory.Entry{
			ID: id, Type: memory.TypeForRole(turn.Role), Content: turn.Content, Timestamp: at,
			Tokens: w.counter.Count(turn.Content), Role: turn.Role, Seq: m.seq,
		}
		st.Add(e, w.cfg.Budget.Conversation(), turn.User)
		w.applied.Add(1)
		fx.turns++
		trace.SpanFromContext(fx.trace).SetAttributes(attribute.Int("agentmem.tokens", e.Tokens),
			attribute.Int("agentmem.short_term_tokens", st.Short.Tokens()))
		w.checkPressure(st, e, m.stored, fx)
	case events.TypeSessionEnded:
		end, err := events.DecodeData[events.SessionEnded](ev)
		if err != nil {
			return w.reject(st, m, id, err.Error(), deadletter.ClassInvalid, fx)
		}
		if reason := ownerMismatch(st, end.User, false); reason != "" {
			return w.reject(st, m, id, reason, deadletter.ClassOwner, fx)
		}
		st.End(id, m.seq, at)
		w.applied.Add(1)
		fx.ends++
		if msg, err := endedMsg(fx.trace, m.addr, id, m.seq, at, w.cfg.Source); err == nil {
			fx.ended = append(fx.ended, msg)
		} else {
			w.log.Error().Err(err).Str("tenant", m.addr.Tenant).Str("session", m.addr.Session).Msg("session end not announced")
		}
		if strings.HasPrefix(id, idleEndPrefix) {
			fx.idleEnds++
		}
	default:
		return w.reject(st, m, id, fmt.Sprintf("unknown event type %q: expected %s or %s", ev.Type(), events.TypeTurn, events.TypeSessionEnded), deadletter.ClassUnknownType, fx)
	}
	return ""
}

// endedMsg is the announcement that the session end id, stored at seq, was applied: published
// before the batch is committed, with a Nats-Msg-Id of its own (events.EndedMsgID), so a batch
// decided again after a crash or a lost commit race announces it once within the duplicate window
// (and the extractors' watermark makes a later copy a no-op).
func endedMsg(ctx context.Context, addr events.TurnAddress, id string, seq uint64, at time.Time, source string) (*nats.Msg, error) {
	msgID := events.EndedMsgID(addr.Tenant, addr.Session, id)
	msg, err := events.NewMsg(ctx, addr.Tenant, addr.Session, msgID, events.TypeEndApplied, source, at, events.EndApplied{Seq: seq, End: id})
	if err != nil {
		return nil, err
	}
	msg.Header.Set(events.HeaderMsgID, msgID)
	return msg, nil
}

// spanName names the span of applying an event type.
func spanName(typ string) string {
	if typ == events.TypeSessionEnded {
		return "session_end"
	}
	return "turn"
}

// ownerMismatch says why user cannot write to the session, or "".
func ownerMismatch(st *session.State, user string, turn bool) string {
	owner := st.Header.User
	switch {
	case user != "" && events.ValidateToken("user", user) != nil:
		return events.ValidateToken("user", user).Error()
	case owner == "" && user == "" && turn:
		return fmt.Sprintf("user is required on the first turn of session %q", st.Key.Session)
	case owner != "" && user != "" && user != owner:
		return fmt.Sprintf("session %q belongs to user %q; the event names user %q", st.Key.Session, owner, user)
	}
	return ""
}

// reject records a bad message in the session and queues its dead letter.
func (w *Worker) reject(st *session.State, m message, id, reason, class string, fx *effects) string {
	st.Reject(m.seq, id, reason)
	w.rejected.Add(1)
	fx.letters = append(fx.letters, deadletter.Record{
		Msg: natsMsg(m.subject, m.header, m.data), Subject: m.addr.Subject(),
		Tenant: m.addr.Tenant, Session: m.addr.Session,
		Stream: w.cfg.Topology.TurnsStream(), Seq: m.seq, Consumer: m.consumer, Delivered: m.delivered,
		Reason: reason, Class: class,
	})
	w.log.Debug().Str("tenant", m.addr.Tenant).Str("session", m.addr.Session).Uint64("stream_seq", m.seq).
		Str("reason", reason).Msg("turn rejected")
	return reason
}

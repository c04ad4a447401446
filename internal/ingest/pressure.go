package ingest

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// Pressure, deterministically.
//
// A crossing is a turn that brings the kept tokens from below the pressure threshold (80 % of
// the budget) to at or above it. At a crossing ingest names the entries to compress: the
// pending (evicted) entries and every kept entry before the 3 most recent rounds (a round starts
// at a user turn), the previous summary first because it is the oldest entry. If the recent
// rounds alone would keep the session at the threshold, the oldest of them are named too, down
// to the last entry. The named entries are replaced at once by a placeholder SUMMARY entry
// accounted at SummaryTokens, whose id is derived from the turn ids it covers; the compressor's
// summary later fills in its text. From then on the accounting does not depend on when (or
// whether) the compressor answers, so the same stream always gives the same pressure events.
// While the session stays at or above the threshold after naming (nothing more could be
// named), no further pressure is emitted until it drops below and crosses again; above 100 %
// the oldest entries are evicted into the pending list and named at the next crossing.

// selection is what a crossing names.
type selection struct {
	ids      []string // named entry ids, oldest first
	turns    int      // how many of them are turns (not summaries)
	firstSeq uint64
	lastSeq  uint64
	newest   time.Time
}

// selectRange picks the entries to compress when the session crosses threshold.
func selectRange(short *memory.ShortTerm, threshold, summaryTokens int) selection {
	kept, pending := short.Entries(), short.Pending()
	first := 0
	for first < len(kept) && kept[first].Type == memory.Summary {
		first++
	}
	// Round starts among the kept turns; entries before the first user turn form a round too.
	var starts []int
	for i := first; i < len(kept); i++ {
		if i == first || kept[i].Role == "user" {
			starts = append(starts, i)
		}
	}
	cut, ri := first, 0
	if len(starts) > 3 {
		ri = len(starts) - 3
		cut = starts[ri]
	}
	recent := 0
	for _, e := range kept[cut:] {
		recent += e.Tokens
	}
	for summaryTokens+recent >= threshold && ri+1 < len(starts) {
		ri++
		for _, e := range kept[cut:starts[ri]] {
			recent -= e.Tokens
		}
		cut = starts[ri]
	}
	for summaryTokens+recent >= threshold && cut < len(kept)-1 {
		recent -= kept[cut].Tokens
		cut++
	}
	var sel selection
	add := func(e memory.Entry) {
		sel.ids = append(sel.ids, e.ID)
		if e.Type == memory.Summary {
			return
		}
		sel.turns++
		if sel.firstSeq == 0 || e.Seq < sel.firstSeq {
			sel.firstSeq = e.Seq
		}
		sel.lastSeq = max(sel.lastSeq, e.Seq)
		if e.Timestamp.After(sel.newest) {
			sel.newest = e.Timestamp
		}
	}
	for _, e := range pending {
		add(e)
	}
	for _, e := range kept[:cut] {
		add(e)
	}
	return sel
}

// checkPressure runs after a turn was applied: at a crossing it names the range to compress,
// replaces it by a placeholder and queues the pressure event.
func (w *Worker) checkPressure(st *session.State, trigger memory.Entry, storedAt time.Time, fx *effects) {
	threshold := w.cfg.Budget.Threshold()
	tokens := st.Short.Tokens()
	if tokens < threshold {
		st.SetAbove(false)
		return
	}
	if st.Header.Above {
		return
	}
	sel := selectRange(st.Short, threshold, w.cfg.SummaryTokens)
	if sel.turns == 0 {
		st.SetAbove(true)
		return
	}
	number := st.Header.Pressures + 1
	provenance := st.Provenance(sel.ids)
	sumID := session.SummaryID(st.Key, provenance)
	placeholder := memory.Entry{
		ID: sumID, Type: memory.Summary, Timestamp: sel.newest, Tokens: w.cfg.SummaryTokens,
		Metadata: map[string]any{"status": "pending", "pressure": number},
	}
	if _, err := st.Name(sel.ids, placeholder); err != nil {
		// Every id came from the session itself; failing here is a bug, not bad input.
		w.log.Error().Err(err).Str("session", st.Key.Session).Msg("naming the compression range")
		return
	}
	st.SetAbove(st.Short.Tokens() >= threshold)
	st.AwaitSummary(storedAt)
	budget := st.Short.Budget()
	body := events.Pressure{
		Session: st.Key.Session, User: st.Header.User, Tokens: tokens, Budget: budget,
		Ratio: float64(tokens) / float64(budget), EntryIDs: sel.ids, FirstSeq: sel.firstSeq, LastSeq: sel.lastSeq,
		Number: number, SummaryID: sumID, SummaryTokens: w.cfg.SummaryTokens, Provenance: provenance,
	}
	pctx, span := w.tracer.Start(fx.trace, "agentmem.ingest.pressure", trace.WithSpanKind(trace.SpanKindProducer),
		trace.WithAttributes(attribute.Int("agentmem.tokens", tokens), attribute.Int("agentmem.budget", budget),
			attribute.Float64("agentmem.ratio", body.Ratio), attribute.Int("agentmem.pressure", number),
			attribute.String("agentmem.summary_id", sumID), attribute.Int("agentmem.entries", len(sel.ids))))
	fx.spans = append(fx.spans, span)
	msg, err := w.pressureMsg(pctx, st.Key, fmt.Sprintf("pressure-%d-%s", number, sumID), trigger.Timestamp, body)
	if err != nil {
		w.log.Error().Err(err).Msg("building pressure event")
		return
	}
	fx.msgs = append(fx.msgs, msg)
	fx.pressures++
	w.pressures.Add(1)
}

func (w *Worker) pressureMsg(ctx context.Context, k session.Key, id string, at time.Time, body events.Pressure) (*nats.Msg, error) {
	return events.NewMsg(ctx, k.Tenant, k.Session, id, events.TypePressure, w.cfg.Source, at, body)
}

// repressure re-emits the pressure event of a session's latest named range whose summary has not
// arrived (the compressor dead-lettered it after its retries, say), under a new deterministic id
// (the k-th re-emission), so that the session is never left waiting. The compressor handles it
// like the original: same summary id, and a summary that exists meanwhile is only republished.
func (w *Worker) repressure(ctx context.Context, k session.Key, attempt int) error {
	st, err := w.store.Load(ctx, k, w.cfg.Budget.Conversation())
	if err != nil {
		return err
	}
	h := st.Header
	if h.AwaitingSince.IsZero() || h.SummaryID == "" || !holdsPlaceholder(st, h.SummaryID) {
		return nil
	}
	parts := st.Covered(h.SummaryID)
	if len(parts) == 0 {
		return nil
	}
	body := events.Pressure{
		Session: k.Session, User: h.User, Tokens: h.Tokens, Budget: h.Budget, Ratio: h.Ratio(),
		Number: h.Pressures, SummaryID: h.SummaryID, SummaryTokens: w.cfg.SummaryTokens,
	}
	var newest time.Time
	for _, e := range parts {
		body.EntryIDs = append(body.EntryIDs, e.ID)
		if e.Type == memory.Summary {
			continue
		}
		if body.FirstSeq == 0 || e.Seq < body.FirstSeq {
			body.FirstSeq = e.Seq
		}
		body.LastSeq = max(body.LastSeq, e.Seq)
		if e.Timestamp.After(newest) {
			newest = e.Timestamp
		}
	}
	if ph, ok := st.Short.Get(h.SummaryID); ok {
		body.Provenance = ph.Provenance
	} else {
		body.Provenance = st.Provenance(body.EntryIDs)
	}
	id := fmt.Sprintf("pressure-%d-%s-r%d", h.Pressures, h.SummaryID, attempt)
	msg, err := w.pressureMsg(ctx, k, id, newest, body)
	if err != nil {
		return err
	}
	if _, err := w.js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("re-emitting pressure of %s: %w", k, err)
	}
	w.pressures.Add(1)
	w.cfg.Metrics.Pressure(1)
	w.log.Warn().Str("tenant", k.Tenant).Str("session", k.Session).Str("summary_id", h.SummaryID).Int("attempt", attempt).
		Time("awaiting_since", h.AwaitingSince).Msg("summary still missing; pressure re-emitted")
	return nil
}

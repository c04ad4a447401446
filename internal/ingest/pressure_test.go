package ingest_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// smallBudget is 1,000 conversation tokens: pressure at 800, named ranges accounted at 100.
func smallBudget() memory.Budget {
	b := memory.DefaultBudget()
	b.ContextWindow = 1000 + b.System + b.Tools + b.Response
	return b
}

// mixedTurns builds n turns alternating user and assistant, in English and Chinese, with a long
// tool result every 8th turn.
func mixedTurns(prefix string, n int) []turn {
	var out []turn
	base := time.Date(2026, 11, 28, 8, 0, 0, 0, time.UTC)
	for i := range n {
		tr := turn{id: fmt.Sprintf("%s-t%02d", prefix, i), user: "u1", at: base.Add(time.Duration(i) * time.Minute)}
		switch {
		case i%16 == 15:
			tr.role = "tool"
			tr.content = "$ go test -v ./...\n" + strings.Repeat("=== RUN TestIngest\n--- PASS: TestIngest (0.01s)\n", 80)
		case i%8 == 7:
			tr.role = "tool"
			tr.content = "$ go test ./...\n" + strings.Repeat("ok  \tgithub.com/acme/pkg/module\t0.012s\n", 55)
		case i%2 == 0 && i%3 == 0:
			tr.role = "user"
			tr.content = fmt.Sprintf("第%d轮：我们的项目用 Go 和 NATS，我最喜欢的编程语言是 Go。请帮我看看这个测试为什么失败。", i)
		case i%2 == 0:
			tr.role = "user"
			tr.content = fmt.Sprintf("Round %d: I love writing Go. Can you check why the integration test fails on the second run?", i)
		default:
			tr.role = "assistant"
			tr.content = fmt.Sprintf("Answer %d: the consumer is not drained on shutdown, so buffered messages are redelivered after AckWait and applied twice.", i)
		}
		out = append(out, tr)
	}
	return out
}

// refModel is the pressure rule of DESIGN.md written out plainly, as the test's oracle.
type refModel struct {
	budget, threshold, summary int
	kept, pending              []refEntry
	above                      bool
	n                          int
	evicted                    int
}

type refEntry struct {
	id, role string
	tokens   int
	summary  bool
}

type refPressure struct {
	number int
	tokens int
	ids    []string
}

func (m *refModel) sum(es []refEntry) int {
	t := 0
	for _, e := range es {
		t += e.tokens
	}
	return t
}

func (m *refModel) add(e refEntry) *refPressure {
	m.kept = append(m.kept, e)
	for m.sum(m.kept) > m.budget && len(m.kept) > 1 {
		m.pending = append(m.pending, m.kept[0])
		m.kept = m.kept[1:]
		m.evicted++
	}
	tokens := m.sum(m.kept)
	if tokens < m.threshold {
		m.above = false
		return nil
	}
	if m.above {
		return nil
	}
	// Rounds of kept turns: the leading entries before the first user turn count as one.
	first := 0
	for first < len(m.kept) && m.kept[first].summary {
		first++
	}
	var starts []int
	for i := first; i < len(m.kept); i++ {
		if i == first || m.kept[i].role == "user" {
			starts = append(starts, i)
		}
	}
	keepFrom := first
	r := 0
	if len(starts) > 3 {
		r = len(starts) - 3
		keepFrom = starts[r]
	}
	for m.summary+m.sum(m.kept[keepFrom:]) >= m.threshold && r+1 < len(starts) {
		r++
		keepFrom = starts[r]
	}
	for m.summary+m.sum(m.kept[keepFrom:]) >= m.threshold && keepFrom < len(m.kept)-1 {
		keepFrom++
	}
	named := append(slices.Clone(m.pending), m.kept[:keepFrom]...)
	turns := 0
	for _, e := range named {
		if !e.summary {
			turns++
		}
	}
	if turns == 0 {
		m.above = true
		return nil
	}
	m.n++
	p := &refPressure{number: m.n, tokens: tokens}
	for _, e := range named {
		p.ids = append(p.ids, e.id)
	}
	ph := refEntry{id: fmt.Sprintf("summary-%d", m.n), tokens: m.summary, summary: true}
	m.pending = nil
	m.kept = append([]refEntry{ph}, m.kept[keepFrom:]...)
	for m.sum(m.kept) > m.budget && len(m.kept) > 1 {
		m.pending = append(m.pending, m.kept[0])
		m.kept = m.kept[1:]
	}
	m.above = m.sum(m.kept) >= m.threshold
	return p
}

func TestPressureOncePerCrossing(t *testing.T) {
	budget := smallBudget()
	h := newHarness(t, ingest.Config{Budget: budget, IdleTimeout: -1})
	const tenant, sess = "acme", "s1"
	sub, err := h.env.NC.SubscribeSync("memory.pressure." + tenant + "." + sess)
	if err != nil {
		t.Fatal(err)
	}
	ref := &refModel{budget: budget.Conversation(), threshold: budget.Threshold(), summary: budget.Conversation() / 10}
	var want []refPressure
	seqOf := map[string]uint64{}
	for _, tr := range mixedTurns("p", 40) {
		ack := h.publish(tenant, sess, tr)
		seqOf[tr.id] = ack.Sequence
		hd := h.waitDecided(tenant, sess, ack.Sequence)
		if hd.Tokens > hd.Budget && hd.Kept > 1 {
			t.Fatalf("after %s: kept tokens %d exceed the budget %d with %d entries kept", tr.id, hd.Tokens, hd.Budget, hd.Kept)
		}
		if p := ref.add(refEntry{id: tr.id, role: tr.role, tokens: memory.Estimate(tr.content)}); p != nil {
			want = append(want, *p)
		}
	}
	if len(want) < 2 {
		t.Fatalf("the scenario should cross the threshold at least twice; the model saw %d crossings", len(want))
	}
	t.Logf("%d crossings, %d evictions", len(want), ref.evicted)
	if ref.evicted == 0 {
		t.Fatal("the scenario should evict at least once above 100 %")
	}
	var got []events.Pressure
	for {
		m, err := sub.NextMsg(2 * time.Second)
		if err != nil {
			break
		}
		ev, err := events.Decode(m)
		if err != nil {
			t.Fatalf("pressure event does not decode: %v", err)
		}
		if ev.Type() != events.TypePressure {
			t.Fatalf("type %q", ev.Type())
		}
		p, err := events.DecodeData[events.Pressure](ev)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, p)
		if len(got) == len(want) {
			// Nothing more may arrive: wait briefly for an unexpected extra event.
			if extra, err := sub.NextMsg(300 * time.Millisecond); err == nil {
				b, _ := json.Marshal(extra.Data)
				t.Fatalf("more pressure events than crossings: %s", b)
			}
			break
		}
	}
	if len(got) != len(want) {
		t.Fatalf("got %d pressure events, want %d (one per crossing)", len(got), len(want))
	}
	var prevSummary string
	for i, p := range got {
		w := want[i]
		if p.Number != w.number || p.Tokens != w.tokens || p.Budget != budget.Conversation() || p.User != "u1" || p.Session != sess {
			t.Errorf("pressure %d: number=%d tokens=%d budget=%d user=%q; want number=%d tokens=%d budget=%d",
				i+1, p.Number, p.Tokens, p.Budget, p.User, w.number, w.tokens, budget.Conversation())
		}
		if p.Tokens < budget.Threshold() {
			t.Errorf("pressure %d below the threshold: %d < %d", i+1, p.Tokens, budget.Threshold())
		}
		if r := float64(p.Tokens) / float64(p.Budget); p.Ratio != r {
			t.Errorf("pressure %d ratio %v, want %v", i+1, p.Ratio, r)
		}
		wantIDs := slices.Clone(w.ids)
		if prevSummary != "" {
			if len(wantIDs) == 0 || !strings.HasPrefix(wantIDs[0], "summary-") {
				t.Fatalf("model: pressure %d does not start with the previous summary: %v", i+1, wantIDs)
			}
			wantIDs[0] = prevSummary
		}
		if !slices.Equal(p.EntryIDs, wantIDs) {
			t.Errorf("pressure %d names %v, want %v", i+1, p.EntryIDs, wantIDs)
		}
		var first, last uint64
		for _, id := range p.EntryIDs {
			if s, ok := seqOf[id]; ok {
				if first == 0 || s < first {
					first = s
				}
				last = max(last, s)
			}
		}
		if p.FirstSeq != first || p.LastSeq != last {
			t.Errorf("pressure %d seqs %d-%d, want %d-%d", i+1, p.FirstSeq, p.LastSeq, first, last)
		}
		if p.SummaryID == "" || p.SummaryTokens != budget.Conversation()/10 {
			t.Errorf("pressure %d summary id %q tokens %d", i+1, p.SummaryID, p.SummaryTokens)
		}
		prevSummary = p.SummaryID
	}
	// Nothing named is lost: the session still accounts for every turn, in order.
	st := h.load(tenant, sess)
	var all []string
	for _, tr := range mixedTurns("p", 40) {
		all = append(all, tr.id)
	}
	if ids := turnIDs(st); !slices.Equal(ids, all) {
		t.Errorf("session turns %v\nwant %v", ids, all)
	}
}

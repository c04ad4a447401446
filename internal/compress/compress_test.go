package compress_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/compress"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/llm"
	"github.com/agentmem/agentmem/internal/llm/llmtest"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/usage"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// pipeline is ingest plus a compressor on a real in-process JetStream.
type pipeline struct {
	t       testing.TB
	env     *brokertest.Env
	topo    events.Topology
	budget  memory.Budget
	ingest  *ingest.Worker
	comp    *compress.Worker
	stopAll []func()
}

func smallBudget(tokens int) memory.Budget {
	b := memory.DefaultBudget()
	b.ContextWindow = tokens + b.System + b.Tools + b.Response
	return b
}

func newPipeline(t testing.TB, budget memory.Budget, chat compress.Chat) *pipeline {
	return newPipelineWith(t, ingest.Config{Budget: budget, IdleTimeout: -1}, chat)
}

func newPipelineWith(t testing.TB, icfg ingest.Config, chat compress.Chat) *pipeline {
	t.Helper()
	return newPipelineCompressing(t, icfg, compress.Config{Backoff: func(uint64) time.Duration { return 20 * time.Millisecond }}, chat)
}

// newPipelineCompressing starts ingest configured by icfg and a compressor configured by ccfg
// using chat (their Topology is the pipeline's).
func newPipelineCompressing(t testing.TB, icfg ingest.Config, ccfg compress.Config, chat compress.Chat) *pipeline {
	budget := icfg.Budget
	t.Helper()
	env := brokertest.Start(t)
	topo := events.DefaultTopology()
	topo.Partitions = 2
	ctx := context.Background()
	if err := topo.Ensure(ctx, env.JS); err != nil {
		t.Fatal(err)
	}
	p := &pipeline{t: t, env: env, topo: topo, budget: budget}
	icfg.Topology = topo
	in, err := ingest.New(ctx, icfg, jsOf(t, env), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	p.ingest = in
	p.run(in.Run)
	p.startCompressor(ccfg, chat)
	return p
}

func jsOf(t testing.TB, env *brokertest.Env) jetstream.JetStream {
	js, err := jetstream.New(env.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func (p *pipeline) startCompressor(cfg compress.Config, chat compress.Chat) {
	model := ""
	if chat != nil {
		model = "test-model"
	}
	cfg.Topology = p.topo
	c, err := compress.New(context.Background(), cfg, jsOf(p.t, p.env), chat, model, zerolog.Nop())
	if err != nil {
		p.t.Fatal(err)
	}
	p.comp = c
	p.run(c.Run)
}

func (p *pipeline) run(fn func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			p.t.Errorf("worker: %v", err)
		}
	}
	p.stopAll = append(p.stopAll, stop)
	p.t.Cleanup(stop)
}

// publish sends a conversation turn and returns its sequence.
func (p *pipeline) publish(sess, id, role, content string, at time.Time) uint64 {
	p.t.Helper()
	ev, err := events.NewEvent(id, events.TypeTurn, "test", at, events.Turn{Role: role, Content: content, User: "alice"})
	if err != nil {
		p.t.Fatal(err)
	}
	m, err := events.BinaryMsg("memory.turns.acme."+sess, ev)
	if err != nil {
		p.t.Fatal(err)
	}
	m.Header.Set(events.HeaderMsgID, events.MsgID("acme", sess, id))
	ack, err := p.env.JS.PublishMsg(context.Background(), m)
	if err != nil {
		p.t.Fatal(err)
	}
	return ack.Sequence
}

func (p *pipeline) state(sess string) *session.State {
	p.t.Helper()
	store, err := session.NewStore(context.Background(), p.env.JS, p.topo)
	if err != nil {
		p.t.Fatal(err)
	}
	st, err := store.Load(context.Background(), session.Key{Tenant: "acme", Session: sess}, 0)
	if err != nil {
		p.t.Fatal(err)
	}
	return st
}

// summarized waits until the session holds a summary with text and returns the state.
func (p *pipeline) summarized(sess string, timeout time.Duration) *session.State {
	p.t.Helper()
	var st *session.State
	brokertest.CheckFor(p.t, timeout, 20*time.Millisecond, func() error {
		st = p.state(sess)
		for _, e := range st.Short.Entries() {
			if e.Type == memory.Summary && e.Content != "" {
				return nil
			}
		}
		return fmt.Errorf("no summary applied yet (pressures %d, summaries %d)", st.Header.Pressures, st.Header.Summaries)
	})
	return st
}

// pressure reads the first pressure event of a session from the pressure stream.
func (p *pipeline) pressures(sess string) []events.Pressure {
	p.t.Helper()
	ctx := context.Background()
	s, err := p.env.JS.Stream(ctx, p.topo.PressureStream())
	if err != nil {
		p.t.Fatal(err)
	}
	var out []events.Pressure
	for seq := uint64(1); ; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			break
		}
		if m.Subject != "memory.pressure.acme."+sess {
			continue
		}
		ev, err := events.Decode(&nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data})
		if err != nil {
			p.t.Fatal(err)
		}
		pr, err := events.DecodeData[events.Pressure](ev)
		if err != nil {
			p.t.Fatal(err)
		}
		out = append(out, pr)
	}
	return out
}

var day = time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)

// converse publishes n turns alternating user and assistant, ~60 tokens each.
func (p *pipeline) converse(sess string, from, n int, zh bool) []string {
	var ids []string
	for i := from; i < from+n; i++ {
		role := []string{"user", "assistant"}[i%2]
		text := fmt.Sprintf("Turn %d: we discussed the deployment of service %d, the rollback plan and the on-call rota for next week in detail.", i, i)
		if zh {
			text = fmt.Sprintf("第%d轮：我们讨论了服务%d的部署、回滚计划以及下周的值班安排，细节都确认过了。", i, i)
		}
		id := fmt.Sprintf("%s-t%03d", sess, i)
		p.publish(sess, id, role, text, day.Add(time.Duration(i)*time.Minute))
		ids = append(ids, id)
	}
	return ids
}

// fakeLLM answers every call after an optional gate, recording the system prompts.
type fakeLLM struct {
	mu      sync.Mutex
	systems []string
	users   []string
	gate    chan struct{}
}

func (f *fakeLLM) handler() llmtest.Handler {
	return func(w http.ResponseWriter, r *http.Request, n int) {
		req, err := llmtest.DecodeChat(readAll(r))
		if err != nil {
			llmtest.WriteError(w, 400, "invalid_request_error", "", err.Error())
			return
		}
		if f.gate != nil {
			<-f.gate
		}
		f.mu.Lock()
		f.systems = append(f.systems, req.Messages[0].Content)
		f.users = append(f.users, req.Messages[len(req.Messages)-1].Content)
		f.mu.Unlock()
		answer := "Summary: deployments, rollback plan and on-call rota were agreed."
		if strings.Contains(req.Messages[0].Content, "摘要") || strings.ContainsAny(req.Messages[len(req.Messages)-1].Content, "部署回滚") {
			answer = "摘要：讨论了服务部署、回滚计划和值班安排。"
		}
		llmtest.WriteCompletion(w, "test-model", answer, 100, 20)
	}
}

func readAll(r *http.Request) []byte {
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := r.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return []byte(b.String())
		}
	}
}

func newClient(t testing.TB, srv *llmtest.Server, attempts int) *llm.Client {
	t.Helper()
	c, err := llm.New(llm.Config{Endpoint: llm.Endpoint{BaseURL: srv.URL, Model: "test-model", APIKey: "sk-test", MaxAttempts: attempts,
		MinBackoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, Timeout: 2 * time.Second}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMapReduceCallsRecentRoundsAndTurnsDuringCompression(t *testing.T) {
	fake := &fakeLLM{gate: make(chan struct{})}
	srv := llmtest.NewServer(t, fake.handler())
	p := newPipeline(t, smallBudget(1200), newClient(t, srv, 3))
	first := p.converse("s1", 0, 40, false)
	// The compressor is blocked in its first LLM call: turns keep arriving meanwhile.
	brokertest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		if srv.Count() == 0 {
			return fmt.Errorf("no LLM call yet")
		}
		return nil
	})
	during := p.converse("s1", 40, 4, false)
	close(fake.gate)
	st := p.summarized("s1", 20*time.Second)
	prs := p.pressures("s1")
	if len(prs) == 0 {
		t.Fatal("no pressure event")
	}
	pr := prs[0]
	n := len(pr.EntryIDs)
	groups := (n + 4) / 5
	wantCalls := groups
	if groups > 1 {
		wantCalls++
	}
	// The first compression made ceil(n/5) map calls and one reduce call.
	sum, err := longtermSummary(p, pr)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Usage.Calls != wantCalls {
		t.Fatalf("%d named entries: %d LLM calls, want ceil(n/5)=%d map calls + %d reduce", n, sum.Usage.Calls, groups, wantCalls-groups)
	}
	if md := sum.Metadata; int(md["map_calls"].(float64)) != groups || int(md["reduce_calls"].(float64)) != wantCalls-groups {
		t.Fatalf("calls recorded %v", md)
	}
	// Named entries are exactly the oldest turns; the 3 most recent rounds at the crossing are not named.
	if !slices.Equal(pr.EntryIDs, first[:n]) {
		t.Fatalf("named %v, want the oldest %d turns", pr.EntryIDs, n)
	}
	kept := map[string]bool{}
	for _, e := range st.Short.Entries() {
		kept[e.ID] = true
	}
	for _, id := range append(first[n:], during...) {
		if !kept[id] && !inSummary(st, id) {
			t.Errorf("turn %s is neither kept verbatim nor summarised", id)
		}
	}
	for _, id := range during {
		if !kept[id] {
			t.Errorf("turn %s arrived during the compression and must stay verbatim", id)
		}
	}
	front := st.Short.Entries()[0]
	if front.Type != memory.Summary || !strings.HasPrefix(front.Content, "[Conversation summary] ") {
		t.Fatalf("front entry %+v, want the summary with its marker", front)
	}
	if !strings.Contains(fake.systems[0], "summar") {
		t.Fatalf("map prompt %q is not the English one", fake.systems[0])
	}
}

func inSummary(st *session.State, id string) bool {
	for _, e := range st.Short.Entries() {
		if e.Type == memory.Summary && slices.Contains(e.Provenance, id) {
			return true
		}
	}
	return false
}

func longtermSummary(p *pipeline, pr events.Pressure) (longterm.Summary, error) {
	store, err := longterm.Open(context.Background(), p.env.JS, p.topo)
	if err != nil {
		return longterm.Summary{}, err
	}
	return store.Summary(context.Background(), "acme", pr.User, pr.SummaryID)
}

func TestChineseSessionChinesePromptMarkerAndUsage(t *testing.T) {
	fake := &fakeLLM{}
	srv := llmtest.NewServer(t, fake.handler())
	p := newPipeline(t, smallBudget(800), newClient(t, srv, 3))
	p.converse("zh", 0, 30, true)
	st := p.summarized("zh", 20*time.Second)
	front := st.Short.Entries()[0]
	if !strings.HasPrefix(front.Content, "[历史对话摘要] ") {
		t.Fatalf("summary %q lacks the Chinese marker", front.Content)
	}
	fake.mu.Lock()
	sys := fake.systems[0]
	fake.mu.Unlock()
	if !strings.ContainsAny(sys, "摘要对话") {
		t.Fatalf("the Chinese session got the prompt %q", sys)
	}
	us, err := usage.Open(context.Background(), p.env.JS, p.topo)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := us.Report(context.Background(), "acme")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Total.Calls == 0 || rep.Total.InputTokens != 100*rep.Total.Calls || rep.Total.OutputTokens != 20*rep.Total.Calls {
		t.Fatalf("usage %+v, want 100 in / 20 out per call as the server reported", rep.Total)
	}
	if len(rep.Tenants) != 1 || rep.Tenants[0].Sessions[0].Session != "zh" {
		t.Fatalf("report %+v", rep)
	}
}

func TestOfflineExtractiveSummaries(t *testing.T) {
	p := newPipeline(t, smallBudget(800), nil)
	p.converse("off", 0, 30, false)
	st := p.summarized("off", 20*time.Second)
	front := st.Short.Entries()[0]
	if front.Metadata["summarizer"] != "extractive" {
		t.Fatalf("metadata %v, want summarizer extractive", front.Metadata)
	}
	if memory.Estimate(front.Content) > st.Header.Budget/10 {
		t.Fatalf("summary of %d tokens over its cap %d", memory.Estimate(front.Content), st.Header.Budget/10)
	}
}

func TestLLMDownEventIsRetriedThenDeadLettered(t *testing.T) {
	var calls atomic.Int64
	srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		calls.Add(1)
		llmtest.WriteError(w, 500, "server_error", "", "overloaded")
	})
	p := newPipeline(t, smallBudget(800), newClient(t, srv, 1))
	p.converse("down", 0, 30, false)
	sub, err := p.env.NC.SubscribeSync("memory.dlq.acme.down")
	if err != nil {
		t.Fatal(err)
	}
	m, err := sub.NextMsg(30 * time.Second)
	if err != nil {
		t.Fatalf("no dead letter after the last delivery: %v (LLM calls %d)", err, calls.Load())
	}
	if !strings.Contains(m.Header.Get("Agentmem-Reason"), fmt.Sprintf("all %d deliveries", events.WorkerMaxDeliver)) {
		t.Fatalf("reason %q", m.Header.Get("Agentmem-Reason"))
	}
	// Meanwhile ingest kept applying turns: nothing was dropped.
	st := p.state("down")
	if st.Header.Turns != 30 {
		t.Fatalf("ingest applied %d turns while the LLM was down, want 30", st.Header.Turns)
	}
	if c := calls.Load(); c < events.WorkerMaxDeliver {
		t.Fatalf("%d LLM calls for %d deliveries", c, events.WorkerMaxDeliver)
	}
}

func TestCompressionCatchesUpWhenTheLLMReturns(t *testing.T) {
	var up atomic.Bool
	fake := &fakeLLM{}
	ok := fake.handler()
	srv := llmtest.NewServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if !up.Load() {
			llmtest.WriteError(w, 503, "server_error", "", "down for maintenance")
			return
		}
		ok(w, r, n)
	})
	p := newPipelineWith(t, ingest.Config{Budget: smallBudget(800), IdleTimeout: -1, RepressureAfter: 400 * time.Millisecond}, newClient(t, srv, 1))
	sub, err := p.env.NC.SubscribeSync("memory.dlq.acme.back")
	if err != nil {
		t.Fatal(err)
	}
	p.converse("back", 0, 30, false)
	if _, err := sub.NextMsg(30 * time.Second); err != nil {
		t.Fatalf("the pressure event was not dead-lettered while the LLM was down: %v", err)
	}
	up.Store(true)
	st := p.summarized("back", 20*time.Second)
	if st.Header.Turns != 30 {
		t.Fatalf("%d turns applied, want 30", st.Header.Turns)
	}
}

func TestRedeliveredPressureMakesOneSummaryAndNoNewCalls(t *testing.T) {
	fake := &fakeLLM{}
	srv := llmtest.NewServer(t, fake.handler())
	p := newPipeline(t, smallBudget(800), newClient(t, srv, 3))
	p.converse("re", 0, 30, false)
	p.summarized("re", 20*time.Second)
	ctx := context.Background()
	ss, _ := p.env.JS.Stream(ctx, p.topo.SummaryStream())
	summaries := func() uint64 {
		info, err := ss.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info.State.Msgs
	}
	cons, err := p.env.JS.Consumer(ctx, p.topo.PressureStream(), compress.ConsumerName(p.topo))
	if err != nil {
		t.Fatal(err)
	}
	named := uint64(len(p.pressures("re")))
	idle := func() {
		brokertest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
			info, err := cons.Info(ctx)
			if err != nil {
				return err
			}
			if n := named; info.NumPending > 0 || info.NumAckPending > 0 || summaries() < n {
				return fmt.Errorf("compressor busy: %d pending, %d summaries for %d pressures", info.NumPending+uint64(info.NumAckPending), summaries(), n)
			}
			return nil
		})
	}
	idle()
	calls, before := srv.Count(), summaries()
	// Replay the first pressure event as a new message (what a redelivery after a crash between
	// the LLM calls and the ack amounts to).
	s, _ := p.env.JS.Stream(ctx, p.topo.PressureStream())
	m, err := s.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	again := &nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data}
	again.Header.Del(events.HeaderMsgID)
	if _, err := p.env.JS.PublishMsg(ctx, again); err != nil {
		t.Fatal(err)
	}
	idle()
	if srv.Count() != calls {
		t.Fatalf("the redelivered event made %d new LLM calls", srv.Count()-calls)
	}
	if after := summaries(); after != before {
		t.Fatalf("%d summary events after the redelivery, %d before", after, before)
	}
}

// A pressure event whose previous summary is still being made waits for it while the consume
// layer keeps the event: it is not redelivered (which would spend its deliveries, 8 in all,
// and dead-letter it when compressions of one session queue up faster than they finish).
func TestCompressionWaitsForThePreviousSummaryWithoutRedelivery(t *testing.T) {
	p := newPipeline(t, smallBudget(800), nil)
	p.converse("chain", 0, 60, false)
	ctx := context.Background()
	var prs []events.Pressure
	brokertest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		prs = p.pressures("chain")
		if len(prs) < 2 {
			return fmt.Errorf("%d pressure events", len(prs))
		}
		for _, pr := range prs[:2] {
			if _, err := longtermSummary(p, pr); err != nil {
				return fmt.Errorf("summary %s: %w", pr.SummaryID, err)
			}
		}
		return nil
	})
	if prs[1].EntryIDs[0] != prs[0].SummaryID {
		t.Fatalf("the second pressure event names %v first, want the first summary %s", prs[1].EntryIDs[0], prs[0].SummaryID)
	}
	cons, err := p.env.JS.Consumer(ctx, p.topo.PressureStream(), compress.ConsumerName(p.topo))
	if err != nil {
		t.Fatal(err)
	}
	settled := func() *jetstream.ConsumerInfo {
		var info *jetstream.ConsumerInfo
		brokertest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
			info, err = cons.Info(ctx)
			if err != nil {
				return err
			}
			if info.NumPending > 0 || info.NumAckPending > 0 {
				return fmt.Errorf("%d pending, %d unacknowledged", info.NumPending, info.NumAckPending)
			}
			return nil
		})
		return info
	}
	// Ingest has applied the whole conversation and every pressure event has its summary: no
	// further pressure event comes while the held one is counted below.
	brokertest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		h := p.state("chain").Header
		if h.Turns != 60 || h.Summaries != h.Pressures {
			return fmt.Errorf("%d turns applied, %d pressure events, %d summaries", h.Turns, h.Pressures, h.Summaries)
		}
		return nil
	})
	before := settled().NumRedelivered
	// Both summaries are gone: the second event must wait for the first one's compression.
	kv, err := p.env.JS.KeyValue(ctx, p.topo.LongTermBucket())
	if err != nil {
		t.Fatal(err)
	}
	for _, pr := range prs[:2] {
		if err := kv.Purge(ctx, longterm.SummaryKey("acme", pr.User, pr.SummaryID)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := p.env.JS.Stream(ctx, p.topo.PressureStream())
	if err != nil {
		t.Fatal(err)
	}
	republish := func(n int) {
		var seen int
		for seq := uint64(1); ; seq++ {
			m, err := s.GetMsg(ctx, seq)
			if err != nil {
				t.Fatalf("pressure event %d not found: %v", n, err)
			}
			if m.Subject != "memory.pressure.acme.chain" {
				continue
			}
			if seen++; seen == n {
				again := &nats.Msg{Subject: m.Subject, Header: m.Header, Data: m.Data}
				again.Header.Del(events.HeaderMsgID)
				if _, err := p.env.JS.PublishMsg(ctx, again); err != nil {
					t.Fatal(err)
				}
				return
			}
		}
	}
	republish(2)
	// The second event is held (being handled) for a while before the first comes back.
	brokertest.CheckFor(t, 10*time.Second, 10*time.Millisecond, func() error {
		info, err := cons.Info(ctx)
		if err != nil {
			return err
		}
		if info.NumPending > 0 || info.NumAckPending != 1 {
			return fmt.Errorf("%d pending, %d unacknowledged", info.NumPending, info.NumAckPending)
		}
		return nil
	})
	// For a while (a retry with this pipeline's 20 ms backoff would show several times over),
	// the held event is not redelivered.
	for end := time.Now().Add(300 * time.Millisecond); time.Now().Before(end); {
		info, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.NumRedelivered != before {
			t.Fatalf("the waiting pressure event was redelivered %d times", info.NumRedelivered-before)
		}
	}
	republish(1)
	after := settled().NumRedelivered
	for _, pr := range prs[:2] {
		if _, err := longtermSummary(p, pr); err != nil {
			t.Fatalf("summary %s not made again: %v", pr.SummaryID, err)
		}
	}
	if after != before {
		t.Fatalf("the pressure events were redelivered %d times while the previous summary was being made", after-before)
	}
}

// TestStructuredTurnsAreSummarized: turns published in structured content mode (no ce-id header:
// the id is in the body) are read back and summarized like binary-mode ones. The compressor once
// passed over every turn without a ce-id header, and summaries silently left them out.
func TestStructuredTurnsAreSummarized(t *testing.T) {
	fake := &fakeLLM{}
	srv := llmtest.NewServer(t, fake.handler())
	p := newPipeline(t, smallBudget(1200), newClient(t, srv, 3))
	for i := range 6 {
		id := fmt.Sprintf("s1-t%03d", i)
		ev, err := events.NewEvent(id, events.TypeTurn, "test", day.Add(time.Duration(i)*time.Minute),
			events.Turn{Role: []string{"user", "assistant"}[i%2], Content: fmt.Sprintf("Turn %d: the zebra paddock %d needs a new gate and a water trough before the inspection.", i, i), User: "alice"})
		if err != nil {
			t.Fatal(err)
		}
		m, err := events.StructuredEventMsg("acme", "s1", ev)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.env.JS.PublishMsg(context.Background(), m); err != nil {
			t.Fatal(err)
		}
	}
	p.converse("s1", 6, 34, false)
	p.summarized("s1", 20*time.Second)
	fake.mu.Lock()
	prompts := strings.Join(fake.users, "\n")
	fake.mu.Unlock()
	for i := range 6 {
		if want := fmt.Sprintf("zebra paddock %d", i); !strings.Contains(prompts, want) {
			t.Errorf("no LLM call was given the structured-mode turn %d (%q)", i, want)
		}
	}
}

package extract_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/extract"
	"github.com/agentmem/agentmem/internal/extract/extracttest"
	"github.com/agentmem/agentmem/internal/llm"
	"github.com/agentmem/agentmem/internal/llm/llmtest"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/pkg/events"
)

type env = extracttest.Env

func start(t *testing.T, extractors int, chat extract.Chat) *env {
	return extracttest.Start(t, extractors, chat)
}

var t0 = time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)

func TestTwoExtractorsStoreEachFactOnce(t *testing.T) {
	e := start(t, 2, nil)
	sub, err := e.Broker.NC.SubscribeSync("memory.facts.acme.alice")
	if err != nil {
		t.Fatal(err)
	}
	e.Say("acme", "s1", "alice", "t1", "I prefer tea over coffee.", t0)
	e.Say("acme", "s1", "alice", "t2", "My name is Alice.", t0.Add(time.Minute))
	e.Say("acme", "s1", "alice", "t3", "I prefer tea over coffee!", t0.Add(2*time.Minute))
	e.End("acme", "s1", "alice", "end1", t0.Add(3*time.Minute))
	// The same session end, redelivered as a new message, and a second end.
	e.Publish("acme", "s1", "end1-copy", events.TypeSessionEnded, t0.Add(4*time.Minute), events.SessionEnded{User: "alice"})
	e.Facts("acme", "alice", 2)
	e.Drained()
	facts := e.Facts("acme", "alice", 2)
	if len(facts) != 2 {
		t.Fatalf("%d facts stored, want 2: %+v", len(facts), facts)
	}
	for _, f := range facts {
		if strings.Contains(f.Content, "tea") {
			if !f.ValidFrom.Equal(t0) || !slices.Equal(f.Provenance, []string{"t1", "t3"}) {
				t.Errorf("tea fact: valid_from %s provenance %v; want the earliest turn's time and both turns", f.ValidFrom, f.Provenance)
			}
			if f.Extractor != "rules" {
				t.Errorf("extractor %q", f.Extractor)
			}
		}
	}
	// Live subscribers may see an event again after a redelivery; its CloudEvent id says it is
	// the same event, and the facts stream stores it once.
	added := map[string]bool{}
	for {
		m, err := sub.NextMsg(500 * time.Millisecond)
		if err != nil {
			break
		}
		var body struct {
			Op string `json:"op"`
		}
		_ = json.Unmarshal(m.Data, &body)
		if body.Op == events.FactAdded {
			added[m.Header.Get("ce-id")] = true
		}
	}
	if len(added) != 2 {
		t.Fatalf("%d distinct fact added events, want 2", len(added))
	}
	s, err := e.Broker.JS.Stream(context.Background(), e.Topo.FactStream())
	if err != nil {
		t.Fatal(err)
	}
	if info, err := s.Info(context.Background()); err != nil || info.State.Msgs != 2 {
		t.Fatalf("facts stream holds %d events, want 2 (%v)", info.State.Msgs, err)
	}
}

func TestMovedCitySupersedesAndKeepsHistory(t *testing.T) {
	e := start(t, 1, nil)
	e.Say("acme", "s1", "alice", "t1", "I live in Paris.", t0)
	e.End("acme", "s1", "alice", "e1", t0.Add(time.Minute))
	e.Facts("acme", "alice", 1)
	week := t0.Add(7 * 24 * time.Hour)
	e.Say("acme", "s2", "alice", "t2", "I moved to Berlin.", week)
	e.End("acme", "s2", "alice", "e2", week.Add(time.Minute))
	e.Drained()
	var live, history []longterm.Fact
	for _, f := range e.Facts("acme", "alice", 1) {
		if f.Live() {
			live = append(live, f)
		} else {
			history = append(history, f)
		}
	}
	if len(live) != 1 || !strings.Contains(live[0].Content, "Berlin") {
		t.Fatalf("live facts %+v, want only Berlin", live)
	}
	if len(history) != 1 || !strings.Contains(history[0].Content, "Paris") || history[0].ValidTo == nil || !history[0].ValidTo.Equal(week) {
		t.Fatalf("history %+v, want Paris valid until the move", history)
	}
}

func TestChineseConversationYieldsChineseFacts(t *testing.T) {
	e := start(t, 1, nil)
	e.Say("acme", "zh", "lihua", "t1", "我叫李华，我住在杭州。", t0)
	e.Say("acme", "zh", "lihua", "t2", "我最喜欢的编程语言是 Go。", t0.Add(time.Minute))
	e.End("acme", "zh", "lihua", "e1", t0.Add(2*time.Minute))
	for _, f := range e.Facts("acme", "lihua", 3) {
		if !strings.ContainsAny(f.Content, "用户李华杭州编程语言") {
			t.Errorf("fact %q is not in Chinese", f.Content)
		}
	}
}

func TestTurnsIngestRejectedNeverBecomeFacts(t *testing.T) {
	e := start(t, 1, nil)
	e.Say("acme", "s1", "alice", "t1", "I prefer tea.", t0)
	e.Say("acme", "s1", "mallory", "t2", "I prefer poison.", t0.Add(time.Minute))
	e.End("acme", "s1", "alice", "e1", t0.Add(2*time.Minute))
	e.Drained()
	for _, f := range e.Facts("acme", "alice", 1) {
		if strings.Contains(f.Content, "poison") {
			t.Fatalf("a turn of another user became alice's fact: %q", f.Content)
		}
	}
}

func llmClient(t *testing.T, srv *llmtest.Server) *llm.Client {
	t.Helper()
	c, err := llm.New(llm.Config{Endpoint: llm.Endpoint{BaseURL: srv.URL, Model: "test-model", MaxAttempts: 2, MinBackoff: 5 * time.Millisecond,
		MaxBackoff: 20 * time.Millisecond, Timeout: 2 * time.Second}}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLLMExtractionInTheConversationsLanguage(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Answer(func(req llmtest.ChatRequest) string {
		return `{"facts":[{"content":"用户住在杭州","category":"identity","key":"user.city","confidence":0.9,"turns":["t1"]}]}`
	}))
	e := start(t, 1, llmClient(t, srv))
	e.Say("acme", "zh", "lihua", "t1", "我住在杭州。", t0)
	e.End("acme", "zh", "lihua", "e1", t0.Add(time.Minute))
	facts := e.Facts("acme", "lihua", 1)
	if facts[0].Content != "用户住在杭州" || facts[0].Extractor != "llm:test-model" || facts[0].Key != "user.city" {
		t.Fatalf("fact %+v", facts[0])
	}
	reqs := srv.Requests()
	chat, err := llmtest.DecodeChat(reqs[0].Body)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.ContainsAny(chat.Messages[0].Content, "事实用户") {
		t.Fatalf("a Chinese conversation got the prompt %q", chat.Messages[0].Content)
	}
}

func TestMalformedLLMAnswerRetriedThenDeadLetteredWithNothingStored(t *testing.T) {
	var calls atomic.Int64
	srv := llmtest.NewServer(t, llmtest.Answer(func(llmtest.ChatRequest) string {
		calls.Add(1)
		return `{"facts":[{"content":"The user likes tea","category":"preference","confidence":0.9},{"content":`
	}))
	e := start(t, 1, llmClient(t, srv))
	sub, err := e.Broker.NC.SubscribeSync("memory.dlq.acme.s1")
	if err != nil {
		t.Fatal(err)
	}
	e.Say("acme", "s1", "alice", "t1", "I like tea.", t0)
	e.End("acme", "s1", "alice", "e1", t0.Add(time.Minute))
	m, err := sub.NextMsg(20 * time.Second)
	if err != nil {
		t.Fatalf("no dead letter: %v (calls %d)", err, calls.Load())
	}
	if !strings.Contains(m.Header.Get("Agentmem-Reason"), "malformed") {
		t.Fatalf("reason %q", m.Header.Get("Agentmem-Reason"))
	}
	recs, err := e.Store.User(context.Background(), "acme", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs.Facts) != 0 {
		t.Fatalf("partial facts stored: %+v", recs.Facts)
	}
	if calls.Load() < 2 {
		t.Fatalf("%d LLM calls: a malformed answer must be retried", calls.Load())
	}
}

// TestStructuredSessionEndTriggersExtraction: a session end in structured content mode (its
// type in the body, its content-type header in lower case as the CloudEvents NATS binding
// writes it) is not skipped as "not a session end": the session's facts are extracted.
func TestStructuredSessionEndTriggersExtraction(t *testing.T) {
	e := start(t, 1, nil)
	e.Say("acme", "s1", "alice", "t1", "I live in Lisbon and I work as a nurse.", t0)
	ev, err := events.NewEvent("end-structured", events.TypeSessionEnded, "test", t0.Add(time.Minute), events.SessionEnded{User: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := events.StructuredMsg("memory.turns.acme.s1", ev)
	if err != nil {
		t.Fatal(err)
	}
	m.Header.Set(events.HeaderMsgID, events.MsgID("acme", "s1", "end-structured"))
	if _, err := e.Broker.JS.PublishMsg(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	if facts := e.Facts("acme", "alice", 2); len(facts) < 2 {
		t.Fatalf("facts %+v", facts)
	}
}

// The extractors read the session ends ingest announces, not the turns: their consumer is
// delivered one message per applied end, whatever the number of turns, and an end ingest
// rejects (another user's) is not announced.
func TestExtractorsReadOnlyAppliedEnds(t *testing.T) {
	e := start(t, 1, nil)
	for i := range 30 {
		e.Say("acme", "s1", "alice", fmt.Sprintf("t%02d", i), fmt.Sprintf("I prefer tea number %d.", i), t0.Add(time.Duration(i)*time.Second))
	}
	e.End("acme", "s1", "mallory", "e0", t0.Add(time.Minute)) // rejected: alice owns s1
	e.End("acme", "s1", "alice", "e1", t0.Add(2*time.Minute))
	e.Facts("acme", "alice", 1)
	e.Drained()
	ctx := context.Background()
	c, err := e.Broker.JS.Consumer(ctx, e.Topo.TurnsStream(), extract.EndConsumerName(e.Topo))
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.Delivered.Consumer != 1 {
		t.Fatalf("the extractors' consumer was delivered %d messages for 30 turns and one applied end, want 1", info.Delivered.Consumer)
	}
	s, err := e.Broker.JS.Stream(ctx, e.Topo.TurnsStream())
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.GetLastMsgForSubject(ctx, "memory.ended.acme.s1")
	if err != nil {
		t.Fatal(err)
	}
	var end events.EndApplied
	if err := json.Unmarshal(m.Data, &end); err != nil {
		t.Fatal(err)
	}
	if end.End != "e1" || end.Seq != m.Sequence-1 {
		t.Fatalf("announcement %+v at %d, want end e1 at the sequence before it", end, m.Sequence)
	}
}

// An announcement that breaks its contract (published by hand on an unauthenticated server) is
// dead-lettered with the reason, and the extractors go on.
func TestBadAnnouncementIsDeadLettered(t *testing.T) {
	e := start(t, 1, nil)
	sub, err := e.Broker.NC.SubscribeSync("memory.dlq.acme.s1")
	if err != nil {
		t.Fatal(err)
	}
	msg, err := events.NewMsg(context.Background(), "acme", "s1", "x1", events.TypeEndApplied, "test", t0, events.EndApplied{End: "e1"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Broker.JS.PublishMsg(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	m, err := sub.NextMsg(20 * time.Second)
	if err != nil {
		t.Fatalf("no dead letter: %v", err)
	}
	if r := m.Header.Get("Agentmem-Reason"); !strings.Contains(r, "seq") {
		t.Fatalf("reason %q does not name the field", r)
	}
	e.Say("acme", "s1", "alice", "t1", "I prefer tea.", t0)
	e.End("acme", "s1", "alice", "e1", t0.Add(time.Minute))
	e.Facts("acme", "alice", 1)
}

// TestRestatedFactWinsAgain: Paris, then Lisbon, then Paris again, each in a session of its own:
// the latest statement is the live fact, in English and in Chinese, and in another wording that
// the extractor keys the same.
func TestRestatedFactWinsAgain(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		first, second, third  string
		wantLive, wantLiveNot string
	}{
		{"english", "I live in Paris.", "I live in Lisbon.", "I live in Paris.", "Paris", "Lisbon"},
		{"chinese", "我住在北京。", "我住在上海。", "我住在北京。", "北京", "上海"},
		{"other-wording", "I live in Paris.", "I live in Lisbon.", "I moved to Paris.", "Paris", "Lisbon"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := start(t, 1, nil)
			day := 24 * time.Hour
			for i, text := range []string{tc.first, tc.second, tc.third} {
				at := t0.Add(time.Duration(i) * day)
				sess := fmt.Sprintf("s%d", i+1)
				e.Say("acme", sess, "alice", fmt.Sprintf("t%d", i+1), text, at)
				e.End("acme", sess, "alice", fmt.Sprintf("e%d", i+1), at.Add(time.Minute))
				e.Drained()
			}
			var live []string
			for _, f := range e.Facts("acme", "alice", 1) {
				if f.Live() {
					live = append(live, f.Content)
				}
			}
			if len(live) != 1 || !strings.Contains(live[0], tc.wantLive) || strings.Contains(live[0], tc.wantLiveNot) {
				t.Fatalf("live facts %q, want the restated %s", live, tc.wantLive)
			}
		})
	}
}

// TestRestatedFactWinsAgainWithTheLLM: the same with the LLM extractor, which answers the
// restatement with the same content as the first statement.
func TestRestatedFactWinsAgainWithTheLLM(t *testing.T) {
	srv := llmtest.NewServer(t, llmtest.Answer(func(req llmtest.ChatRequest) string {
		body := req.Messages[len(req.Messages)-1].Content
		city, turn := "Paris", "t1"
		switch {
		case strings.Contains(body, "Lisbon"):
			city, turn = "Lisbon", "t2"
		case strings.Contains(body, "again"):
			turn = "t3"
		}
		return fmt.Sprintf(`{"facts":[{"content":"The user lives in %s","category":"identity","key":"user.city","confidence":0.9,"turns":[%q]}]}`, city, turn)
	}))
	e := start(t, 1, llmClient(t, srv))
	day := 24 * time.Hour
	for i, text := range []string{"I live in Paris.", "I live in Lisbon.", "I live in Paris again."} {
		at := t0.Add(time.Duration(i) * day)
		sess := fmt.Sprintf("s%d", i+1)
		e.Say("acme", sess, "alice", fmt.Sprintf("t%d", i+1), text, at)
		e.End("acme", sess, "alice", fmt.Sprintf("e%d", i+1), at.Add(time.Minute))
		e.Drained()
	}
	var live []longterm.Fact
	for _, f := range e.Facts("acme", "alice", 1) {
		if f.Live() {
			live = append(live, f)
		}
	}
	if len(live) != 1 || live[0].Content != "The user lives in Paris" || live[0].Version != 2 || !slices.Equal(live[0].Provenance, []string{"t3"}) {
		t.Fatalf("live facts %+v, want Paris's second version stated by t3", live)
	}
}

package summarize

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/llm"
	"github.com/agentmem/agentmem/pkg/memory"
)

func TestSummarizeMapReduceCalls(t *testing.T) {
	for _, n := range []int{1, 4, 5, 6, 11, 23} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			chat := &fakeChat{}
			s := New(Config{}, chat, "glm-4")
			entries := englishSession(n)
			res, err := s.Summarize(context.Background(), entries, 2000)
			if err != nil {
				t.Fatal(err)
			}
			groups := (n + 4) / 5
			wantReduce := 0
			if groups > 1 {
				wantReduce = 1
			}
			maps, reduces := chat.requests(PurposeMap), chat.requests(PurposeReduce)
			if len(maps) != groups || res.MapCalls != groups {
				t.Errorf("map calls: %d recorded, %d reported, want %d", len(maps), res.MapCalls, groups)
			}
			if len(reduces) != wantReduce || res.ReduceCalls != wantReduce {
				t.Errorf("reduce calls: %d recorded, %d reported, want %d", len(reduces), res.ReduceCalls, wantReduce)
			}
			want := memory.Usage{Calls: groups + wantReduce, InputTokens: 10 * (groups + wantReduce), OutputTokens: 3 * (groups + wantReduce)}
			if res.Usage != want {
				t.Errorf("usage = %+v, want %+v", res.Usage, want)
			}
			if res.Summarizer != "llm:glm-4" || res.Language != English {
				t.Errorf("summarizer %q language %q", res.Summarizer, res.Language)
			}

			// Each map call holds exactly one group of consecutive entries, every group once.
			seen := make(map[int]bool)
			for _, req := range maps {
				ids := distinct(idRE.FindAllStringSubmatch(userMessage(req), -1))
				if len(ids) == 0 {
					t.Fatalf("map call without entries: %q", userMessage(req))
				}
				g := (ids[0] - 1) / 5
				var wantIDs []int
				for i := g*5 + 1; i <= min(g*5+5, n); i++ {
					wantIDs = append(wantIDs, i)
				}
				if fmt.Sprint(ids) != fmt.Sprint(wantIDs) {
					t.Errorf("map call holds entries %v, want %v", ids, wantIDs)
				}
				if seen[g] {
					t.Errorf("group %d summarised twice", g)
				}
				seen[g] = true
			}
			if len(seen) != groups {
				t.Errorf("%d groups summarised, want %d", len(seen), groups)
			}

			// The partials reach the reduce call in arrival order; a single one is the result.
			var partials []string
			for g := range groups {
				partials = append(partials, fmt.Sprintf("partial(id-%03d-id-%03d)", g*5+1, min(g*5+5, n)))
			}
			wantContent := MarkerEnglish + partials[0]
			if groups > 1 {
				got := partialRE.FindAllString(userMessage(reduces[0]), -1)
				if fmt.Sprint(got) != fmt.Sprint(partials) {
					t.Errorf("reduce got partials %v, want %v", got, partials)
				}
				wantContent = MarkerEnglish + "merged[" + strings.Join(partials, " ") + "]"
			}
			if res.Content != wantContent {
				t.Errorf("content = %q, want %q", res.Content, wantContent)
			}
		})
	}
}

// distinct returns the numbers of id matches, repeats removed, in order.
func distinct(matches [][]string) []int {
	var out []int
	seen := make(map[int]bool)
	for _, m := range matches {
		var n int
		fmt.Sscan(strings.TrimLeft(m[1], "0"), &n)
		if !seen[n] {
			seen[n] = true
			out = append(out, n)
		}
	}
	return out
}

func TestSummarizeLanguage(t *testing.T) {
	for _, tc := range []struct {
		name    string
		entries []memory.Entry
		lang    string
	}{
		{"chinese", chineseSession(7), Chinese},
		{"english", englishSession(7), English},
	} {
		t.Run(tc.name, func(t *testing.T) {
			chat := &fakeChat{}
			res, err := New(Config{}, chat, "m").Summarize(context.Background(), tc.entries, 1000)
			if err != nil {
				t.Fatal(err)
			}
			if res.Language != tc.lang {
				t.Errorf("language = %q, want %q", res.Language, tc.lang)
			}
			if !strings.HasPrefix(res.Content, Marker(tc.lang)) {
				t.Errorf("content %q does not start with %q", res.Content, Marker(tc.lang))
			}
			for _, step := range []string{stepMap, stepReduce} {
				reqs := chat.requests(step)
				if len(reqs) == 0 {
					t.Fatalf("no %s call", step)
				}
				for _, req := range reqs {
					if got := systemMessage(req); got != systemPrompt(tc.lang, step) {
						t.Errorf("%s system prompt is not the %s one: %.60q", step, tc.lang, got)
					}
					if got := Language([]memory.Entry{{Type: memory.Conversation, Content: userMessage(req)}}); got != tc.lang {
						t.Errorf("%s user message reads as %q: %.80q", step, got, userMessage(req))
					}
				}
			}
		})
	}
}

func TestPrompts(t *testing.T) {
	for _, lang := range []string{Chinese, English} {
		for _, step := range []string{stepMap, stepReduce} {
			p := systemPrompt(lang, step)
			if len(p) < 200 {
				t.Errorf("%s/%s prompt too short: %q", lang, step, p)
			}
			if got := Language([]memory.Entry{{Type: memory.Conversation, Content: p}}); got != lang {
				t.Errorf("%s/%s prompt reads as %q", lang, step, got)
			}
		}
	}
}

func TestSummarizeCutsToolResults(t *testing.T) {
	var b strings.Builder
	b.WriteString("HEADSTART ")
	for i := 0; b.Len() < 1500; i++ {
		fmt.Fprintf(&b, "ok  \tpkg/%d\t0.%03ds\n", i, i)
	}
	b.WriteString("MIDDLESECRET\n")
	for i := 0; b.Len() < 3000; i++ {
		fmt.Fprintf(&b, "ok  \tpkg/x%d\t0.%03ds\n", i, i)
	}
	b.WriteString("TAILEND")
	output := b.String()
	tool := memory.Entry{ID: "t2", Type: memory.ToolResult, Role: "tool", Timestamp: t0,
		Content: "$ go test ./...\n" + output, Metadata: map[string]any{"tool": "bash"}}
	talk := turn(2, "assistant", strings.Replace(output, "MIDDLESECRET", "MIDDLETALK", 1))

	chat := &fakeChat{}
	entries := []memory.Entry{turn(0, "user", "Please run the tests."), tool, talk}
	if _, err := New(Config{}, chat, "m").Summarize(context.Background(), entries, 500); err != nil {
		t.Fatal(err)
	}
	msg := userMessage(chat.requests(PurposeMap)[0])
	for _, want := range []string{"tool (bash): $ go test ./...\nHEADSTART", "TAILEND", "chars cut] …", "MIDDLETALK"} {
		if !strings.Contains(msg, want) {
			t.Errorf("map message lacks %q", want)
		}
	}
	if strings.Contains(msg, "MIDDLESECRET") {
		t.Error("the middle of the tool output reached the LLM")
	}
	if strings.Count(msg, "chars cut") != 1 {
		t.Error("the conversation entry was cut at the length of a tool result")
	}
}

func TestSummarizeCarriesPreviousSummary(t *testing.T) {
	prev := memory.Entry{ID: "sum-1", Type: memory.Summary, Timestamp: t0,
		Content: MarkerEnglish + "The user, Alice, prefers Go and lives in Porto.\nOpen task: book the flight."}
	entries := append([]memory.Entry{prev}, englishSession(7)...)

	chat := &fakeChat{}
	if _, err := New(Config{}, chat, "m").Summarize(context.Background(), entries, 800); err != nil {
		t.Fatal(err)
	}
	var first string
	for _, req := range chat.requests(PurposeMap) {
		if strings.Contains(userMessage(req), "[1] ") {
			first = userMessage(req)
		}
	}
	for _, want := range []string{"earlier summary: The user, Alice, prefers Go and lives in Porto.\nOpen task: book the flight.", "carry its content forward"} {
		if !strings.Contains(first, want) {
			t.Errorf("first map message lacks %q:\n%s", want, first)
		}
	}
	if strings.Contains(first, "[Conversation summary]") {
		t.Error("the old marker was passed on")
	}

	// Extractively, the earlier summary is carried on too.
	res, err := New(Config{}, nil, "").Summarize(context.Background(), entries, 150)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Content, "Alice, prefers Go") {
		t.Errorf("extractive summary lost the earlier summary: %q", res.Content)
	}
}

func TestSummarizeCap(t *testing.T) {
	ramble := func(req llm.Request) (string, error) {
		var b strings.Builder
		for i := range 400 {
			if req.Purpose == PurposeMap && strings.Contains(userMessage(req), "：") {
				fmt.Fprintf(&b, "用户计划第%d次去杭州见王经理，并且喜欢Go语言。\n", i)
			} else {
				fmt.Fprintf(&b, "The user plans trip %d to Lisbon with Maria and prefers window seats. ", i)
			}
		}
		return b.String(), nil
	}
	for _, counter := range counters {
		for _, lang := range []string{English, Chinese} {
			for _, n := range []int{3, 12} {
				for _, maxTokens := range []int{12, 20, 50, 120, 500, 2000} {
					name := fmt.Sprintf("%s/%s/%d/%d", counter.Name(), lang, n, maxTokens)
					t.Run(name, func(t *testing.T) {
						entries := englishSession(n)
						if lang == Chinese {
							entries = chineseSession(n)
						}
						for _, chat := range []Chat{&fakeChat{answer: ramble}, nil} {
							res, err := New(Config{Counter: counter}, chat, "m").Summarize(context.Background(), entries, maxTokens)
							if err != nil {
								t.Fatal(err)
							}
							if got := counter.Count(res.Content); got > maxTokens {
								t.Errorf("%s: %d tokens > cap %d: %q", res.Summarizer, got, maxTokens, res.Content)
							}
							if !strings.HasPrefix(res.Content, Marker(lang)) {
								t.Errorf("%s: no marker: %q", res.Summarizer, res.Content)
							}
							if maxTokens >= 50 && len(res.Content) <= len(Marker(lang))+10 {
								t.Errorf("%s: nothing kept within %d tokens: %q", res.Summarizer, maxTokens, res.Content)
							}
						}
					})
				}
			}
		}
	}
}

func TestSummarizeBadInput(t *testing.T) {
	s := New(Config{}, &fakeChat{}, "m")
	if _, err := s.Summarize(context.Background(), nil, 100); !errors.Is(err, ErrNoEntries) {
		t.Errorf("no entries: err = %v", err)
	}
	for _, maxTokens := range []int{-1, 0, 6} {
		if _, err := s.Summarize(context.Background(), englishSession(2), maxTokens); !errors.Is(err, ErrCap) {
			t.Errorf("cap %d: err = %v, want ErrCap", maxTokens, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Summarize(ctx, englishSession(2), 100); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: err = %v", err)
	}
}

func TestSummarizeChatError(t *testing.T) {
	errBoom := errors.New("boom: 503 from the LLM")
	for _, tc := range []struct {
		name  string
		fail  func(req llm.Request) bool
		empty bool
	}{
		{"first map", func(r llm.Request) bool { return strings.Contains(userMessage(r), "id-001") }, false},
		{"last map", func(r llm.Request) bool { return strings.Contains(userMessage(r), "id-023") }, false},
		{"reduce", func(r llm.Request) bool { return r.Purpose == PurposeReduce }, false},
		{"empty map answer", func(r llm.Request) bool { return strings.Contains(userMessage(r), "id-011") }, true},
		{"empty reduce answer", func(r llm.Request) bool { return r.Purpose == PurposeReduce }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want := errBoom
			if tc.empty {
				want = ErrEmptyAnswer
			}
			chat := &fakeChat{answer: func(req llm.Request) (string, error) {
				switch {
				case !tc.fail(req):
					return defaultAnswer(req)
				case tc.empty:
					return " <think>hmm</think>\n ", nil
				}
				return "", errBoom
			}}
			res, err := New(Config{Concurrency: 2}, chat, "m").Summarize(context.Background(), englishSession(23), 1000)
			if !errors.Is(err, want) {
				t.Fatalf("err = %v, want %v", err, want)
			}
			if !strings.HasPrefix(err.Error(), "summarize: ") {
				t.Errorf("error %q lacks context", err)
			}
			if res != (Result{}) {
				t.Errorf("partial result returned: %+v", res)
			}
		})
	}
}

// blockingChat holds every call until the test releases it, counting the calls in flight.
type blockingChat struct {
	inFlight, maxInFlight atomic.Int32
	started               chan struct{}
	release               chan struct{}
}

func (b *blockingChat) Complete(ctx context.Context, req llm.Request) (llm.Response, error) {
	n := b.inFlight.Add(1)
	defer b.inFlight.Add(-1)
	for {
		m := b.maxInFlight.Load()
		if n <= m || b.maxInFlight.CompareAndSwap(m, n) {
			break
		}
	}
	b.started <- struct{}{}
	select {
	case <-b.release:
	case <-ctx.Done():
		return llm.Response{}, ctx.Err()
	}
	content, err := defaultAnswer(req)
	return llm.Response{Content: content, Usage: memory.Usage{Calls: 1}}, err
}

func TestSummarizeMapConcurrencyBound(t *testing.T) {
	const (
		limit  = 3
		groups = 10
		calls  = groups + 1 // and the reduce
	)
	chat := &blockingChat{started: make(chan struct{}, calls), release: make(chan struct{})}
	s := New(Config{Concurrency: limit}, chat, "m")
	type outcome struct {
		res Result
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		res, err := s.Summarize(context.Background(), englishSession(groups*5), 2000)
		done <- outcome{res, err}
	}()

	wait := func(what string) {
		t.Helper()
		select {
		case <-chat.started:
		case <-time.After(10 * time.Second):
			t.Fatalf("timed out waiting for %s", what)
		}
	}
	for i := range limit {
		wait(fmt.Sprintf("map call %d", i+1))
	}
	if got := chat.inFlight.Load(); got != limit {
		t.Fatalf("%d calls in flight, want %d", got, limit)
	}
	// Release the map calls one at a time: each release lets exactly one more start.
	for i := limit; i < groups; i++ {
		chat.release <- struct{}{}
		wait(fmt.Sprintf("map call %d", i+1))
	}
	for range limit {
		chat.release <- struct{}{}
	}
	wait("the reduce call")
	if got := chat.inFlight.Load(); got != 1 {
		t.Errorf("%d calls in flight with the reduce call, want 1", got)
	}
	chat.release <- struct{}{}
	var out outcome
	select {
	case out = <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Summarize did not return")
	}
	if out.err != nil {
		t.Fatal(out.err)
	}
	if got := chat.maxInFlight.Load(); got != limit {
		t.Errorf("at most %d calls were in flight, want %d", got, limit)
	}
	if out.res.MapCalls != groups || out.res.ReduceCalls != 1 || out.res.Usage.Calls != calls {
		t.Errorf("calls: %+v", out.res)
	}
}

func TestSummarizeExtractive(t *testing.T) {
	entries := englishSession(23)
	entries[3] = memory.Entry{ID: "x", Type: memory.ToolResult, Role: "tool", Content: strings.Repeat("noise line\n", 400),
		Metadata: map[string]any{"tool": "shell"}}
	for _, chat := range []Chat{nil, (*fakeChat)(nil)} {
		s := New(Config{}, chat, "ignored")
		a, err := s.Summarize(context.Background(), entries, 300)
		if err != nil {
			t.Fatal(err)
		}
		b, err := s.Summarize(context.Background(), entries, 300)
		if err != nil {
			t.Fatal(err)
		}
		if a != b {
			t.Errorf("not deterministic:\n%q\n%q", a.Content, b.Content)
		}
		if a.Summarizer != "extractive" || a.Usage != (memory.Usage{}) || a.MapCalls != 0 || a.ReduceCalls != 0 {
			t.Errorf("result %+v", a)
		}
		if got := memory.Estimate(a.Content); got > 300 || got < 200 {
			t.Errorf("%d tokens, want close to the cap of 300", got)
		}
		if !strings.HasPrefix(a.Content, MarkerEnglish) || !strings.Contains(a.Content, "\nuser: id-") {
			t.Errorf("lines lost their role labels: %q", a.Content)
		}
		if strings.Count(a.Content, "noise line") > 1 {
			t.Errorf("a repeated line was kept more than once: %q", a.Content)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := (Config{}).Validate(); err != nil {
		t.Errorf("zero config: %v", err)
	}
	err := Config{ToolTailChars: -1}.Validate()
	if err == nil || !strings.Contains(err.Error(), "ToolTailChars") {
		t.Errorf("err = %v, want one naming ToolTailChars", err)
	}
	c := Config{GroupSize: -2}.withDefaults()
	if c.GroupSize != DefaultGroupSize || c.Counter == nil {
		t.Errorf("defaults not applied: %+v", c)
	}
}

func TestCleanAnswer(t *testing.T) {
	for in, want := range map[string]string{
		"  The user likes Go.  ":                        "The user likes Go.",
		"<think>let me see</think>\nThe user likes Go.": "The user likes Go.",
		"```\nThe user likes Go.\n```":                  "The user likes Go.",
		"[Conversation summary] The user likes Go.":     "The user likes Go.",
		"[历史对话摘要] 用户喜欢Go。":                              "用户喜欢Go。",
	} {
		if got := cleanAnswer(in); got != want {
			t.Errorf("cleanAnswer(%q) = %q, want %q", in, got, want)
		}
	}
}

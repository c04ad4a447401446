package summarize

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentmem/agentmem/pkg/memory"
)

func TestExtractiveEdges(t *testing.T) {
	est := memory.EstimateCounter{}
	for _, tc := range []struct {
		name string
		text string
		cap  int
		want string
	}{
		{"empty", "", 100, ""},
		{"spaces only", " \n\t ", 100, ""},
		{"zero cap", "The user likes Go.", 0, ""},
		{"negative cap", "The user likes Go.", -5, ""},
		{"fits: returned whole", "  The user likes Go.\n\nShe lives in Porto.  ", 100, "The user likes Go.\n\nShe lives in Porto."},
		{"punctuation only", strings.Repeat("!?。… ", 50), 5, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Extractive(tc.text, tc.cap, est); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
	if got := Extractive("The user likes Go.", 100, nil); got != "The user likes Go." {
		t.Errorf("nil counter: %q", got)
	}
}

func TestExtractiveKnownAnswer(t *testing.T) {
	// The billing sentences share the frequent terms billing, service and Kubernetes; C and E
	// also hold a cue (needs, wants) and a name, so they outscore A, which holds a name only.
	a := "Alice deploys the billing service on Kubernetes every Friday."
	b := "The weather was pleasant."
	c := "The billing service on Kubernetes needs more memory."
	d := "We chatted about films."
	e := "Alice wants the billing service to stay on Kubernetes."
	text := strings.Join([]string{a, b, c, d, e}, " ")
	est := memory.EstimateCounter{}
	limit := est.Count(c+" ") + est.Count(e+" ")
	if got, want := Extractive(text, limit, est), c+" "+e; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	// With room for three, A joins, in its place.
	limit += est.Count(a + " ")
	if got, want := Extractive(text, limit, est), a+" "+c+" "+e; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestExtractiveLabelsAndLines(t *testing.T) {
	text := "user: My name is Dana and I prefer tea over coffee. Hi there.\n" +
		"assistant: Hello! Nice to meet you.\n" +
		"user: I decided to move to Berlin on 1 May. The flat has 3 rooms.\n" +
		"assistant: Okay."
	// Room for the two sentences with a name, a cue and a number, and their labels.
	want := "user: My name is Dana and I prefer tea over coffee.\nuser: I decided to move to Berlin on 1 May."
	if got := Extractive(text, memory.Estimate(want), nil); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

func TestExtractiveChinese(t *testing.T) {
	text := "我们先聊了聊天气。用户喜欢用Go语言写后端服务。Go语言的并发模型很适合后端服务！今天中午吃了面条。" +
		"用户计划下周用Go语言重写支付服务；预算是3万元。\n好的。"
	est := memory.EstimateCounter{}
	got := Extractive(text, 25, est)
	if est.Count(got) > 25 || got == "" {
		t.Fatalf("%d tokens: %q", est.Count(got), got)
	}
	for _, bad := range []string{"天气", "面条", " "} {
		if strings.Contains(got, bad) {
			t.Errorf("kept %q: %q", bad, got)
		}
	}
	if !strings.Contains(got, "用户计划下周用Go语言重写支付服务；") {
		t.Errorf("lost the plan: %q", got)
	}
	checkSubsequence(t, text, got)
}

func TestExtractiveMixed(t *testing.T) {
	text := "The deploy uses NATS. 部署使用NATS集群。Lunch was ok. 午饭不错。" +
		"NATS JetStream stores the state of every session. 状态保存在NATS JetStream里。Bye!"
	for _, limit := range []int{5, 10, 20, 30} {
		got := Extractive(text, limit, nil)
		if memory.Estimate(got) > limit {
			t.Errorf("cap %d: %d tokens", limit, memory.Estimate(got))
		}
		// With room for the best sentences only, small talk is left out (below that, a short
		// sentence that fits beats a cut one).
		if (limit == 10 || limit == 20) && (strings.Contains(got, "Lunch") || strings.Contains(got, "午饭")) {
			t.Errorf("cap %d: kept small talk: %q", limit, got)
		}
		if !strings.HasSuffix(got, "…") {
			checkSubsequence(t, text, got)
		}
	}
}

func TestExtractiveCutsALoneLongSentence(t *testing.T) {
	for _, text := range []string{
		strings.Repeat("the deployment pipeline of the billing service ", 40),
		strings.Repeat("支付服务的部署流水线需要重新设计", 40),
	} {
		for _, counter := range counters {
			got := Extractive(text, 15, counter)
			if counter.Count(got) > 15 || !utf8.ValidString(got) {
				t.Errorf("%s: %d tokens: %q", counter.Name(), counter.Count(got), got)
			}
			prefix, ok := strings.CutSuffix(got, "…")
			if !ok || prefix == "" || !strings.HasPrefix(text, prefix) {
				t.Errorf("%s: not a cut prefix: %q", counter.Name(), got)
			}
		}
	}
}

func TestSplitSentences(t *testing.T) {
	for in, want := range map[string][]string{
		"Mr. Smith went home. He slept.":        {"Mr. Smith went home.", "He slept."},
		"Pi is 3.14 today! Really? Yes":         {"Pi is 3.14 today!", "Really?", "Yes"},
		"See e.g. this one. Next":               {"See e.g. this one.", "Next"},
		`He said "stop." Then he left...  Done`: {`He said "stop."`, "Then he left...", "Done"},
		"J. R. R. Tolkien wrote it.":            {"J. R. R. Tolkien wrote it."},
		"我喜欢Go。你呢？好的":                           {"我喜欢Go。", "你呢？", "好的"},
		"他说：“明天见。”然后走了！！":                       {"他说：“明天见。”", "然后走了！！"},
		"预算三万；时间两周。":                            {"预算三万；", "时间两周。"},
		"It works.真的吗？":                         {"It works.", "真的吗？"},
		"line one\nline two\r\n\nline three":    {"line one", "line two", "line three"},
		"head\n… [120 chars cut] …\ntail":       {"head", "tail"},
		"":                                      nil,
	} {
		if got := splitSentences(in, nil); fmt.Sprintf("%q", got) != fmt.Sprintf("%q", want) {
			t.Errorf("splitSentences(%q) = %q, want %q", in, got, want)
		}
	}
}

// checkSubsequence fails unless every sentence of out appears in text, in the same order.
func checkSubsequence(t *testing.T, text, out string) {
	t.Helper()
	pos := 0
	for _, u := range textUnits(out) {
		for _, s := range u.sents {
			i := strings.Index(text[pos:], s)
			if i < 0 {
				t.Errorf("sentence %q not in the text after offset %d (or out of order)\ntext: %q\nout:  %q", s, pos, text, out)
				return
			}
			pos += i + len(s)
		}
	}
}

// randomText builds text from English words, Chinese characters, numbers, punctuation and line
// breaks.
func randomText(rng *rand.Rand) string {
	words := strings.Fields("the user prefers Go and lives in Porto with Maria she will deploy billing " +
		"service on Kubernetes every Friday decided to move budget plan weather coffee tea likes")
	han := []rune("我你他喜欢用语言写服务器计划决定明天杭州北京会议客户数据库的了是在")
	puncts := []string{". ", "! ", "? ", "。", "！", "？", "；", ", ", "，", "\n", "\n\n", " "}
	var b strings.Builder
	for range rng.IntN(300) {
		switch k := rng.IntN(10); {
		case k < 5:
			b.WriteString(words[rng.IntN(len(words))])
			b.WriteByte(' ')
		case k < 7:
			for range 1 + rng.IntN(4) {
				b.WriteRune(han[rng.IntN(len(han))])
			}
		case k < 8:
			fmt.Fprintf(&b, "%d ", rng.IntN(10000))
		default:
			b.WriteString(puncts[rng.IntN(len(puncts))])
		}
	}
	return b.String()
}

func TestExtractiveProperties(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	for i := range 600 {
		text := randomText(rng)
		limit := rng.IntN(200)
		for _, counter := range counters {
			got := Extractive(text, limit, counter)
			if n := counter.Count(got); n > max(limit, 0) {
				t.Fatalf("case %d, %s: %d tokens > cap %d\ntext: %q\nout:  %q", i, counter.Name(), n, limit, text, got)
			}
			if !utf8.ValidString(got) {
				t.Fatalf("case %d: invalid UTF-8 %q", i, got)
			}
			trimmed := strings.TrimSpace(text)
			switch {
			case counter.Count(trimmed) <= limit:
				if got != trimmed {
					t.Fatalf("case %d: text fits but was changed", i)
				}
			case strings.HasSuffix(got, "…"):
				// The best sentence alone was too long: one cut sentence.
				if strings.Contains(got, "\n") {
					t.Fatalf("case %d: a cut sentence among others: %q", i, got)
				}
			default:
				checkSubsequence(t, text, got)
			}
		}
	}
}

func FuzzExtractive(f *testing.F) {
	f.Add("The user prefers Go. She lives in Porto!", 5)
	f.Add("我喜欢Go。你呢？好的", 3)
	f.Add("user: I decided.\nassistant: ok.\n\n\n", 2)
	f.Add(strings.Repeat("x", 500), 10)
	f.Fuzz(func(t *testing.T, text string, limit int) {
		limit %= 1000
		got := Extractive(text, limit, nil)
		if n := memory.Estimate(got); n > max(limit, 0) {
			t.Fatalf("%d tokens > cap %d: %q", n, limit, got)
		}
		if utf8.ValidString(text) && !utf8.ValidString(got) {
			t.Fatalf("invalid UTF-8 from valid input: %q", got)
		}
	})
}

// benchText is about 20 KB of mixed English and Chinese conversation.
func benchText() string {
	rng := rand.New(rand.NewPCG(1, 2))
	var b strings.Builder
	for b.Len() < 20_000 {
		if rng.IntN(2) == 0 {
			fmt.Fprintf(&b, "user: I prefer to deploy the billing service on Kubernetes every Friday at %d:00. ", rng.IntN(24))
			b.WriteString("The weather was nice and we talked about coffee.\n")
		} else {
			fmt.Fprintf(&b, "assistant: 好的，我记下了：下周三在杭州和王经理开会，预算是%d万元。", rng.IntN(100))
			b.WriteString("需要准备演示文稿和数据库迁移方案。\n")
		}
	}
	return b.String()
}

func BenchmarkExtractive(b *testing.B) {
	text := benchText()
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		Extractive(text, 500, memory.EstimateCounter{})
	}
}

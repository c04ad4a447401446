package memory

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
)

// TestMain points the HTTP proxy at a closed port and the tiktoken cache at an
// empty directory before any test runs, so that a tokenizer that tried to
// download its BPE file would fail here instead of passing on a networked box.
func TestMain(m *testing.M) {
	cache, err := os.MkdirTemp("", "agentmem-tiktoken-cache")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for k, v := range map[string]string{
		"HTTP_PROXY":         "http://127.0.0.1:1",
		"HTTPS_PROXY":        "http://127.0.0.1:1",
		"NO_PROXY":           "",
		"TIKTOKEN_CACHE_DIR": cache,
	} {
		os.Setenv(k, v)
	}
	code := m.Run()
	os.RemoveAll(cache)
	os.Exit(code)
}

// refEstimate is the estimate written from the definition, code point by
// code point, with the ceiling taken on the exact fraction (8*cjk+3*other)/12.
func refEstimate(s string) int {
	var cjk, other int
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		s = s[size:]
		if 0x4E00 <= r && r <= 0x9FFF {
			cjk++
		} else {
			other++
		}
	}
	n := 8*cjk + 3*other
	q := n / 12
	if n%12 != 0 {
		q++
	}
	return q
}

func TestEstimate(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want int
	}{
		{"empty", "", 0},
		{"one ascii", "a", 1},
		{"four ascii", "abcd", 1},
		{"five ascii", "abcde", 2},
		{"ascii words", "hello world", 3},
		{"ascii sentence", "The quick brown fox jumps over the lazy dog.", 11},
		{"two chinese", "你好", 2},
		{"three chinese", "你好吗", 2},
		{"four chinese", "你好世界", 3},
		{"twelve chinese", "我们今天去公园散步吧好吗", 8}, // 12 cjk -> exactly 8
		{"chinese with fullwidth comma", "你好，世界", 3},
		{"mixed", "我喜欢用Go写代码。", 6},
		{"U+4DFF x3 is other", strings.Repeat("\u4DFF", 3), 1},
		{"U+4E00 x3 is cjk", strings.Repeat("\u4E00", 3), 2},
		{"U+9FFF x3 is cjk", strings.Repeat("\u9FFF", 3), 2},
		{"U+A000 x3 is other", strings.Repeat("\uA000", 3), 1},
		{"U+4DFF x6", strings.Repeat("\u4DFF", 6), 2},
		{"U+4E00 x6", strings.Repeat("\u4E00", 6), 4},
		{"U+9FFF x6", strings.Repeat("\u9FFF", 6), 4},
		{"U+A000 x6", strings.Repeat("\uA000", 6), 2},
		{"emoji x4", "🙂🙂🙂🙂", 1},
		{"emoji x5", "🙂🙂🙂🙂🙂", 2},
		{"zwj family is 5 code points", "👨\u200d👩\u200d👧", 2},
		{"japanese kana is other", "ひらがな", 1},
		{"invalid utf-8 bytes count as other", "\xff\xfe\xfd\xfc\xfb", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Estimate(tc.in)
			if got != tc.want {
				t.Errorf("Estimate(%q) = %d, want %d", tc.in, got, tc.want)
			}
			if ref := refEstimate(tc.in); got != ref {
				t.Errorf("Estimate(%q) = %d, formula gives %d", tc.in, got, ref)
			}
			if c := (EstimateCounter{}).Count(tc.in); c != got {
				t.Errorf("EstimateCounter.Count(%q) = %d, want %d", tc.in, c, got)
			}
		})
	}
}

func FuzzEstimate(f *testing.F) {
	for _, s := range []string{"", "hello", "你好，世界", "\u4DFF\u4E00\u9FFF\uA000", "🙂", "\xff"} {
		f.Add(s, "x")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ea, eb, eab := Estimate(a), Estimate(b), Estimate(a+b)
		if ea != refEstimate(a) {
			t.Fatalf("Estimate(%q) = %d, formula gives %d", a, ea, refEstimate(a))
		}
		// A ceiling of a sum is at most the sum of the ceilings and at least
		// either part's. (An invalid UTF-8 tail of a joined to b can merge into
		// one code point, so compare only valid strings.)
		if utf8.ValidString(a) && utf8.ValidString(b) && (eab > ea+eb || eab < max(ea, eb)) {
			t.Fatalf("Estimate(%q)=%d, Estimate(%q)=%d, together %d", a, ea, b, eb, eab)
		}
	})
}

func TestNewCounter(t *testing.T) {
	for _, tc := range []struct {
		name, wantName string
		wantErr        bool
	}{
		{"", "estimate", false},
		{"estimate", "estimate", false},
		{"o200k", "o200k", false},
		{"o200k_base", "", true},
		{"cl100k", "", true},
		{"Estimate", "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := NewCounter(tc.name)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("NewCounter(%q) = %v, want an error", tc.name, c)
				}
				for _, s := range []string{fmt.Sprintf("%q", tc.name), "estimate", "o200k"} {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("error %q does not mention %s", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Name() != tc.wantName {
				t.Errorf("Name() = %q, want %q", c.Name(), tc.wantName)
			}
		})
	}
}

// o200kCounts were produced by o200k_base (tiktoken) and checked by running
// this package's counter.
var o200kCounts = []struct {
	text string
	want int
}{
	{"", 0},
	{"hello world", 2},
	{"Hello, world!", 4},
	{"The quick brown fox jumps over the lazy dog.", 10},
	{"1234567", 3},
	{"你好，世界", 3},
	{"我喜欢用Go写代码。", 7},
	{"🙂", 1},
	{"<|endoftext|>", 7}, // a special token in user text is plain text
}

func TestO200k(t *testing.T) {
	c, err := NewO200k()
	if err != nil {
		t.Fatalf("NewO200k offline: %v", err)
	}
	if c.Name() != "o200k" {
		t.Errorf("Name() = %q", c.Name())
	}
	for _, tc := range o200kCounts {
		if got := c.Count(tc.text); got != tc.want {
			t.Errorf("Count(%q) = %d, want %d", tc.text, got, tc.want)
		}
	}
	c2, err := NewO200k()
	if err != nil {
		t.Fatal(err)
	}
	if c2.enc != c.enc {
		t.Error("NewO200k loaded the encoding twice")
	}
	var _ Counter = c
	var _ Counter = EstimateCounter{}
}

func TestO200kConcurrent(t *testing.T) {
	c, err := NewO200k()
	if err != nil {
		t.Fatal(err)
	}
	const workers, rounds = 8, 20
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := range rounds {
				tc := o200kCounts[(w+r)%len(o200kCounts)]
				if got := c.Count(tc.text); got != tc.want {
					errs <- fmt.Errorf("worker %d: Count(%q) = %d, want %d", w, tc.text, got, tc.want)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// mapCounter is an exact counter with fixed answers, for testing.
type mapCounter map[string]int

func (m mapCounter) Count(s string) int { return m[s] }
func (mapCounter) Name() string         { return "map" }

func TestMeasureEstimateError(t *testing.T) {
	exact := mapCounter{"abcd": 2, "abcdefgh": 2, "abcdefghijkl": 6, "skipped": 0}
	// Estimates: 1, 2, 3. Relative errors: -0.5, 0, -0.5.
	got := MeasureEstimateError([]string{"abcd", "abcdefgh", "abcdefghijkl", "skipped", ""}, exact)
	want := ErrorStats{N: 3, MeanRel: 1.0 / 3, WorstRel: 0.5, MeanSigned: -1.0 / 3}
	if got.N != want.N || !near(got.MeanRel, want.MeanRel) || !near(got.WorstRel, want.WorstRel) || !near(got.MeanSigned, want.MeanSigned) {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	over := MeasureEstimateError([]string{"abcdefgh"}, mapCounter{"abcdefgh": 1})
	if !near(over.MeanSigned, 1) || !near(over.MeanRel, 1) {
		t.Fatalf("over-count: got %+v, want signed +1", over)
	}
	if z := MeasureEstimateError(nil, exact); z != (ErrorStats{}) {
		t.Fatalf("no texts: got %+v", z)
	}
}

func near(a, b float64) bool {
	d := a - b
	return d < 1e-9 && d > -1e-9
}

// benchText returns exactly 1024 bytes of para repeated, padded with spaces.
func benchText(para string) string {
	var sb strings.Builder
	for {
		for _, r := range para {
			if sb.Len()+utf8.RuneLen(r) > 1024 {
				return sb.String() + strings.Repeat(" ", 1024-sb.Len())
			}
			sb.WriteRune(r)
		}
	}
}

var (
	englishKB = benchText("The user said they prefer Go for backend services and Python for quick data analysis. " +
		"They are planning a trip to Kyoto in April, and asked for vegetarian restaurants near the station. ")
	chineseKB = benchText("用户说他更喜欢用Go写后端服务，用Python做快速的数据分析。" +
		"他计划四月去京都旅行，想找车站附近的素食餐厅，还问了樱花季的天气。")
)

func BenchmarkEstimate(b *testing.B) {
	for _, bc := range []struct{ name, text string }{{"english_1KB", englishKB}, {"chinese_1KB", chineseKB}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.text)))
			b.ReportAllocs()
			for b.Loop() {
				Estimate(bc.text)
			}
		})
	}
}

func BenchmarkO200k(b *testing.B) {
	c, err := NewO200k()
	if err != nil {
		b.Fatal(err)
	}
	for _, bc := range []struct{ name, text string }{{"english_1KB", englishKB}, {"chinese_1KB", chineseKB}} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(bc.text)))
			b.ReportAllocs()
			for b.Loop() {
				c.Count(bc.text)
			}
		})
	}
}

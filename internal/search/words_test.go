package search

import (
	"bytes"
	"compress/gzip"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestWords(t *testing.T) {
	tests := []struct {
		name string
		text string
		want []string
	}{
		{"empty", "", nil},
		{"english", "I love writing Go", nil},
		{"one character", "猫", nil},
		{"a word of three characters", "我喜欢苹果汁！", []string{"喜欢", "苹果汁"}},
		{"a sentence", "Bart在新开的冰淇淋店尝试了芒果口味的冰淇淋，感到非常开心。",
			[]string{"冰淇淋", "尝试", "芒果", "口味", "冰淇淋", "感到", "非常", "开心"}},
		{"function words dropped", "我们什么都有", nil},
		{"runs split by other scripts", "学校zq3k0x8ab1图书馆", []string{"学校", "图书馆"}},
		{"kana is not segmented", "北京タワーに行った", []string{"北京"}},
		{"full-width punctuation splits", "大学生，研究生", []string{"大学生", "研究生"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Words(tt.text); !slices.Equal(got, tt.want) {
				t.Errorf("Words(%q)\n got %q\nwant %q", tt.text, got, tt.want)
			}
		})
	}
}

// TestWordsMostProbable checks the segmentation's choice between overlapping words: 研究生命
// is 研究 生命 (research life) by the counts, not 研究生 命 (graduate student, fate).
func TestWordsMostProbable(t *testing.T) {
	if got, want := Words("研究生命起源"), []string{"研究", "生命", "起源"}; !slices.Equal(got, want) {
		t.Errorf("Words(研究生命起源) = %q, want %q", got, want)
	}
	if got, want := Words("他是研究生"), []string{"研究生"}; !slices.Equal(got, want) {
		t.Errorf("Words(他是研究生) = %q, want %q", got, want)
	}
}

// TestWordsLongRun checks that a run of Han characters longer than maxRun is segmented in
// pieces: every word is found but those the two cuts fall in.
func TestWordsLongRun(t *testing.T) {
	text := strings.Repeat("图书馆", 200) // 600 characters, cut at 256 and 512
	n := 0
	for _, w := range Words(text) {
		if w == "图书馆" {
			n++
		}
	}
	if n < 198 || n > 200 {
		t.Errorf("Words of 200 × 图书馆 in one run: %d × 图书馆, want 198 to 200", n)
	}
}

// TestWordTable checks the embedded dictionary: its size, and that costs follow the counts.
func TestWordTable(t *testing.T) {
	tab := hanWords()
	n := 0
	for _, s := range tab.slots {
		if s&maxCost != 0 {
			n++
		}
	}
	if n < 100_000 || n > 200_000 {
		t.Errorf("the dictionary has %d words, want 100,000 to 200,000", n)
	}
	if tab.maxLen < 4 || tab.maxLen > 8 {
		t.Errorf("the longest word has %d characters, want 4 to 8", tab.maxLen)
	}
	cost := func(w string) int {
		c, _, _ := tab.lookup(hashString(w))
		if c == 0 {
			t.Fatalf("%q is not a word of the dictionary", w)
		}
		return int(c)
	}
	if !(cost("的") < cost("苹果") && cost("苹果") < cost("苹果汁") && cost("苹果汁") < int(tab.unknown)) {
		t.Errorf("costs 的 %d, 苹果 %d, 苹果汁 %d, unknown %d: want increasing", cost("的"), cost("苹果"), cost("苹果汁"), tab.unknown)
	}
	if _, _, ok := tab.lookup(hashString("苹果汁店长")); ok {
		t.Error("苹果汁店长 is in the dictionary")
	}
	if c, prefix, ok := tab.lookup(hashString("冰淇")); !ok || !prefix || c != 0 {
		t.Errorf("冰淇: cost %d, prefix %v, found %v; want the start of a word (冰淇淋) and no word", c, prefix, ok)
	}
	if _, prefix, _ := tab.lookup(hashString("苹果")); !prefix {
		t.Error("苹果: want the start of a longer word (苹果汁)")
	}
}

func TestReadWordTableErrors(t *testing.T) {
	for _, tt := range []struct{ name, text, want string }{
		{"no total", "", "line 1"},
		{"bad total", "many\n苹果 3\n", "line 1"},
		{"no count", "100\n苹果\n", "line 2"},
		{"count above total", "100\n苹果 300\n", "line 2"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := readWordTable(gzipped(t, tt.text))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("readWordTable(%q) = %v, want an error with %q", tt.text, err, tt.want)
			}
		})
	}
	if _, err := readWordTable([]byte("not gzip")); err == nil {
		t.Error("readWordTable of bytes that are not gzip: no error")
	}
}

// FuzzWords checks that every word is a substring of the text, of two or more Han characters,
// and that the words come in text order without overlapping.
func FuzzWords(f *testing.F) {
	for _, s := range []string{"我喜欢苹果汁！", "研究生命起源", "東京タワー", "a图书馆b", "\xff图书", strings.Repeat("的", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		from := 0
		for _, w := range Words(text) {
			i := strings.Index(text[from:], w)
			if i < 0 {
				t.Fatalf("Words(%q): %q is not in the text after byte %d", text, w, from)
			}
			from += i + len(w)
			if utf8.RuneCountInString(w) < 2 {
				t.Fatalf("Words(%q): %q has fewer than two characters", text, w)
			}
			for _, r := range w {
				if !isHan(r) {
					t.Fatalf("Words(%q): %q holds %q, not a Han character", text, w, r)
				}
			}
		}
	})
}

func gzipped(t *testing.T, text string) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	if _, err := zw.Write([]byte(text)); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

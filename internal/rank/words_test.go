package rank

import (
	"fmt"
	"math"
	"slices"
	"testing"
)

// wordsDocs are a user's memories where a query's word of three characters (大学生, a college
// student) is in one document as a word and in others only as its two bigrams in other words
// (大学, a university; 学生, students), more often.
var wordsDocs = []Doc{
	{ID: "cousin", Text: "表哥是一名大学生，今年读大二。", Kind: "fact"},
	{ID: "visit", Text: "我们去大学参观，看到大学里很多学生在图书馆学习。", Kind: "fact"},
	{ID: "teacher", Text: "妈妈在大学教书，她的学生都很喜欢她。", Kind: "fact"},
	{ID: "lunch", Text: "中午和同事一起吃了牛肉面。", Kind: "fact"},
	{ID: "park", Text: "周末带女儿去公园放风筝。", Kind: "fact"},
	{ID: "phone", Text: "新买的手机屏幕摔坏了。", Kind: "fact"},
}

// TestChineseWordsMatchWord checks that a query word found whole in a document ranks it above
// documents that hold only the word's bigrams, apart: with the bigrams alone the documents
// that repeat 大学 and 学生 rank first.
func TestChineseWordsMatchWord(t *testing.T) {
	const query = "那个大学生最近怎么样？"
	for _, tt := range []struct {
		weight float64
		first  string
	}{
		{0, "visit"},     // bigrams only: 大学 twice, 学生 once
		{0.25, "cousin"}, // the word 大学生
		{Off, "visit"},   // off
		{1, "cousin"},    // a word weighing as much as a bigram
	} {
		t.Run(fmt.Sprint(tt.weight), func(t *testing.T) {
			ix := NewIndex(Config{ChineseWords: tt.weight})
			ix.Add(wordsDocs...)
			hits := ix.Search(query, 3)
			if len(hits) == 0 || hits[0].ID != tt.first {
				t.Errorf("ChineseWords %v: %q ranks %v, want %s first", tt.weight, query, ids(hits), tt.first)
			}
		})
	}
}

// TestChineseWordsWithoutPrepare checks that documents prepared without the index (rank.Prepare,
// which does not look for words) are indexed with their words all the same, and that
// RemoveDocs finds every entry of a document indexed with words.
func TestChineseWordsWithoutPrepare(t *testing.T) {
	cfg := Config{ChineseWords: 0.25}
	byIndex, byPackage := NewIndex(cfg), NewIndex(cfg)
	empty := byPackage.Bytes()
	var pi, pp []Prepared
	for _, d := range wordsDocs {
		pi, pp = append(pi, byIndex.Prepare(d)), append(pp, Prepare(d))
	}
	byIndex.AddPrepared(pi...)
	byPackage.AddPrepared(pp...)
	const query = "大学生"
	a, b := byIndex.Search(query, 0), byPackage.Search(query, 0)
	if !slices.EqualFunc(a, b, func(x, y Hit) bool { return x.ID == y.ID && math.Abs(x.Relevance-y.Relevance) < 1e-12 }) {
		t.Errorf("%s: Index.Prepare gives %v, Prepare %v", query, a, b)
	}
	if byIndex.Bytes() != byPackage.Bytes() {
		t.Errorf("Bytes: %d with Index.Prepare, %d with Prepare", byIndex.Bytes(), byPackage.Bytes())
	}
	if got := ids(a); len(got) == 0 || got[0] != "cousin" {
		t.Errorf("%s: %v, want cousin first", query, got)
	}
	byPackage.RemoveDocs(wordsDocs...)
	if byPackage.Len() != 0 || byPackage.Bytes() != empty {
		t.Errorf("after RemoveDocs of every document: Len %d, Bytes %d, want 0 and %d", byPackage.Len(), byPackage.Bytes(), empty)
	}
}

// TestChineseWordsOffByDefault checks that the default index holds no word terms: the same
// terms, and so the same bytes, as one with ChineseWords switched off.
func TestChineseWordsOffByDefault(t *testing.T) {
	def, off, on := NewIndex(Config{}), NewIndex(Config{ChineseWords: Off}), NewIndex(Config{ChineseWords: 0.25})
	for _, ix := range []*Index{def, off, on} {
		ix.Add(wordsDocs...)
	}
	if def.Bytes() != off.Bytes() || on.Bytes() <= def.Bytes() {
		t.Errorf("Bytes: default %d, off %d, on %d; want default = off < on", def.Bytes(), off.Bytes(), on.Bytes())
	}
}

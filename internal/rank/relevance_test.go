package rank

// TestRelevance came from internal/search, where it ranked with a BM25 index only tests used;
// it now ranks with this package's Index, the retriever's.

import (
	"slices"
	"testing"
)

// relevanceCorpus is a tiny memory of facts, in English and Chinese, with distractors that
// share words with the queries.
var relevanceCorpus = map[string]string{
	"en-go":       "I love writing Go, it's my favourite language",
	"en-pizza":    "My sister's favourite food is pizza",
	"en-rust":     "Bob likes Rust",
	"en-python":   "The team uses Python for data analysis",
	"en-meeting":  "The weekly meeting moved to Thursdays at 10am",
	"en-language": "She speaks three languages",
	"zh-go":       "我最喜欢的编程语言是 Go",
	"zh-pizza":    "我妹妹最喜欢的食物是披萨",
	"zh-parcel":   "取件码改成了zq3k0x8ab1，明天去拿",
	"zh-meeting":  "每周的例会改到周四上午十点",
	"zh-language": "她会说三种语言",
	"ja-tokyo":    "東京タワーに行きました",
}

func TestRelevance(t *testing.T) {
	tests := []struct {
		query string
		want  string   // the best match
		above []string // ranked below want, if matched at all
	}{
		{"What is my favourite programming language?", "en-go",
			[]string{"en-pizza", "en-rust", "en-language", "en-python"}},
		{"我最喜欢的编程语言是什么？", "zh-go",
			[]string{"zh-pizza", "zh-language"}},
		{"my sister's favourite food", "en-pizza", []string{"en-go"}},
		{"我妹妹喜欢吃什么", "zh-pizza", []string{"zh-go"}},
		{"取件码是多少", "zh-parcel", nil},
		{"zq3k0x8ab1", "zh-parcel", nil},
		{"When is the weekly meeting?", "en-meeting", nil},
		{"例会是周几", "zh-meeting", nil},
		{"What does Bob like?", "en-rust", nil},
		{"ＧＯ语言", "zh-go", []string{"zh-language"}},
		{"東京", "ja-tokyo", nil},
	}
	ix := NewIndex(Config{})
	for id, text := range relevanceCorpus {
		ix.Add(Doc{ID: id, Text: text, Kind: "fact"})
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			hits := ix.Search(tt.query, 0)
			if len(hits) == 0 || hits[0].ID != tt.want {
				t.Fatalf("Search(%q) = %v, want %s first", tt.query, hits, tt.want)
			}
			for _, h := range hits[1:] {
				if slices.Contains(tt.above, h.ID) && !(h.Relevance < hits[0].Relevance) {
					t.Errorf("Search(%q): %s scores %v, want below %s's %v",
						tt.query, h.ID, h.Relevance, tt.want, hits[0].Relevance)
				}
			}
			t.Logf("%q: %v", tt.query, hits)
		})
	}
}

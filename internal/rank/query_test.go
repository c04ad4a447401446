package rank

import (
	"reflect"
	"slices"
	"testing"
)

func TestParseQuery(t *testing.T) {
	got := ParseQuery("hello there\n Assistant: hi!\n\nUSER:again\ntool:\nuser:name: x\nusers: plural\n")
	want := []QueryLine{{"", "hello there"}, {"assistant", "hi!"}, {"user", "again"}, {"user", "name: x"}, {"", "users: plural"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ParseQuery = %q, want %q", got, want)
	}
}

// topOf is the id of the first hit of query over docs with cfg.
func topOf(t *testing.T, cfg Config, query string, docs ...Doc) string {
	t.Helper()
	ix := NewIndex(cfg)
	ix.Add(docs...)
	hits := ix.Search(query, 2)
	if len(hits) == 0 {
		t.Fatalf("no hits for %q", query)
	}
	return hits[0].ID
}

func TestQuerySpeaker(t *testing.T) {
	docs := []Doc{{ID: "a", Text: "my guitar"}, {ID: "b", Text: "my piano"}}
	// The assistant says piano twice, the user guitar once: the user's word wins, unless the
	// speaker weighting is off; a role marker is not a term.
	q := "I played the guitar\nassistant: the piano? a piano is nice"
	if got := topOf(t, Config{}, q, docs...); got != "a" {
		t.Errorf("default: top %q, want the user's guitar", got)
	}
	if got := topOf(t, Config{QuerySpeaker: Off}, q, docs...); got != "b" {
		t.Errorf("speaker off: top %q, want the repeated piano", got)
	}
	if got := topOf(t, Config{}, "assistant: piano", docs...); got != "b" {
		t.Errorf("a marked line alone: top %q, want piano", got)
	}
	if hits := NewIndex(Config{}).Search("assistant:", 5); hits != nil {
		t.Errorf("a bare marker found %v", hits)
	}
}

func TestQueryRecency(t *testing.T) {
	docs := []Doc{{ID: "a", Text: "my guitar"}, {ID: "b", Text: "my piano"}}
	q := "guitar, guitar\npiano"
	if got := topOf(t, Config{QueryRecency: 0.4}, q, docs...); got != "b" {
		t.Errorf("recency 0.4: top %q, want the last line's piano", got)
	}
	if got := topOf(t, Config{}, q, docs...); got != "a" {
		t.Errorf("default (recency off): top %q, want the repeated guitar", got)
	}
}

func TestValidateQueryWeights(t *testing.T) {
	for _, c := range []Config{{QueryRecency: 1.5}, {QueryRecency: -2}, {QuerySpeaker: 2}} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: no error", c)
		}
	}
	if err := (Config{QueryRecency: Off, QuerySpeaker: Off}).Validate(); err != nil {
		t.Error(err)
	}
}

func TestQueryText(t *testing.T) {
	for q, want := range map[string]string{
		"what pet do I have?":                        "what pet do I have?",
		"I have a cat\nassistant: what is its name?": "I have a cat\nwhat is its name?",
		"user: hi\n\n  ASSISTANT:  你好 ":              "hi\n你好",
	} {
		if got := QueryText(q); got != want {
			t.Errorf("QueryText(%q) = %q, want %q", q, got, want)
		}
	}
}

// TestQuestionWordsDropped: a Chinese question's asking words and the pairs across them are no
// query terms; with KeepQuestionWords they are.
func TestQuestionWordsDropped(t *testing.T) {
	terms := func(c Config) []string {
		var out []string
		c = c.withDefaults()
		for _, q := range c.queryTerms("小明的哥哥叫什么名字？") {
			out = append(out, q.term)
		}
		return out
	}
	got := terms(Config{})
	for _, bad := range []string{"叫什", "么名", "什", "么"} {
		if slices.Contains(got, bad) {
			t.Errorf("query terms %q hold %q", got, bad)
		}
	}
	for _, want := range []string{"小明", "哥哥", "名字", "叫"} {
		if !slices.Contains(got, want) {
			t.Errorf("query terms %q lack %q", got, want)
		}
	}
	if kept := terms(Config{KeepQuestionWords: true}); !slices.Contains(kept, "么名") {
		t.Errorf("with KeepQuestionWords, query terms %q lack 么名", kept)
	}
}

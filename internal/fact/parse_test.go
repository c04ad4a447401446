package fact

import (
	"errors"
	"slices"
	"testing"
	"time"
)

var parseTurns = []Turn{
	{ID: "t1", Role: "user", Content: "I live in Paris and I love Go.", Time: time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)},
	{ID: "t2", Role: "assistant", Content: "Nice!", Time: time.Date(2026, 5, 1, 9, 1, 0, 0, time.UTC)},
	{ID: "t3", Role: "user", Content: "Our project uses Go.", Time: time.Date(2026, 5, 1, 9, 2, 0, 0, time.UTC)},
}

func TestParseValid(t *testing.T) {
	answer := `{"facts":[
		{"content":"The user lives in Paris","category":"identity","key":"user.city","confidence":0.95,"turns":["t1"]},
		{"content":"The user loves Go","category":"Preference","key":"","confidence":1.7,"turns":["t1","nope"]},
		{"content":"The user's project uses Go","category":"project","key":"project.language","confidence":-2,"turns":["t3","t1","t3"]},
		{"content":"The user is friendly","category":"other","turns":["ghost"]}
	],"notes":"ignored"}`
	got, err := Parse(answer, parseTurns)
	if err != nil {
		t.Fatal(err)
	}
	want := []Candidate{
		{Content: "The user lives in Paris", Category: CategoryIdentity, Key: "user.city", Confidence: 0.95, Provenance: []string{"t1"}, Time: parseTurns[0].Time},
		{Content: "The user loves Go", Category: CategoryPreference, Confidence: 1, Provenance: []string{"t1"}, Time: parseTurns[0].Time},
		{Content: "The user's project uses Go", Category: CategoryProject, Key: "project.language", Confidence: 0, Provenance: []string{"t1", "t3"}, Time: parseTurns[0].Time},
		{Content: "The user is friendly", Category: CategoryOther, Confidence: 0.5, Provenance: []string{"t1", "t3"}, Time: parseTurns[0].Time},
	}
	if len(got) != len(want) {
		t.Fatalf("Parse = %+v, want %+v", got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Content != w.Content || g.Category != w.Category || g.Key != w.Key || g.Confidence != w.Confidence ||
			!slices.Equal(g.Provenance, w.Provenance) || !g.Time.Equal(w.Time) {
			t.Errorf("candidate %d = %+v, want %+v", i, g, w)
		}
	}
}

func TestParseFenced(t *testing.T) {
	for _, answer := range []string{
		"```json\n{\"facts\":[{\"content\":\"The user likes tea\",\"category\":\"preference\",\"turns\":[\"t1\"]}]}\n```",
		"```\n{\"facts\":[{\"content\":\"The user likes tea\",\"category\":\"preference\",\"turns\":[\"t1\"]}]}\n```\n",
		"  <think>The user said they like tea.</think>\n```JSON\n{\"facts\":[{\"content\":\"The user likes tea\",\"category\":\"preference\",\"turns\":[\"t1\"]}]}```",
	} {
		got, err := Parse(answer, parseTurns)
		if err != nil {
			t.Errorf("Parse(%q): %v", answer, err)
			continue
		}
		if len(got) != 1 || got[0].Content != "The user likes tea" {
			t.Errorf("Parse(%q) = %+v", answer, got)
		}
	}
}

func TestParseEmpty(t *testing.T) {
	got, err := Parse(`{"facts":[]}`, parseTurns)
	if err != nil || len(got) != 0 {
		t.Errorf("Parse(empty facts) = %+v, %v; want nothing and no error", got, err)
	}
}

func TestParseMergesDuplicates(t *testing.T) {
	got, err := Parse(`{"facts":[
		{"content":"The user likes tea.","category":"preference","confidence":0.4,"turns":["t3"]},
		{"content":"the user likes TEA","category":"preference","confidence":0.8,"turns":["t1"]}]}`, parseTurns)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !slices.Equal(got[0].Provenance, []string{"t1", "t3"}) || got[0].Confidence != 0.8 || !got[0].Time.Equal(parseTurns[0].Time) {
		t.Errorf("Parse = %+v, want one fact from t1 and t3 with confidence 0.8", got)
	}
}

func TestParseFallbackProvenance(t *testing.T) {
	turns := []Turn{{ID: "a1", Role: "assistant", Content: "Hi"}, {ID: "s1", Role: "system", Content: "x"}}
	got, err := Parse(`{"facts":[{"content":"The user is new","category":"other","turns":[]}]}`, turns)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !slices.Equal(got[0].Provenance, []string{"a1", "s1"}) {
		t.Errorf("Parse = %+v, want provenance of every turn when none is the user's", got)
	}
}

func TestParseMalformed(t *testing.T) {
	for name, answer := range map[string]string{
		"empty":              "",
		"blank":              "   \n",
		"not json":           "Here are the facts: the user likes tea.",
		"truncated":          `{"facts":[{"content":"The user likes tea","category":"preference"`,
		"trailing text":      `{"facts":[]} and that is all`,
		"two objects":        `{"facts":[]}{"facts":[]}`,
		"array":              `[{"content":"The user likes tea","category":"preference"}]`,
		"null":               `null`,
		"no facts":           `{"memories":[]}`,
		"facts null":         `{"facts":null}`,
		"facts object":       `{"facts":{"content":"x","category":"other"}}`,
		"fact null":          `{"facts":[null]}`,
		"missing content":    `{"facts":[{"category":"preference","turns":["t1"]}]}`,
		"blank content":      `{"facts":[{"content":"  ","category":"preference","turns":["t1"]}]}`,
		"content number":     `{"facts":[{"content":42,"category":"preference"}]}`,
		"missing category":   `{"facts":[{"content":"The user likes tea"}]}`,
		"bad category":       `{"facts":[{"content":"The user likes tea","category":"hobby"}]}`,
		"confidence string":  `{"facts":[{"content":"The user likes tea","category":"preference","confidence":"high"}]}`,
		"turns string":       `{"facts":[{"content":"The user likes tea","category":"preference","turns":"t1"}]}`,
		"turn number":        `{"facts":[{"content":"The user likes tea","category":"preference","turns":[1]}]}`,
		"bad key":            `{"facts":[{"content":"The user likes tea","category":"preference","key":"favourite drink"}]}`,
		"unterminated fence": "```json\n{\"facts\":[]}",
		"other fence":        "```yaml\nfacts: []\n```",
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Parse(answer, parseTurns)
			if !errors.Is(err, ErrMalformed) {
				t.Errorf("Parse(%q) error = %v, want ErrMalformed", answer, err)
			}
			if got != nil {
				t.Errorf("Parse(%q) = %+v, want no candidates", answer, got)
			}
		})
	}
}

// TestParseNeverPartial: one bad fact among good ones fails the whole answer.
func TestParseNeverPartial(t *testing.T) {
	answer := `{"facts":[
		{"content":"The user lives in Paris","category":"identity","key":"user.city","turns":["t1"]},
		{"content":"The user loves Go","category":"preference","turns":["t1"]},
		{"content":"","category":"preference","turns":["t1"]}]}`
	got, err := Parse(answer, parseTurns)
	if !errors.Is(err, ErrMalformed) || got != nil {
		t.Errorf("Parse = %+v, %v; want no candidates and ErrMalformed", got, err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add(`{"facts":[{"content":"The user likes tea","category":"preference","key":"user.drink","confidence":0.9,"turns":["t1"]}]}`)
	f.Add("```json\n{\"facts\":[]}\n```")
	f.Add(`{"facts":[null]}`)
	f.Add(`<think>x</think>{"facts":[]}`)
	f.Fuzz(func(t *testing.T, answer string) {
		got, err := Parse(answer, parseTurns)
		if err != nil {
			if !errors.Is(err, ErrMalformed) || got != nil {
				t.Fatalf("Parse(%q) = %+v, %v", answer, got, err)
			}
			return
		}
		for _, c := range got {
			if c.Content == "" || !ValidCategory(c.Category) || c.Confidence < 0 || c.Confidence > 1 || len(c.Provenance) == 0 {
				t.Fatalf("Parse(%q) gave a bad candidate %+v", answer, c)
			}
		}
	})
}

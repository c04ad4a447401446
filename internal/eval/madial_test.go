package eval

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

var madialDir = filepath.Join("testdata", "madial")

func TestLoadMADialMemories(t *testing.T) {
	zh, borrowed, err := LoadMADialMemories(madialDir, "zh")
	if err != nil {
		t.Fatal(err)
	}
	if borrowed != 0 || len(zh) != 4 {
		t.Fatalf("zh: %d memories, %d borrowed", len(zh), borrowed)
	}
	var ids []string
	for _, m := range zh {
		ids = append(ids, m.ID)
	}
	if want := []string{"1", "2", "3", "4"}; !slices.Equal(ids, want) {
		t.Errorf("ids %q, want %q (\"04\" normalised, sorted by value)", ids, want)
	}
	m4 := zh[3]
	if m4.TurnID != "madial:zh:4" || m4.User != "u2" || m4.UserID != "2" || !m4.Date.Equal(time.Date(2024, 10, 23, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("memory 4: %+v", m4)
	}

	en, borrowed, err := LoadMADialMemories(madialDir, "en")
	if err != nil {
		t.Fatal(err)
	}
	if borrowed != 4 || len(en) != 4 {
		t.Fatalf("en: %d memories, %d borrowed, want 4 and 4", len(en), borrowed)
	}
	for i, m := range en {
		if m.User != zh[i].User || m.TurnID != "madial:en:"+m.ID {
			t.Errorf("en memory %s: user %q turn %q", m.ID, m.User, m.TurnID)
		}
	}

	// Without the zh file the en memories have no user.
	dir := t.TempDir()
	for _, name := range []string{"MADial-Bench-en-memory.json", "MADial-Bench-en-dialogue.json"} {
		b, err := os.ReadFile(filepath.Join(madialDir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := LoadMADialMemories(dir, "en"); err == nil || !strings.Contains(err.Error(), "no user-id") {
		t.Errorf("en without zh: %v", err)
	}
}

func TestLoadMADialMemoriesRejectsBadInput(t *testing.T) {
	for name, body := range map[string]string{
		"no event":  `{"1": {"time": "2023-12-25", "event": " ", "user-id": 1}}`,
		"bad time":  `{"1": {"time": "Christmas", "event": "x", "user-id": 1}}`,
		"duplicate": `{"1": {"time": "2023-12-25", "event": "x", "user-id": 1}}` + "\n" + `{"01": {"time": "2023-12-25", "event": "y", "user-id": 1}}`,
		"not json":  `{"1": `,
	} {
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, "MADial-Bench-zh-memory.json"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, _, err := LoadMADialMemories(dir, "zh"); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestMADialSessions(t *testing.T) {
	mems, _, err := LoadMADialMemories(madialDir, "zh")
	if err != nil {
		t.Fatal(err)
	}
	ss := MADialSessions(mems, "madial-zh")
	if len(ss) != 4 {
		t.Fatalf("%d sessions", len(ss))
	}
	s := ss[2]
	if s.Tenant != "madial-zh" || s.ID != "u2_m3" || s.User != "u2" || len(s.Turns) != 1 {
		t.Fatalf("session %+v", s)
	}
	turn := s.Turns[0]
	if turn.ID != "madial:zh:3" || turn.Role != "user" || turn.Content != "Lisa养了一只小猫，取名叫雪球。" ||
		!turn.Time.Equal(time.Date(2023, 7, 1, 12, 0, 0, 0, time.UTC)) || turn.Metadata["memory_id"] != "3" ||
		turn.Metadata["scene"] != "生活类" || turn.Session != "u2_m3" || turn.User != "u2" {
		t.Errorf("turn %+v", turn)
	}
}

func TestMADialQuery(t *testing.T) {
	dialogue := []string{"<BOD>\n", "<Bart>:\"Hello there\"\n", "<Assistant>: “Hi!”\n", "<Bart>::  「Guess what」\n", "<Assistant>:\"test turn\"\n", "<EOD>\n"}
	tests := []struct {
		before, max int
		want        string
	}{
		{4, 0, "Hello there\nassistant: Hi!\nGuess what"},
		{4, 1000, "Hello there\nassistant: Hi!\nGuess what"},
		{2, 1000, "Hello there"},
		{4, 14, "assistant: Hi!\nGuess what"}, // whole lines that fit; markers do not count
		{4, 13, "Guess what"},
		{4, 5, "what"}, // the last line alone is too long: its last characters
		{0, 1000, ""},
		{99, 1000, "Hello there\nassistant: Hi!\nGuess what\nassistant: test turn"},
	}
	for _, tt := range tests {
		if got := MADialQuery(dialogue, tt.before, tt.max); got != tt.want {
			t.Errorf("MADialQuery(before %d, max %d) = %q, want %q", tt.before, tt.max, got, tt.want)
		}
	}
	zh := []string{"<BOD>\n", "<Lisa>:\"我的小猫今天特别调皮。\"\n", "<Assistant>:\"它做了什么？\"\n"}
	if got := MADialQuery(zh, 3, 8); got != "assistant: 它做了什么？" {
		t.Errorf("zh cut = %q", got)
	}
}

func TestMADialSet(t *testing.T) {
	set, notes, err := MADialSet(madialDir, "zh")
	if err != nil {
		t.Fatal(err)
	}
	if len(set.Sessions) != 4 || len(set.Queries) != 2 {
		t.Fatalf("%d sessions, %d queries", len(set.Sessions), len(set.Queries))
	}
	q := set.Queries[1]
	if q.ID != "1" || q.Group != "u2" || q.Tenant != "madial-zh" || q.Request.User != "u2" || *q.Request.Limit != 20 ||
		q.Request.Query != "我的小猫今天特别调皮。\nassistant: 它做了什么？" ||
		!q.Request.At.Equal(time.Date(2024, 10, 24, 12, 0, 0, 0, time.UTC)) {
		t.Errorf("query %+v %q", q, q.Request.Query)
	}
	if gold := q.Detail["gold"].([]string); !slices.Equal(gold, []string{"madial:zh:3", "madial:zh:4"}) {
		t.Errorf("gold %q (99 names no memory)", gold)
	}
	if !q.IsTurn("madial:zh:3") || q.IsTurn("madial:en:3") || q.IsTurn("madial:zh:99") || q.IsTurn("3") {
		t.Error("IsTurn accepts the wrong ids")
	}
	m := q.Score([]string{"madial:zh:3", "madial:zh:1", "madial:zh:2", "madial:zh:9", "madial:zh:8", "madial:zh:4"})
	for k, want := range map[string]float64{"R@1": 0.5, "R@3": 0.5, "R@5": 0.5, "R@10": 1, "R@20": 1, "hit@5": 1, "hit@10": 1} {
		if m[k] != want {
			t.Errorf("%s = %v, want %v", k, m[k], want)
		}
	}
	joined := strings.Join(notes, "\n")
	if !strings.Contains(joined, "1 dialogue(s) skipped") || !strings.Contains(joined, "1 relevant id(s) name no memory") {
		t.Errorf("notes: %s", joined)
	}
}

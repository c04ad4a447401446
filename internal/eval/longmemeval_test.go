package eval

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/agentmem/agentmem/pkg/events"
)

func TestReadLongMemEvalPlainAndGzip(t *testing.T) {
	plain := filepath.Join("testdata", "lme_shapes.json")
	raw, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(raw); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	zipped := filepath.Join(t.TempDir(), "any-name.json.gz")
	if err := os.WriteFile(zipped, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{plain, zipped} {
		items, err := ReadLongMemEval(path)
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if len(items) != 2 || items[0].QuestionID != "abc_abs" || items[1].QuestionID != "q.odd/1" {
			t.Fatalf("%s: read %d items: %+v", path, len(items), items)
		}
		if !items[0].Abstention() || items[1].Abstention() {
			t.Errorf("%s: abstention flags wrong", path)
		}
		if want := []string{"sharegpt_x.y", "42", "sharegpt_x.y", "late"}; !slices.Equal(items[1].HaystackSessionIDs, want) {
			t.Errorf("%s: session ids %q, want %q (numbers as text)", path, items[1].HaystackSessionIDs, want)
		}
	}
}

func TestReadLongMemEvalRejectsOtherShapes(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"object.json":  `{"question_id": "x"}`,
		"noid.json":    `[{"question": "x"}]`,
		"broken.json":  `[{"question_id": "x"`,
		"badtype.json": `[{"question_id": "x", "haystack_dates": 3}]`,
	} {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := ReadLongMemEval(path); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := ReadLongMemEval(filepath.Join(dir, "missing.json")); err == nil {
		t.Error("missing file: no error")
	}
}

func TestPrepareLongMemEval(t *testing.T) {
	items, err := ReadLongMemEval(filepath.Join("testdata", "lme_shapes.json"))
	if err != nil {
		t.Fatal(err)
	}
	q, err := PrepareLongMemEval(items[1])
	if err != nil {
		t.Fatal(err)
	}
	if q.User != "q_odd_1" {
		t.Errorf("user %q", q.User)
	}
	if q.Repeats != 1 || q.Blank != 1 {
		t.Errorf("repeats %d blank %d, want 1 and 1", q.Repeats, q.Blank)
	}
	var sessions []string
	for _, s := range q.Sessions {
		sessions = append(sessions, s.ID)
		if s.Tenant != LMETenant || s.User != q.User {
			t.Errorf("session %s: tenant %q user %q", s.ID, s.Tenant, s.User)
		}
	}
	if want := []string{"q_odd_1_sharegpt_x_y", "q_odd_1_42", "q_odd_1_late"}; !slices.Equal(sessions, want) {
		t.Fatalf("sessions %q, want %q", sessions, want)
	}
	first := q.Sessions[0].Turns
	if len(first) != 2 {
		t.Fatalf("first session has %d turns, want 2 (the blank one left out)", len(first))
	}
	day := time.Date(2023, 5, 1, 10, 0, 0, 0, time.UTC)
	if first[0].ID != "q_odd_1:sharegpt_x_y:0" || !first[0].Time.Equal(day) || first[0].Role != events.RoleUser ||
		first[0].Session != "q_odd_1_sharegpt_x_y" || first[0].User != "q_odd_1" {
		t.Errorf("turn 0: %+v", first[0])
	}
	// The blank turn 1 is skipped, the index stays the data's; an unknown role becomes user.
	if first[1].ID != "q_odd_1:sharegpt_x_y:2" || !first[1].Time.Equal(day.Add(2*time.Second)) || first[1].Role != events.RoleUser {
		t.Errorf("turn 2: %+v", first[1])
	}
	if want := []string{"sharegpt_x_y", "42"}; !slices.Equal(q.GoldSessions, want) {
		t.Errorf("gold sessions %q, want %q (the one not in the haystack left out)", q.GoldSessions, want)
	}
	if want := []string{"q_odd_1:42:0", "q_odd_1:sharegpt_x_y:0"}; !slices.Equal(q.GoldTurns, want) {
		t.Errorf("gold turns %q, want %q", q.GoldTurns, want)
	}
	// "late" (2023-06-02 09:00, two turns) is after the question (2023-05-30 23:42): at is raised.
	if want := time.Date(2023, 6, 2, 9, 1, 1, 0, time.UTC); !q.AtRaised || !q.At.Equal(want) {
		t.Errorf("at %s raised %v, want %s raised", q.At, q.AtRaised, want)
	}
	if sess := q.SessionOf(first[1].ID); sess != "sharegpt_x_y" {
		t.Errorf("SessionOf = %q", sess)
	}

	qr := q.Query()
	if qr.Request.Query != "Where do I live now?" || qr.Request.User != "q_odd_1" || *qr.Request.Limit != 50 ||
		!slices.Equal(qr.Request.Sources, []string{"archive", "long"}) || !qr.Request.At.Equal(q.At) || qr.Group != "knowledge-update" {
		t.Errorf("query %+v", qr.Request)
	}
	if err := qr.Request.Validate(); err != nil {
		t.Errorf("the request is not valid: %v", err)
	}

	// Not raised when every session is before the question.
	q2, err := PrepareLongMemEval(items[0])
	if err != nil {
		t.Fatal(err)
	}
	if q2.AtRaised || !q2.At.Equal(time.Date(2023, 5, 30, 23, 42, 0, 0, time.UTC)) {
		t.Errorf("abstention question at %s raised %v", q2.At, q2.AtRaised)
	}
}

func TestPrepareLongMemEvalRejectsBadShapes(t *testing.T) {
	good := LMEItem{QuestionID: "q", QuestionDate: "2023/05/30 (Tue) 23:42",
		HaystackDates: []string{"2023/05/01 (Mon) 10:00"}, HaystackSessionIDs: flexStrings{"s"},
		HaystackSessions: []byte(`[[{"role":"user","content":"x"}]]`)}
	if _, err := PrepareLongMemEval(good); err != nil {
		t.Fatalf("good item: %v", err)
	}
	for name, mut := range map[string]func(*LMEItem){
		"bad question date": func(it *LMEItem) { it.QuestionDate = "yesterday" },
		"bad session date":  func(it *LMEItem) { it.HaystackDates = []string{"05/01/2023"} },
		"lengths differ":    func(it *LMEItem) { it.HaystackDates = nil },
		"sessions not list": func(it *LMEItem) { it.HaystackSessions = []byte(`{}`) },
	} {
		it := good
		mut(&it)
		if _, err := PrepareLongMemEval(it); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestSampleLongMemEvalStratified(t *testing.T) {
	var items []LMEItem
	add := func(typ string, n int) {
		for i := range n {
			items = append(items, LMEItem{QuestionID: fmt.Sprintf("%s%02d", typ, i), QuestionType: typ})
		}
	}
	add("a", 10)
	add("b", 5)
	items = append(items, LMEItem{QuestionID: "b99_abs", QuestionType: "b"})
	add("c", 5)

	count := func(s []LMEItem) map[string]int {
		m := map[string]int{}
		for _, it := range s {
			m[it.QuestionType]++
			if it.Abstention() {
				t.Errorf("abstention question %s sampled", it.QuestionID)
			}
		}
		return m
	}
	s := SampleLongMemEval(items, 4, 7)
	if c := count(s); c["a"] != 2 || c["b"] != 1 || c["c"] != 1 {
		t.Errorf("n=4 per type %v, want a 2 b 1 c 1", c)
	}
	pos := func(it LMEItem) int {
		return slices.IndexFunc(items, func(x LMEItem) bool { return x.QuestionID == it.QuestionID })
	}
	if !slices.IsSortedFunc(s, func(x, y LMEItem) int { return pos(x) - pos(y) }) {
		t.Error("sample not in file order")
	}
	if again := SampleLongMemEval(items, 4, 7); !slices.EqualFunc(s, again, func(x, y LMEItem) bool { return x.QuestionID == y.QuestionID }) {
		t.Error("the same seed gave another sample")
	}
	// Largest remainder: 7 of 20 gives a 3.5, b 1.75, c 1.75 → a 3, b 2, c 2.
	if c := count(SampleLongMemEval(items, 7, 1)); c["a"] != 3 || c["b"] != 2 || c["c"] != 2 {
		t.Errorf("n=7 per type %v", c)
	}
	for _, n := range []int{0, 20, 50} {
		if got := SampleLongMemEval(items, n, 1); len(got) != 20 {
			t.Errorf("n=%d gave %d questions, want all 20", n, len(got))
		}
	}
	seen := map[string]bool{}
	for seed := range uint64(20) {
		for _, it := range SampleLongMemEval(items, 4, seed) {
			seen[it.QuestionID] = true
		}
	}
	if len(seen) < 10 {
		t.Errorf("20 seeds drew only %d distinct questions: the seed does not shuffle", len(seen))
	}
}

func TestParseLMETime(t *testing.T) {
	for in, want := range map[string]time.Time{
		"2023/05/30 (Tue) 23:42": time.Date(2023, 5, 30, 23, 42, 0, 0, time.UTC),
		" 2023/05/30 23:42 ":     time.Date(2023, 5, 30, 23, 42, 0, 0, time.UTC),
		"2023/05/30":             time.Date(2023, 5, 30, 0, 0, 0, 0, time.UTC),
	} {
		got, err := ParseLMETime(in)
		if err != nil || !got.Equal(want) {
			t.Errorf("ParseLMETime(%q) = %s, %v", in, got, err)
		}
	}
	if _, err := ParseLMETime("30.05.2023"); err == nil {
		t.Error("bad date accepted")
	}
}

package events

import (
	"errors"
	"testing"
	"time"
)

func TestSummaryJSON(t *testing.T) {
	assertKeys(t, Summary{}, "session", "user", "summary_id", "content", "replaces", "provenance",
		"timestamp", "summarizer", "usage")
	assertKeys(t, Usage{}, "calls", "input_tokens", "output_tokens")
}

func TestSummaryRoundTripData(t *testing.T) {
	want := Summary{Session: "s1", User: "u1", SummaryID: "sum-1", Content: "c", Replaces: []string{"a"},
		Provenance: []string{"t"}, Timestamp: fixedTime, Summarizer: "x", Usage: Usage{1, 2, 3}}
	ev := mustEvent(t, "sum-1", TypeSummary, "src", time.Time{}, want)
	got, err := DecodeData[Summary](ev)
	if err != nil {
		t.Fatal(err)
	}
	if got.SummaryID != want.SummaryID || !got.Timestamp.Equal(want.Timestamp) || got.Usage != want.Usage || len(got.Replaces) != 1 {
		t.Errorf("DecodeData = %+v, want %+v", got, want)
	}
}

func TestSummaryValidate(t *testing.T) {
	ok := Summary{Session: "s1", User: "u1", SummaryID: "sum-1", Content: "c"}
	tests := []struct {
		name  string
		edit  func(*Summary)
		field string
	}{
		{"valid", func(*Summary) {}, ""},
		{"bad session", func(s *Summary) { s.Session = "s.1" }, "session"},
		{"bad user", func(s *Summary) { s.User = "" }, "user"},
		{"no id", func(s *Summary) { s.SummaryID = " " }, "summary_id"},
		{"no content", func(s *Summary) { s.Content = "" }, "content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ok
			tt.edit(&s)
			err := s.Validate()
			if tt.field == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field {
				t.Fatalf("Validate() = %v, want field %s", err, tt.field)
			}
		})
	}
}

package events

import (
	"errors"
	"testing"
)

func TestPressureJSON(t *testing.T) {
	full := Pressure{Session: "s", User: "u", EntryIDs: []string{"a"}, Provenance: []string{"t"}}
	assertKeys(t, full, "session", "user", "tokens", "budget", "ratio", "entry_ids", "first_seq", "last_seq",
		"number", "summary_id", "summary_tokens", "provenance")
	full.Provenance = nil
	assertKeys(t, full, "session", "user", "tokens", "budget", "ratio", "entry_ids", "first_seq", "last_seq",
		"number", "summary_id", "summary_tokens")
}

func TestPressureValidate(t *testing.T) {
	ok := Pressure{Session: "s1", User: "u1", Tokens: 160, Budget: 200, Ratio: 0.8, EntryIDs: []string{"t1"}, SummaryID: "sum-1"}
	tests := []struct {
		name  string
		edit  func(*Pressure)
		field string
	}{
		{"valid", func(*Pressure) {}, ""},
		{"bad session", func(p *Pressure) { p.Session = "" }, "session"},
		{"bad user", func(p *Pressure) { p.User = "a b" }, "user"},
		{"no entries", func(p *Pressure) { p.EntryIDs = nil }, "entry_ids"},
		{"blank entry", func(p *Pressure) { p.EntryIDs = []string{"t1", " "} }, "entry_ids"},
		{"no summary id", func(p *Pressure) { p.SummaryID = "" }, "summary_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := ok
			p.EntryIDs = append([]string(nil), ok.EntryIDs...)
			tt.edit(&p)
			err := p.Validate()
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

package events

import (
	"errors"
	"testing"
	"time"
)

func TestFactJSON(t *testing.T) {
	to := fixedTime
	assertKeys(t, Fact{Key: "k", ValidTo: &to, SupersededBy: "f2"}, "id", "content", "category", "key",
		"valid_from", "valid_to", "superseded_by", "provenance", "confidence")
	assertKeys(t, Fact{}, "id", "content", "category", "valid_from", "provenance", "confidence")
	assertKeys(t, FactEvent{}, "op", "fact")
}

func TestFactEventRoundTripData(t *testing.T) {
	to := fixedTime.Add(time.Hour)
	want := FactEvent{Op: FactSuperseded, Fact: Fact{ID: "f1", Content: "likes Go", Category: "preference",
		ValidFrom: fixedTime, ValidTo: &to, SupersededBy: "f2", Provenance: []string{"t1"}, Confidence: 0.75}}
	ev := mustEvent(t, "e1", TypeFact, "src", time.Time{}, want)
	got, err := DecodeData[FactEvent](ev)
	if err != nil {
		t.Fatal(err)
	}
	if got.Op != want.Op || got.Fact.ID != "f1" || got.Fact.ValidTo == nil || !got.Fact.ValidTo.Equal(to) || got.Fact.Confidence != 0.75 {
		t.Errorf("DecodeData = %+v", got)
	}
}

func TestFactEventValidate(t *testing.T) {
	tests := []struct {
		name  string
		ev    FactEvent
		field string
	}{
		{"added", FactEvent{Op: FactAdded, Fact: Fact{ID: "f", Content: "c"}}, ""},
		{"superseded", FactEvent{Op: FactSuperseded, Fact: Fact{ID: "f", Content: "c", SupersededBy: "g"}}, ""},
		{"forgotten without content", FactEvent{Op: FactForgotten, Fact: Fact{ID: "f"}}, ""},
		{"deleted without content", FactEvent{Op: FactDeleted, Fact: Fact{ID: "f"}}, ""},
		{"unknown op", FactEvent{Op: "updated", Fact: Fact{ID: "f", Content: "c"}}, "op"},
		{"no id", FactEvent{Op: FactAdded, Fact: Fact{Content: "c"}}, "fact.id"},
		{"added without content", FactEvent{Op: FactAdded, Fact: Fact{ID: "f", Content: " "}}, "fact.content"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.ev.Validate()
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

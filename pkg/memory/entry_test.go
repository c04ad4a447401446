package memory

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestParseType(t *testing.T) {
	for _, tc := range []struct {
		in      string
		want    Type
		wantErr bool
	}{
		{"CONVERSATION", Conversation, false},
		{"TOOL_RESULT", ToolResult, false},
		{"SUMMARY", Summary, false},
		{"FACT", Fact, false},
		{"fact", "", true},
		{"Fact", "", true},
		{" FACT", "", true},
		{"", "", true},
		{"NOTE", "", true},
	} {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseType(tc.in)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("ParseType(%q) = %q, want an error", tc.in, got)
				}
				msg := err.Error()
				if !strings.Contains(msg, "\""+tc.in+"\"") {
					t.Errorf("error %q does not name the bad value %q", msg, tc.in)
				}
				for _, allowed := range types {
					if !strings.Contains(msg, string(allowed)) {
						t.Errorf("error %q does not name allowed value %s", msg, allowed)
					}
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("ParseType(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
			}
		})
	}
}

func TestTypeForRole(t *testing.T) {
	for role, want := range map[string]Type{
		"tool":      ToolResult,
		"user":      Conversation,
		"assistant": Conversation,
		"system":    Conversation,
		"":          Conversation,
		"TOOL":      Conversation,
	} {
		if got := TypeForRole(role); got != want {
			t.Errorf("TypeForRole(%q) = %q, want %q", role, got, want)
		}
	}
}

func TestEntryJSON(t *testing.T) {
	ts := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		e    Entry
		want string
	}{
		{
			name: "fact omits turn fields",
			e:    Entry{ID: "f1", Type: Fact, Content: "likes Go", Timestamp: ts, Tokens: 3},
			want: `{"id":"f1","type":"FACT","content":"likes Go","timestamp":"2026-11-30T10:00:00Z","tokens":3}`,
		},
		{
			name: "turn",
			e: Entry{ID: "t1", Type: Conversation, Content: "hi", Timestamp: ts, Tokens: 1, Role: "user", Seq: 7,
				Provenance: []string{"t1"}, Metadata: map[string]any{"k": "v"}},
			want: `{"id":"t1","type":"CONVERSATION","content":"hi","timestamp":"2026-11-30T10:00:00Z","tokens":1,"role":"user","seq":7,"provenance":["t1"],"metadata":{"k":"v"}}`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(tc.e)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Fatalf("got  %s\nwant %s", b, tc.want)
			}
			var back Entry
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			again, _ := json.Marshal(back)
			if string(again) != tc.want {
				t.Fatalf("round trip changed the entry: %s", again)
			}
		})
	}
}

package events

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseRetrieveRequest(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		field string // "" when valid
	}{
		{"minimal", `{"query":"go"}`, ""},
		{"full", `{"query":"what does the user like to code in?","session":"s1","user":"u1","limit":10,
			"sources":["short","long","archive"],"types":["FACT","SUMMARY","CONVERSATION","TOOL_RESULT"],
			"at":"2026-11-30T10:00:00Z","context_tokens":2000,"after":"turn-1","wait_ms":2000}`, ""},
		{"long with session only", `{"query":"q","session":"s1","sources":["long","archive"]}`, ""},
		{"long with user only", `{"query":"q","user":"u1","sources":["long"]}`, ""},
		{"limit bounds", `{"query":"q","limit":200}`, ""},
		{"context tokens zero", `{"query":"q","context_tokens":0}`, ""},
		{"after without wait", `{"query":"q","session":"s1","after":"t1"}`, ""},
		{"unknown field", `{"query":"q","future":true}`, "future"},
		{"mem0's user_id", `{"query":"q","user_id":"u1"}`, "user_id"},
		{"tenant", `{"query":"q","tenant":"acme"}`, ""},
		{"fields in another case", `{"Query":"q","USER":"u1"}`, ""},
		{"not UTF-8", "{\"query\":\"caf\xe9\"}", "body"},
		{"trailing data", `{"query":"q"} {}`, "body"},
		{"invalid JSON", `{"query":`, "body"},
		{"not an object", `["q"]`, "body"},
		{"empty body", ``, "body"},
		{"limit as string", `{"query":"q","limit":"10"}`, "limit"},
		{"bad at", `{"query":"q","at":"yesterday"}`, "at"},
		{"at as number", `{"query":"q","at":5}`, "at"},
		{"null at", `{"query":"q","at":null}`, ""},
		{"no query", `{}`, "query"},
		{"null body", `null`, "query"},
		{"empty query", `{"query":""}`, "query"},
		{"blank query", `{"query":"  \t"}`, "query"},
		{"limit -1", `{"query":"q","limit":-1}`, "limit"},
		{"limit 0", `{"query":"q","limit":0}`, "limit"},
		{"limit 201", `{"query":"q","limit":201}`, "limit"},
		{"negative context tokens", `{"query":"q","context_tokens":-1}`, "context_tokens"},
		{"unknown source", `{"query":"q","session":"s1","sources":["short","mid"]}`, "sources"},
		{"duplicate source", `{"query":"q","session":"s1","sources":["short","short"]}`, "sources"},
		{"unknown type", `{"query":"q","types":["FACT","fact"]}`, "types"},
		{"bad session token", `{"query":"q","session":"s.1"}`, "session"},
		{"bad user token", `{"query":"q","user":"u 1"}`, "user"},
		{"short without session", `{"query":"q","user":"u1","sources":["short"]}`, "sources"},
		{"long without key", `{"query":"q","sources":["long"]}`, "sources"},
		{"archive without key", `{"query":"q","sources":["archive"]}`, "sources"},
		{"wait_ms without after", `{"query":"q","session":"s1","wait_ms":100}`, "wait_ms"},
		{"wait_ms too long", `{"query":"q","session":"s1","after":"t","wait_ms":60001}`, "wait_ms"},
		{"negative wait_ms", `{"query":"q","session":"s1","after":"t","wait_ms":-1}`, "wait_ms"},
		{"after without session", `{"query":"q","user":"u1","after":"t"}`, "after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseRetrieveRequest([]byte(tt.body))
			if tt.field == "" {
				if err != nil {
					t.Fatalf("ParseRetrieveRequest = %v", err)
				}
				return
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != tt.field || !errors.Is(err, ErrInvalid) {
				t.Fatalf("ParseRetrieveRequest = %v, want a *FieldError for %s", err, tt.field)
			}
		})
	}
}

func TestRetrieveRequestMessages(t *testing.T) {
	for body, want := range map[string]string{
		`{"query":"q","user":"u","sources":["short"]}`: `sources: "short" needs session`,
		`{"query":"q","sources":["archive"]}`:          `sources: "archive" needs user or session`,
		`{"query":"q","limit":0}`:                      "limit: must be within 1-200, got 0",
		`{"query":"q","session":"s","wait_ms":5}`:      "wait_ms: needs after",
		`{"query":"q","user_id":"u1"}`:                 `user_id: unknown field: did you mean "user"?`,
		`{"query":"q","session_id":"s1"}`:              `session_id: unknown field: did you mean "session"?`,
		`{"query":"q","top_k":5}`:                      `top_k: unknown field: did you mean "limit"?`,
		`{"query":"q","k":5}`:                          `k: unknown field: did you mean "limit"?`,
		`{"query":"q","colour":5}`:                     "colour: unknown field (the fields are query, session, user, limit, sources, types, at, context_tokens, after, wait_ms)",
		"{\"query\":\"caf\xe9\"}":                      "body: not valid UTF-8 at byte 13",
	} {
		_, err := ParseRetrieveRequest([]byte(body))
		if err == nil || err.Error() != want {
			t.Errorf("%s: error = %v, want %s", body, err, want)
		}
	}
}

func TestRetrieveDefaults(t *testing.T) {
	r, err := ParseRetrieveRequest([]byte(`{"query":"q","at":"2026-11-30T10:00:00Z"}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.LimitOrDefault() != 10 || r.ContextTokensOrDefault() != 2000 {
		t.Errorf("defaults = %d, %d", r.LimitOrDefault(), r.ContextTokensOrDefault())
	}
	if r.At == nil || !r.At.Equal(time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)) {
		t.Errorf("at = %v", r.At)
	}
	r, err = ParseRetrieveRequest([]byte(`{"query":"q","limit":3,"context_tokens":0}`))
	if err != nil {
		t.Fatal(err)
	}
	if r.LimitOrDefault() != 3 || r.ContextTokensOrDefault() != 0 {
		t.Errorf("explicit = %d, %d", r.LimitOrDefault(), r.ContextTokensOrDefault())
	}
}

func TestRetrieveReplyJSON(t *testing.T) {
	b, err := json.Marshal(RetrieveReply{})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(b); got != `{"entries":[],"context":"","context_tokens":0}` {
		t.Errorf("empty reply = %s", got)
	}
	b, err = json.Marshal(&RetrieveReply{})
	if err != nil || !strings.Contains(string(b), `"entries":[]`) {
		t.Errorf("pointer reply = %s, %v", b, err)
	}
	v := 0.6
	entry := RetrievedEntry{ID: "f1", Type: "FACT", Content: "c", Timestamp: fixedTime, Source: "long", Session: "s1",
		Score: 0.83, Scores: Scores{Keyword: 0.7, Vector: &v, Decay: 0.9, Weight: 1.2},
		Provenance: []string{"t1"}, Metadata: map[string]any{}}
	assertKeys(t, entry, "id", "type", "content", "timestamp", "source", "session", "score", "scores", "provenance")
	assertKeys(t, entry.Scores, "keyword", "vector", "decay", "weight")
	assertKeys(t, Scores{}, "keyword", "decay", "weight")
	b, _ = json.Marshal(RetrieveReply{Entries: []RetrievedEntry{entry}, Context: "ctx", ContextTokens: 1})
	var back RetrieveReply
	if err := json.Unmarshal(b, &back); err != nil || len(back.Entries) != 1 || *back.Entries[0].Scores.Vector != 0.6 {
		t.Errorf("round trip = %+v, %v", back, err)
	}
}

func TestErrorBody(t *testing.T) {
	_, err := ParseRetrieveRequest([]byte(`{"query":"q","limit":500}`))
	b, _ := json.Marshal(NewErrorBody(400, err))
	want := `{"error":{"code":400,"field":"limit","message":"limit: must be within 1-200, got 500"}}`
	if string(b) != want {
		t.Errorf("error body = %s, want %s", b, want)
	}
	b, _ = json.Marshal(NewErrorBody(503, errors.New("not ready")))
	if string(b) != `{"error":{"code":503,"message":"not ready"}}` {
		t.Errorf("error body = %s", b)
	}
}

func TestForget(t *testing.T) {
	r, err := ParseForgetRequest([]byte(`{"user":"u1"}`))
	if err != nil || r.User != "u1" {
		t.Errorf("ParseForgetRequest = %+v, %v", r, err)
	}
	var fe *FieldError
	for _, body := range []string{`{}`, `{"user":"a.b"}`, `{"user":1}`} {
		if _, err := ParseForgetRequest([]byte(body)); !errors.As(err, &fe) || fe.Field != "user" {
			t.Errorf("%s: error = %v, want field user", body, err)
		}
	}
	if _, err := ParseForgetRequest([]byte(`{`)); !errors.As(err, &fe) || fe.Field != "body" {
		t.Errorf("bad JSON: error = %v", err)
	}
	// A misspelt member is refused, never read as "forget the whole user".
	for body, field := range map[string]string{`{"user":"u1","factId":"fact_1"}`: "factId", `{"user_id":"u1"}`: "user_id", `{"user":"u1","x":1}`: "x"} {
		if _, err := ParseForgetRequest([]byte(body)); !errors.As(err, &fe) || fe.Field != field {
			t.Errorf("%s: error = %v, want field %s", body, err, field)
		}
	}
	if _, err := ParseForgetRequest([]byte(`{"user":"u1","factId":"fact_1"}`)); err == nil || !strings.Contains(err.Error(), `did you mean "fact_id"`) {
		t.Errorf("factId: error = %v, want a hint", err)
	}
	if r, err := ParseForgetRequest([]byte(`{"user":"u1","tenant":"acme"}`)); err != nil || r.User != "u1" {
		t.Errorf("a request naming its tenant: %+v %v", r, err)
	}
	b, _ := json.Marshal(ForgetReply{})
	if string(b) != `{"forgotten":{}}` {
		t.Errorf("empty reply = %s", b)
	}
	b, _ = json.Marshal(ForgetReply{Forgotten: map[string]int{"facts": 2}})
	if string(b) != `{"forgotten":{"facts":2}}` {
		t.Errorf("reply = %s", b)
	}
}

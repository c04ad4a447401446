package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Sources a retrieve request can search.
const (
	// SourceShort is the session's short-term memory (needs a session).
	SourceShort = "short"
	// SourceLong is the user's live facts and summaries (needs a user, or a
	// session whose user is known).
	SourceLong = "long"
	// SourceArchive is every turn the user published (same key as long).
	SourceArchive = "archive"
)

// Retrieve limits and defaults.
const (
	// DefaultRetrieveLimit is the number of entries returned when a request
	// sets no limit.
	DefaultRetrieveLimit = 10
	// MaxRetrieveLimit is the largest limit a request may set.
	MaxRetrieveLimit = 200
	// DefaultContextTokens is the context budget when a request sets none.
	DefaultContextTokens = 2000
	// MaxWaitMS is the longest read-your-writes wait a request may ask for.
	MaxWaitMS = 60000
)

// retrieveEntryTypes are the memory entry types a request may filter on.
var retrieveEntryTypes = []string{"FACT", "SUMMARY", "CONVERSATION", "TOOL_RESULT"}

// RetrieveRequest is the body of a request on memory.retrieve.<tenant>.
type RetrieveRequest struct {
	// Query is required and must not be blank.
	Query   string `json:"query"`
	Session string `json:"session,omitempty"`
	User    string `json:"user,omitempty"`
	// Limit is 1-200 (default 10).
	Limit *int `json:"limit,omitempty"`
	// Sources are short, long and archive; the default is short when a
	// session is given, plus long and archive when the user is known.
	Sources []string `json:"sources,omitempty"`
	// Types filter by entry type: FACT, SUMMARY, CONVERSATION, TOOL_RESULT.
	Types []string `json:"types,omitempty"`
	// At is the "now" of the query (default: the clock).
	At *time.Time `json:"at,omitempty"`
	// ContextTokens bounds the context text (default 2000; 0: no context).
	ContextTokens *int `json:"context_tokens,omitempty"`
	// After is a turn id of the session that must be applied before the
	// reply, waiting up to WaitMS milliseconds.
	After  string `json:"after,omitempty"`
	WaitMS int    `json:"wait_ms,omitempty"`
}

// ParseRetrieveRequest decodes and validates a retrieve request body.
// Malformed JSON gives a *FieldError for "body", and so do bytes that are not
// valid UTF-8; a value of the wrong type a *FieldError naming its field; a
// field the request does not have a *FieldError naming it, with the field
// meant when the name is a common mistake ("user_id": did you mean "user"?),
// so that a misspelt key is not silently ignored; then Validate applies.
// "tenant" is taken (the service checks it against the subject's). Every
// error wraps ErrInvalid.
func ParseRetrieveRequest(body []byte) (RetrieveRequest, error) {
	// At is decoded apart so that a bad time names its field.
	var wire struct {
		RetrieveRequest
		At     json.RawMessage `json:"at,omitempty"`
		Tenant json.RawMessage `json:"tenant,omitempty"`
	}
	if err := decodeStrict(body, &wire); err != nil {
		err = hinted(err, retrieveFieldHints, "query, session, user, limit, sources, types, at, context_tokens, after, wait_ms")
		var fe *FieldError
		if errors.As(err, &fe) {
			fe.Field = strings.TrimPrefix(fe.Field, "RetrieveRequest.")
		}
		return RetrieveRequest{}, err
	}
	r := wire.RetrieveRequest
	if len(wire.At) > 0 && string(wire.At) != "null" {
		var s string
		if err := json.Unmarshal(wire.At, &s); err != nil {
			return RetrieveRequest{}, &FieldError{Field: "at", Message: "must be an RFC 3339 time string"}
		}
		at, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return RetrieveRequest{}, fieldErrorValue("at", s, "not RFC 3339")
		}
		r.At = &at
	}
	if err := r.Validate(); err != nil {
		return RetrieveRequest{}, err
	}
	return r, nil
}

// decodeBody decodes a JSON request body into v, naming the field of a type
// error, or "body".
func decodeBody(body []byte, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return &FieldError{Field: "body", Message: "must be a JSON object"}
	}
	if err := json.Unmarshal(body, v); err != nil {
		return jsonError(err, "body")
	}
	return nil
}

// decodeStrict is decodeBody for a body that may hold only v's fields: another
// field is a *FieldError naming it (unknownField).
func decodeStrict(body []byte, v any) error {
	if err := checkUTF8("body", body); err != nil {
		return err
	}
	if len(bytes.TrimSpace(body)) == 0 || !isJSON(body) {
		return decodeBody(body, v) // its error says what is wrong
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil {
		return nil
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if field, uerr := strconv.Unquote(name); uerr == nil {
			return &UnknownFieldError{Name: field}
		}
	}
	return jsonError(err, "body")
}

// UnknownFieldError is decodeStrict's error for a member the request does not have; the parser
// of each request turns it into a FieldError with that request's hints.
type UnknownFieldError struct{ Name string }

func (e *UnknownFieldError) Error() string { return e.Name + ": unknown field" }

// hinted turns an UnknownFieldError into a FieldError naming the field, with a hint from hints
// or else the list of fields; any other error is returned as it is.
func hinted(err error, hints map[string]string, fields string) error {
	var ue *UnknownFieldError
	if !errors.As(err, &ue) {
		return err
	}
	fe := &FieldError{Field: ue.Name, Message: "unknown field (the fields are " + fields + ")"}
	if want, ok := hints[strings.ToLower(ue.Name)]; ok {
		fe.Message = fmt.Sprintf("unknown field: did you mean %q?", want)
	}
	return fe
}

// retrieveFieldHints maps the names other memory APIs use (mem0, vector stores) to the retrieve
// request's own.
var retrieveFieldHints = map[string]string{
	"user_id": "user", "userid": "user", "user-id": "user",
	"session_id": "session", "sessionid": "session", "session-id": "session", "run_id": "session", "thread_id": "session",
	"top_k": "limit", "topk": "limit", "k": "limit", "n": "limit", "max_results": "limit", "size": "limit",
	"q": "query", "text": "query", "prompt": "query", "question": "query",
	"source": "sources", "type": "types", "filters": "types",
	"max_tokens": "context_tokens", "token_budget": "context_tokens", "budget": "context_tokens",
	"wait": "wait_ms", "timeout": "wait_ms", "timeout_ms": "wait_ms",
}

// unknownField is the error of a field the retrieve request does not have.
// forgetFieldHints maps the names other memory APIs use to the forget request's own.
var forgetFieldHints = map[string]string{
	"user_id": "user", "userid": "user", "user-id": "user",
	"factid": "fact_id", "fact-id": "fact_id", "fact": "fact_id", "id": "fact_id", "memory_id": "fact_id", "memoryid": "fact_id",
	"text": "content", "data": "content", "memory": "content",
}

// Validate checks a retrieve request and returns nil or a *FieldError naming
// the first bad field: query (required, not blank), limit (1-200),
// context_tokens (not negative), session and user (valid tokens when set),
// sources (short, long or archive, each once; short needs a session, long
// and archive a user or a session), types (FACT, SUMMARY, CONVERSATION,
// TOOL_RESULT), after (needs a session) and wait_ms (0-60000, needs after).
func (r RetrieveRequest) Validate() error {
	if strings.TrimSpace(r.Query) == "" {
		return &FieldError{Field: "query", Message: "is required and must not be blank"}
	}
	if r.Limit != nil && (*r.Limit < 1 || *r.Limit > MaxRetrieveLimit) {
		return &FieldError{Field: "limit", Message: fmt.Sprintf("must be within 1-%d, got %d", MaxRetrieveLimit, *r.Limit)}
	}
	if r.ContextTokens != nil && *r.ContextTokens < 0 {
		return &FieldError{Field: "context_tokens", Message: fmt.Sprintf("must not be negative, got %d", *r.ContextTokens)}
	}
	if r.Session != "" {
		if err := ValidateToken("session", r.Session); err != nil {
			return err
		}
	}
	if r.User != "" {
		if err := ValidateToken("user", r.User); err != nil {
			return err
		}
	}
	seen := make(map[string]bool, len(r.Sources))
	for _, s := range r.Sources {
		switch s {
		case SourceShort:
			if r.Session == "" {
				return &FieldError{Field: "sources", Message: `"short" needs session`}
			}
		case SourceLong, SourceArchive:
			if r.User == "" && r.Session == "" {
				return &FieldError{Field: "sources", Message: fmt.Sprintf("%q needs user or session", s)}
			}
		default:
			return fieldErrorValue("sources", s, "unknown source, want short, long or archive")
		}
		if seen[s] {
			return fieldErrorValue("sources", s, "named more than once")
		}
		seen[s] = true
	}
	for _, t := range r.Types {
		known := false
		for _, k := range retrieveEntryTypes {
			known = known || t == k
		}
		if !known {
			return fieldErrorValue("types", t, "unknown type, want FACT, SUMMARY, CONVERSATION or TOOL_RESULT")
		}
	}
	if r.After != "" && r.Session == "" {
		return &FieldError{Field: "after", Message: "needs session"}
	}
	if r.WaitMS < 0 || r.WaitMS > MaxWaitMS {
		return &FieldError{Field: "wait_ms", Message: fmt.Sprintf("must be within 0-%d, got %d", MaxWaitMS, r.WaitMS)}
	}
	if r.WaitMS > 0 && r.After == "" {
		return &FieldError{Field: "wait_ms", Message: "needs after"}
	}
	return nil
}

// LimitOrDefault returns the request's limit, or 10 when it sets none.
func (r RetrieveRequest) LimitOrDefault() int {
	if r.Limit == nil {
		return DefaultRetrieveLimit
	}
	return *r.Limit
}

// ContextTokensOrDefault returns the request's context budget, or 2000 when
// it sets none.
func (r RetrieveRequest) ContextTokensOrDefault() int {
	if r.ContextTokens == nil {
		return DefaultContextTokens
	}
	return *r.ContextTokens
}

// Scores are the parts of a retrieved entry's score.
type Scores struct {
	Keyword float64 `json:"keyword"`
	// Vector is absent when no embedder is in use.
	Vector *float64 `json:"vector,omitempty"`
	Decay  float64  `json:"decay"`
	Weight float64  `json:"weight"`
	// Relevance, an extension, is present when the relevance the score uses differs from the
	// keyword relevance (the archive discounts further turns of a session already ranked).
	Relevance float64 `json:"relevance,omitempty"`
	// Period, an extension, is the factor by which a question about a period ("two weeks
	// ago") raised the entry's score; absent when it did not.
	Period float64 `json:"period,omitempty"`
	// Graph, an extension, is the relevance added because the entry belongs to an entity the
	// query names or to a neighbour of one (RetrieveReply.Entities); absent when none was.
	Graph float64 `json:"graph,omitempty"`
}

// RetrievedEntity is an entity of the user's graph that a retrieve used: one the query names
// (by its name, an alias, or a relation of the user's such as "my sister"), or a neighbour of
// one, one relation away.
type RetrievedEntity struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	Type string `json:"type,omitempty"`
	// Named is true for an entity the query names, false for a neighbour.
	Named bool `json:"named"`
}

// RetrievedEntry is one entry of a retrieve reply.
type RetrievedEntry struct {
	// ID is the turn's CloudEvent id for CONVERSATION and TOOL_RESULT
	// entries, the derived id for facts and summaries.
	ID         string         `json:"id"`
	Type       string         `json:"type"`
	Content    string         `json:"content"`
	Timestamp  time.Time      `json:"timestamp"`
	Source     string         `json:"source"`
	Session    string         `json:"session,omitempty"`
	Score      float64        `json:"score"`
	Scores     Scores         `json:"scores"`
	Provenance []string       `json:"provenance,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// RetrieveReply is the reply to a retrieve request, entries best first.
type RetrieveReply struct {
	// Entries is encoded as [] when empty, never null.
	Entries []RetrievedEntry `json:"entries"`
	// Context is the text to put into the prompt.
	Context string `json:"context"`
	// ContextTokens is the token count of Context.
	ContextTokens int `json:"context_tokens"`
	// Profile lists the user's live facts the context carries as the user's profile although
	// they are not among Entries (the query shares nothing with them, or the limit cut them):
	// the most relevant first, then the newest, within a share of context_tokens. Absent when
	// there are none (no known user, no facts, or sources or types that exclude long-term facts).
	Profile []RetrievedEntry `json:"profile,omitempty"`
	// Entities, an extension, lists the entities of the user's graph the ranking used (the
	// query named them or a neighbour of them): named ones first. Absent when none.
	Entities []RetrievedEntity `json:"entities,omitempty"`
}

// MarshalJSON encodes the reply with "entries": [] rather than null when
// there are none.
func (r RetrieveReply) MarshalJSON() ([]byte, error) {
	type plain RetrieveReply
	if r.Entries == nil {
		r.Entries = []RetrievedEntry{}
	}
	return json.Marshal(plain(r))
}

// ErrorBody is the body of an error reply on memory.retrieve.<tenant> and
// memory.forget.<tenant>, e.g. {"error":{"code":400,"field":"limit","message":"…"}}.
type ErrorBody struct {
	Error ErrorDetail `json:"error"`
}

// ErrorDetail says what went wrong with a request.
type ErrorDetail struct {
	// Code is the NATS service error code: 400, 404, 429, 500 or 503.
	Code int `json:"code"`
	// Field names the offending request field, when there is one.
	Field   string `json:"field,omitempty"`
	Message string `json:"message"`
}

// NewErrorBody returns the error body for err with the given code, naming
// the field when err wraps a *FieldError.
func NewErrorBody(code int, err error) ErrorBody {
	d := ErrorDetail{Code: code}
	if err != nil {
		d.Message = err.Error()
		var fe *FieldError
		if errors.As(err, &fe) {
			d.Field = fe.Field
		}
	}
	return ErrorBody{Error: d}
}

// ForgetRequest is the body of a request on memory.forget.<tenant>: forget
// everything about a user.
type ForgetRequest struct {
	User string `json:"user"`
	// FactID, when set, forgets only that fact of the user (op "deleted"), or, with Content,
	// corrects it: a new fact with that content supersedes it (an extension beyond DESIGN.md).
	FactID  string `json:"fact_id,omitempty"`
	Content string `json:"content,omitempty"`
}

// ParseForgetRequest decodes and validates a forget request body; errors are
// *FieldErrors wrapping ErrInvalid.
//
// A member the request does not have is refused, naming it: a misspelt fact_id ("factId") must
// not turn the forgetting of one fact into the forgetting of the whole user.
func ParseForgetRequest(body []byte) (ForgetRequest, error) {
	var wire struct {
		ForgetRequest
		Tenant json.RawMessage `json:"tenant,omitempty"`
	}
	if err := decodeStrict(body, &wire); err != nil {
		err = hinted(err, forgetFieldHints, "user, fact_id, content")
		var fe *FieldError
		if errors.As(err, &fe) {
			fe.Field = strings.TrimPrefix(fe.Field, "ForgetRequest.")
		}
		return ForgetRequest{}, err
	}
	r := wire.ForgetRequest
	if err := r.Validate(); err != nil {
		return ForgetRequest{}, err
	}
	return r, nil
}

// Validate checks that the user is a valid token; it returns nil or a
// *FieldError naming "user".
func (r ForgetRequest) Validate() error {
	if err := ValidateToken("user", r.User); err != nil {
		return err
	}
	if r.Content != "" && r.FactID == "" {
		return &FieldError{Field: "content", Message: "a correction needs fact_id"}
	}
	if r.FactID != "" && !factIDRE.MatchString(r.FactID) {
		return fieldErrorValue("fact_id", r.FactID, "is not a fact id")
	}
	return nil
}

var factIDRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// ForgetReply is the reply to a forget request: how many items of each kind
// were forgotten.
type ForgetReply struct {
	// Fact is the correcting fact, for a correction.
	Fact *Fact `json:"fact,omitempty"`
	// Forgotten is encoded as {} when empty, never null.
	Forgotten map[string]int `json:"forgotten"`
}

// MarshalJSON encodes the reply with "forgotten": {} rather than null when
// nothing was forgotten.
func (r ForgetReply) MarshalJSON() ([]byte, error) {
	type plain ForgetReply
	if r.Forgotten == nil {
		r.Forgotten = map[string]int{}
	}
	return json.Marshal(plain(r))
}

package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/agentmem/agentmem/pkg/events"
)

// ContentTypeProblem is the media type of every error response (RFC 9457).
const ContentTypeProblem = "application/problem+json"

// Problem is an error response, RFC 9457 problem details with agentmem's extensions. Type is
// "about:blank": the status says what kind of problem it is, Field which input caused it.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	// Instance is the request path.
	Instance string `json:"instance,omitempty"`
	// Field names the offending input: a path token (tenant, session, user), a CloudEvents
	// attribute or header (subject, ce-time), a body field (role, limit), or body, content-type,
	// authorization.
	Field string `json:"field,omitempty"`
	// Index is the position of the offending event in a batch.
	Index *int `json:"index,omitempty"`
	// Errors lists every invalid event of a batch.
	Errors []EventError `json:"errors,omitempty"`
	// Results lists, for a batch whose publishing failed part way, what happened to each event.
	Results []PublishResult `json:"results,omitempty"`
}

// EventError says why one event of a batch is invalid.
type EventError struct {
	Index  int    `json:"index"`
	Field  string `json:"field,omitempty"`
	Detail string `json:"detail"`
}

// problem returns a problem with the given status, field and detail.
func problem(status int, field, detail string) *Problem {
	return &Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Field: field, Detail: detail}
}

// invalid returns a 400 problem for a validation error of package events, naming its field.
func invalid(err error) *Problem {
	field, detail := describe(err)
	return problem(http.StatusBadRequest, field, detail)
}

// describe returns the field a validation error names and what it says. A *events.FieldError
// names its field; the few decoding errors without one ("missing ce-id", "body is not JSON")
// name it in their text.
func describe(err error) (field, detail string) {
	var fe *events.FieldError
	if errors.As(err, &fe) {
		return fe.Field, fe.Error()
	}
	detail = strings.TrimPrefix(err.Error(), "decoding event: ")
	switch {
	case strings.HasPrefix(detail, "missing "):
		field = strings.Fields(strings.TrimPrefix(detail, "missing "))[0]
	case strings.HasPrefix(detail, "body "):
		field = "body"
	case strings.HasPrefix(detail, "both data and data_base64"):
		field = "data"
	}
	return field, detail
}

// writeProblem writes p as application/problem+json.
func writeProblem(w http.ResponseWriter, r *http.Request, p *Problem) {
	if p.Instance == "" && r != nil {
		p.Instance = r.URL.Path
	}
	if p.Status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="agentmem"`)
	}
	body, _ := marshal(p)
	w.Header().Set("Content-Type", ContentTypeProblem)
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	_, _ = w.Write(body)
}

// writeJSON writes v as JSON with the given status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, err := marshal(v)
	if err != nil {
		writeProblem(w, nil, problem(http.StatusInternalServerError, "", "encoding the reply: "+err.Error()))
		return
	}
	writeRaw(w, status, body)
}

// writeRaw writes a JSON body as it is.
func writeRaw(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// marshal encodes v as JSON without escaping <, > and & (the replies are not HTML).
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

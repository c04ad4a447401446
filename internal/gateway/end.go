package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/propagation"

	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/events"
)

// EndSource is the CloudEvents source of the session ends the gateway publishes.
const EndSource = "agentmem/gateway"

// EndRequest is the optional body of POST /v1/tenants/{tenant}/sessions/{session}/end.
type EndRequest struct {
	// User owns the session; empty: the owner ingest recorded for the session.
	User string `json:"user,omitempty"`
}

// postEnd ends a session: it publishes an agentmem.session.ended.v1 event with a fresh random id
// on memory.turns.<tenant>.<session>, as an agent would, so that the extractor extracts the
// session's facts now rather than after the idle time. The user is the body's, else the
// session's owner; a session that ingest does not know needs the user in the body (404 without
// it). Another user than the owner is a 400: ingest would dead-letter the event.
func (g *Gateway) postEnd(w http.ResponseWriter, r *http.Request, tenant string) {
	sess := r.PathValue("session")
	if err := events.ValidateToken("session", sess); err != nil {
		writeProblem(w, r, invalid(err))
		return
	}
	req, p := g.endRequest(r)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), g.cfg.Timeout)
	defer cancel()
	store, _, err := g.stores(ctx)
	if err != nil {
		writeProblem(w, r, g.readProblem(err))
		return
	}
	// The header names the owner: the session's chunks are not needed.
	h, _, err := store.Header(ctx, session.Key{Tenant: tenant, Session: sess})
	if err != nil && !errors.Is(err, session.ErrNotFound) {
		writeProblem(w, r, g.readProblem(err))
		return
	}
	known := err == nil && (h.Forgotten.IsZero() || h.Head != "")
	switch {
	case !known && req.User == "":
		writeProblem(w, r, problem(http.StatusNotFound, "session", fmt.Sprintf(
			"tenant %q has no session %q (yet): to end a session whose turns may not be applied yet, name its user in the body, {\"user\": \"…\"}", tenant, sess)))
		return
	case known && req.User != "" && h.User != "" && req.User != h.User:
		writeProblem(w, r, problem(http.StatusBadRequest, "user", fmt.Sprintf("session %q belongs to user %q, not %q", sess, h.User, req.User)))
		return
	}
	user := req.User
	if user == "" {
		user = h.User
	}
	// The caller's W3C trace context becomes the event's, as an agent's would.
	ctx = propagation.TraceContext{}.Extract(ctx, propagation.HeaderCarrier(r.Header))
	id := uuid.NewString()
	msg, err := events.NewMsg(ctx, tenant, sess, id, events.TypeSessionEnded, EndSource, time.Now(), events.SessionEnded{User: user})
	if err != nil {
		writeProblem(w, r, invalid(err))
		return
	}
	res, err := g.publish(ctx, pending{msg: msg, id: id, session: sess})
	if err != nil {
		writeProblem(w, r, g.publishProblem(err))
		return
	}
	writeJSON(w, http.StatusAccepted, res)
}

// endRequest decodes the optional body of a session end: none, or an EndRequest.
func (g *Gateway) endRequest(r *http.Request) (EndRequest, *Problem) {
	var req EndRequest
	if p := requireJSON(r); p != nil {
		return req, p
	}
	body, p := readBody(r, g.cfg.MaxBodyBytes)
	if p != nil || len(bytes.TrimSpace(body)) == 0 {
		return req, p
	}
	if p := decodeStrict(body, &req, `{"user": "<user>"} or nothing`); p != nil {
		return req, p
	}
	if req.User != "" {
		if err := events.ValidateToken("user", req.User); err != nil {
			return req, invalid(err)
		}
	}
	return req, nil
}

// decodeStrict decodes a JSON object body into v; a member v does not have is a 400 naming it.
// want shows the body the request takes, for the error.
func decodeStrict(body []byte, v any, want string) *Problem {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			name, _ = strconv.Unquote(name)
			return problem(http.StatusBadRequest, name, fmt.Sprintf("unknown field %q in the body: want %s", name, want))
		}
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) && ute.Field != "" {
			return problem(http.StatusBadRequest, ute.Field, fmt.Sprintf("%s must be a %s, not a %s: want %s", ute.Field, ute.Type, ute.Value, want))
		}
		return problem(http.StatusBadRequest, "body", fmt.Sprintf("the body is not %s: %v", want, err))
	}
	if dec.More() {
		return problem(http.StatusBadRequest, "body", "the body holds more than one JSON value: want "+want)
	}
	return nil
}

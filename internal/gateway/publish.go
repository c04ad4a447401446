package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	gojson "github.com/goccy/go-json"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// ContentTypeBatch is the media type of a batch of structured CloudEvents: a JSON array.
const ContentTypeBatch = "application/cloudevents-batch+json"

// PublishResult says that JetStream stored an event: the 202 body of a published event.
type PublishResult struct {
	// ID is the event's id; Session the session its subject attribute named.
	ID      string `json:"id"`
	Session string `json:"session"`
	// Stream and Seq are where JetStream stored it.
	Stream string `json:"stream"`
	Seq    uint64 `json:"seq"`
	// Duplicate is true when an event with the same id was stored in the session within the
	// stream's duplicate window: this publish added nothing.
	Duplicate bool `json:"duplicate"`
}

// BatchResult is the 202 body of a published batch: one result per event, in order.
type BatchResult struct {
	Results []PublishResult `json:"results"`
}

// pending is an event ready to publish.
type pending struct {
	msg     *nats.Msg
	id      string
	session string
	// user is the user the event names ("" : none); turn is true for a turn, false for a
	// session end.
	user string
	turn bool
}

// postEvents publishes CloudEvents: one in binary mode (ce-* headers), one in structured mode
// (application/cloudevents+json) or a batch (application/cloudevents-batch+json).
func (g *Gateway) postEvents(w http.ResponseWriter, r *http.Request, tenant string) {
	body, p := readBody(r, g.cfg.MaxBodyBytes)
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	ct := r.Header.Get("Content-Type")
	mt := ""
	if ct != "" {
		var err error
		if mt, _, err = mime.ParseMediaType(ct); err != nil {
			writeProblem(w, r, problem(http.StatusBadRequest, "content-type", fmt.Sprintf("content-type %q: %v", ct, err)))
			return
		}
	}
	switch {
	case mt == ContentTypeBatch:
		g.publishBatch(w, r, tenant, body)
		return
	case mt == events.ContentTypeStructured:
	case strings.HasPrefix(mt, "application/cloudevents"):
		writeProblem(w, r, problem(http.StatusUnsupportedMediaType, "content-type", fmt.Sprintf(
			"unsupported CloudEvents format %q: send binary mode (ce-* headers), %s or %s", mt, events.ContentTypeStructured, ContentTypeBatch)))
		return
	}
	ev, p := g.prepare(tenant, eventMsg(r.Header, body))
	if p != nil {
		writeProblem(w, r, p)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), g.cfg.Timeout)
	defer cancel()
	if bad := g.admit(ctx, tenant, []pending{ev}); bad[0] != nil {
		writeProblem(w, r, bad[0])
		return
	}
	res, err := g.publish(ctx, ev)
	if err != nil {
		writeProblem(w, r, g.publishProblem(err))
		return
	}
	writeJSON(w, http.StatusAccepted, res)
}

// eventMsg is the NATS message equivalent to an HTTP request carrying a CloudEvent: its ce-*
// headers (percent-encoded, as in both bindings), its content type and its body.
func eventMsg(h http.Header, body []byte) *nats.Msg {
	nh := nats.Header{}
	for k, vs := range h {
		lk := strings.ToLower(k)
		if strings.HasPrefix(lk, "ce-") || lk == "content-type" {
			nh[lk] = vs
		}
	}
	return &nats.Msg{Header: nh, Data: body}
}

// publishBatch validates every event of a batch, then publishes them in order, or none when one
// is invalid.
func (g *Gateway) publishBatch(w http.ResponseWriter, r *http.Request, tenant string, body []byte) {
	raws, err := splitBatch(body)
	if err != nil {
		writeProblem(w, r, problem(http.StatusBadRequest, "body", "a batch is a JSON array of structured CloudEvents: "+err.Error()))
		return
	}
	evs := make([]pending, 0, len(raws))
	at := make([]int, 0, len(raws)) // the index in the batch of each of evs
	var bad []EventError
	for i, raw := range raws {
		msg := &nats.Msg{Header: nats.Header{"content-type": []string{events.ContentTypeStructured}}, Data: raw}
		ev, p := g.prepare(tenant, msg)
		if p != nil {
			bad = append(bad, EventError{Index: i, Field: p.Field, Detail: p.Detail})
			continue
		}
		evs = append(evs, ev)
		at = append(at, i)
	}
	ctx, cancel := context.WithTimeout(r.Context(), g.cfg.Timeout)
	defer cancel()
	if refused := g.admit(ctx, tenant, evs); len(refused) > 0 {
		for j, p := range refused {
			bad = append(bad, EventError{Index: at[j], Field: p.Field, Detail: p.Detail})
		}
		slices.SortFunc(bad, func(a, b EventError) int { return a.Index - b.Index })
	}
	if len(bad) > 0 {
		p := problem(http.StatusBadRequest, bad[0].Field, fmt.Sprintf("event %d of the batch is invalid: %s (%d invalid of %d; none was published)",
			bad[0].Index, bad[0].Detail, len(bad), len(raws)))
		p.Index, p.Errors = &bad[0].Index, bad
		writeProblem(w, r, p)
		return
	}
	// All at once, as one atomic batch (stored in order, all or nothing, with one disk sync when
	// the server syncs every write) together with the batches of other requests that arrive
	// meanwhile (group.go), answered when JetStream acknowledged it: a batch costs about one
	// round trip and a share of one sync. A batch the stream refuses whole (an event it stored
	// before) is published message by message (client.PublishAtomic).
	msgs := make([]*nats.Msg, len(evs))
	for i, ev := range evs {
		msgs[i] = ev.msg
	}
	out := BatchResult{Results: make([]PublishResult, 0, len(evs))}
	for i, res := range g.group.publish(ctx, msgs) {
		if res.Err != nil {
			p := g.publishProblem(res.Err)
			stored := "nothing before it was stored"
			if i > 0 {
				stored = fmt.Sprintf("events 0-%d were stored", i-1)
			}
			p.Detail = fmt.Sprintf("event %d (id %q) was not stored: %s; %s, later ones may have been; retrying the whole batch is safe (stored events come back as duplicates)",
				i, evs[i].id, p.Detail, stored)
			p.Index, p.Results = &i, out.Results
			writeProblem(w, r, p)
			return
		}
		ev := evs[i]
		out.Results = append(out.Results, PublishResult{ID: ev.id, Session: ev.session, Stream: res.Ack.Stream, Seq: res.Ack.Sequence, Duplicate: res.Ack.Duplicate})
	}
	writeJSON(w, http.StatusAccepted, out)
}

// splitBatch splits a batch into its events' JSON, with goccy/go-json (faster) when the body is
// valid JSON in UTF-8 by gojson.Valid (held to encoding/json's verdict by
// events.FuzzValidJSONAgrees), else with encoding/json, whose error says what is wrong. Each event
// is decoded and checked on its own after.
func splitBatch(body []byte) ([]json.RawMessage, error) {
	var raws []json.RawMessage
	if utf8.Valid(body) && gojson.Valid(body) && gojson.Unmarshal(body, &raws) == nil {
		return raws, nil
	}
	raws = nil
	err := json.Unmarshal(body, &raws)
	return raws, err
}

// prepare decodes and validates a CloudEvent as ingest would (its content's size included; the
// owner of its session is admit's to check) and returns the message to publish:
// binary mode on memory.turns.<tenant>.<session>, with Nats-Msg-Id. The session is the event's
// subject attribute; the tenant is the URL's and the event may not name another one.
func (g *Gateway) prepare(tenant string, in *nats.Msg) (pending, *Problem) {
	ev, err := events.Decode(in)
	if err != nil {
		return pending{}, invalid(err)
	}
	sess := ev.Subject()
	if sess == "" {
		return pending{}, problem(http.StatusBadRequest, "subject", "the event's subject attribute names its session and is required")
	}
	if err := events.ValidateToken("subject", sess); err != nil {
		return pending{}, invalid(err)
	}
	if events.IsReserved(ev.ID()) {
		return pending{}, problem(http.StatusBadRequest, "id",
			fmt.Sprintf("event id %q: ids starting with %q are reserved for agentmem's own events", ev.ID(), events.ReservedIDPrefix))
	}
	if named, ok := events.NamedTenant(ev.Extensions(), ev.Data()); ok && named != tenant {
		return pending{}, problem(http.StatusBadRequest, "tenant",
			fmt.Sprintf("the event names tenant %q on the URL of tenant %q: the tenant is the URL's", named, tenant))
	}
	var user string
	switch ev.Type() {
	case events.TypeTurn:
		t, err := events.DecodeTurn(ev)
		if err == nil {
			err = t.Validate()
		}
		if err != nil {
			return pending{}, invalid(err)
		}
		if limit := g.contentLimit(tenant); len(t.Content) > limit {
			return pending{}, contentTooLarge(len(t.Content), limit)
		}
		user = t.User
	case events.TypeSessionEnded:
		e, err := events.DecodeData[events.SessionEnded](ev)
		if err == nil {
			err = e.Validate()
		}
		if err != nil {
			return pending{}, invalid(err)
		}
		user = e.User
	default:
		return pending{}, problem(http.StatusBadRequest, "type",
			fmt.Sprintf("unknown event type %q: want %s or %s", ev.Type(), events.TypeTurn, events.TypeSessionEnded))
	}
	msg, err := events.EventMsg(tenant, sess, ev)
	if err != nil {
		return pending{}, invalid(err)
	}
	return pending{msg: msg, id: ev.ID(), session: sess, user: user, turn: ev.Type() == events.TypeTurn}, nil
}

// publish stores one event and waits for JetStream's acknowledgement, trying again (the same
// Nats-Msg-Id) while no stream answers, as during a stream leader's election, until ctx ends.
func (g *Gateway) publish(ctx context.Context, ev pending) (PublishResult, error) {
	pa, _, err := client.PublishStored(ctx, g.js, ev.msg, publishAttempt)
	if err != nil {
		return PublishResult{}, err
	}
	return PublishResult{ID: ev.id, Session: ev.session, Stream: pa.Stream, Seq: pa.Sequence, Duplicate: pa.Duplicate}, nil
}

// publishAttempt bounds one attempt to store an event (the request's timeout bounds them all).
const publishAttempt = 2 * time.Second

// publishProblem maps a failed publish to a problem: 504 when JetStream did not acknowledge in
// time, 413 when the event exceeds the server's payload limit, 503 when no stream or server
// took it.
func (g *Gateway) publishProblem(err error) *Problem {
	var apiErr *jetstream.APIError
	switch {
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		return problem(http.StatusGatewayTimeout, "", fmt.Sprintf("JetStream did not acknowledge the event within %s", g.cfg.Timeout))
	case errors.Is(err, nats.ErrMaxPayload):
		return problem(http.StatusRequestEntityTooLarge, "body", "the event is larger than the NATS server's maximum payload")
	case errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders):
		return problem(http.StatusServiceUnavailable, "", "no stream took the event: JetStream is not available or the turns stream does not exist")
	case errors.As(err, &apiErr):
		return problem(http.StatusServiceUnavailable, "", "JetStream refused the event: "+apiErr.Description)
	case errors.Is(err, context.Canceled):
		return problem(http.StatusServiceUnavailable, "", "the request was cancelled")
	default:
		g.log.Warn().Err(err).Msg("publishing an event")
		return problem(http.StatusServiceUnavailable, "", "publishing the event: "+err.Error())
	}
}

// readBody reads a request body bounded by the tenant wrapper's limit: 413 beyond it, 408 when
// the client does not send it within the server's read timeout.
func readBody(r *http.Request, limit int64) ([]byte, *Problem) {
	body, err := io.ReadAll(r.Body)
	if err == nil {
		return body, nil
	}
	var tooBig *http.MaxBytesError
	var ne net.Error
	switch {
	case errors.As(err, &tooBig):
		return nil, tooLarge(limit)
	case errors.As(err, &ne) && ne.Timeout():
		return nil, problem(http.StatusRequestTimeout, "body", "the body did not arrive in time")
	default:
		return nil, problem(http.StatusBadRequest, "body", "reading the body: "+err.Error())
	}
}

// deadline is the time a request may take: Timeout, plus extra.
func (g *Gateway) deadline(extra time.Duration) time.Duration { return g.cfg.Timeout + extra }

package inspector

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/pkg/events"
)

// heartbeat is how often an idle event stream sends a comment, so proxies and browsers keep it.
const heartbeat = 15 * time.Second

// FeedEvent is one message of the live feed (the data of a Server-Sent Event whose event name is
// its Kind).
type FeedEvent struct {
	// Kind is "pressure", "summary" or "fact".
	Kind    string `json:"kind"`
	Subject string `json:"subject"`
	Tenant  string `json:"tenant"`
	// Session is set for pressure and summary events, User for fact events.
	Session string          `json:"session,omitempty"`
	User    string          `json:"user,omitempty"`
	ID      string          `json:"id"`
	Type    string          `json:"type"`
	Time    time.Time       `json:"time,omitzero"`
	Data    json.RawMessage `json:"data"`
}

// feedKinds maps each subscribed subject root, and the kind of event subject it starts
// (events.ParseEventSubject), to the feed's kind of its events.
var feedKinds = []struct{ root, subjectKind, kind string }{
	{"memory.pressure.", events.KindPressure, "pressure"},
	{"memory.summaries.", events.KindSummaries, "summary"},
	{"memory.facts.", events.KindFacts, "fact"},
}

// handleEvents streams the tenant's memory events as Server-Sent Events, from a NATS
// subscription of memory.pressure.<t>.>, memory.summaries.<t>.> and memory.facts.<t>.>. The
// first event, "ready", is sent once the subscriptions are in place.
func (i *Inspector) handleEvents(w http.ResponseWriter, r *http.Request) {
	tenant, ok := i.token(w, r, "tenant")
	if !ok {
		return
	}
	rc := http.NewResponseController(w)
	ch := make(chan *nats.Msg, 256)
	var subs []*nats.Subscription
	defer func() {
		for _, s := range subs {
			_ = s.Unsubscribe()
		}
	}()
	for _, k := range feedKinds {
		s, err := i.nc.ChanSubscribe(k.root+tenant+".>", ch)
		if err != nil {
			i.fail(w, r, "subscribing to "+k.root+tenant+".>", err)
			return
		}
		subs = append(subs, s)
	}
	flushCtx, cancel := i.bound(r)
	err := i.nc.FlushWithContext(flushCtx)
	cancel()
	if err != nil {
		i.fail(w, r, "subscribing", err)
		return
	}
	// A stream outlives a server's WriteTimeout; the heartbeat finds a dead client instead.
	_ = rc.SetWriteDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	ready, _ := json.Marshal(map[string]string{"tenant": tenant})
	if _, err := fmt.Fprintf(w, "retry: 2000\nevent: ready\ndata: %s\n\n", ready); err != nil {
		return
	}
	if err := rc.Flush(); err != nil {
		return
	}
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-i.closed:
			return
		case <-tick.C:
			if _, err := fmt.Fprint(w, ": ping\n\n"); err != nil {
				return
			}
		case m := <-ch:
			fe, ok := feedEvent(m)
			if !ok {
				i.log.Debug().Str("subject", m.Subject).Msg("undecodable memory event left out of the feed")
				continue
			}
			data, err := json.Marshal(fe)
			if err != nil {
				continue
			}
			if _, err := fmt.Fprintf(w, "id: %s\nevent: %s\ndata: %s\n\n", oneLine(fe.ID), fe.Kind, data); err != nil {
				return
			}
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}

// feedEvent decodes a memory event for the feed.
func feedEvent(m *nats.Msg) (FeedEvent, bool) {
	a, err := events.ParseEventSubject(m.Subject)
	if err != nil {
		return FeedEvent{}, false
	}
	fe := FeedEvent{Subject: m.Subject, Tenant: a.Tenant}
	for _, k := range feedKinds {
		if a.Kind == k.subjectKind {
			fe.Kind = k.kind
		}
	}
	if a.Kind == events.KindFacts {
		fe.User = a.Key
	} else {
		fe.Session = a.Key
	}
	ev, err := events.Decode(m)
	if err != nil {
		return FeedEvent{}, false
	}
	fe.ID, fe.Type, fe.Time = ev.ID(), ev.Type(), ev.Time().UTC()
	fe.Data = json.RawMessage(ev.Data())
	if !json.Valid(fe.Data) {
		return FeedEvent{}, false
	}
	return fe, true
}

// oneLine keeps an event id from breaking the SSE framing.
func oneLine(s string) string {
	return strings.NewReplacer("\r", " ", "\n", " ").Replace(s)
}

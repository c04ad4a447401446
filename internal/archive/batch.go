package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nuid"
)

// batchMux receives the answers of batched direct gets on one subscription for the life of
// the reader (a wildcard under one inbox), each request under its own token, instead of
// subscribing and unsubscribing for every request: a new subscription costs a round of
// protocol and invalidates the server's subject cache, which a cold load of a user with 50
// sessions would do 50 times.
type batchMux struct {
	nc   *nats.Conn
	base string
	sub  *nats.Subscription

	mu      sync.Mutex
	waiting map[string]*pendingGet
}

// pendingGet is a request waiting for its answers.
type pendingGet struct {
	ch   chan *nats.Msg
	lost atomic.Bool // an answer did not fit: the request fails rather than return a partial batch
}

// muxes holds one batchMux per connection: readers are cheap to make (some are made per call)
// and share their connection's.
var muxes struct {
	sync.Mutex
	of map[*nats.Conn]*batchMux
}

// muxOf returns nc's batchMux, made on first use (again after nc was closed and reconnected is
// not possible: a closed connection's mux is dropped with it).
func muxOf(nc *nats.Conn) (*batchMux, error) {
	muxes.Lock()
	defer muxes.Unlock()
	if m, ok := muxes.of[nc]; ok {
		return m, nil
	}
	if muxes.of == nil {
		muxes.of = map[*nats.Conn]*batchMux{}
	}
	for c := range muxes.of { // closed connections' muxes go when a new one is made
		if c.IsClosed() {
			delete(muxes.of, c)
		}
	}
	m, err := newBatchMux(nc)
	if err != nil {
		return nil, err
	}
	muxes.of[nc] = m
	return m, nil
}

func newBatchMux(nc *nats.Conn) (*batchMux, error) {
	m := &batchMux{nc: nc, base: nc.NewInbox(), waiting: map[string]*pendingGet{}}
	sub, err := nc.Subscribe(m.base+".*", func(msg *nats.Msg) {
		token := msg.Subject[len(m.base)+1:]
		m.mu.Lock()
		p := m.waiting[token]
		m.mu.Unlock()
		if p == nil {
			return // an abandoned request's late answer
		}
		select {
		case p.ch <- msg:
		default:
			p.lost.Store(true)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("subscribing to direct-get answers: %w", err)
	}
	m.sub = sub
	return m, nil
}

// directGet asks subject (the stream's DIRECT.GET API) for up to batch messages from seq on
// next (wildcards allowed) and returns them in order; none when the stream has none.
func (m *batchMux) directGet(ctx context.Context, api string, seq uint64, next string, batch int) ([]*jetstream.RawStreamMsg, error) {
	req, err := json.Marshal(struct {
		Seq     uint64 `json:"seq,omitempty"`
		NextFor string `json:"next_by_subj,omitempty"`
		Batch   int    `json:"batch,omitempty"`
	}{seq, next, batch})
	if err != nil {
		return nil, err
	}
	token := nuid.Next()
	p := &pendingGet{ch: make(chan *nats.Msg, batch+2)}
	m.mu.Lock()
	m.waiting[token] = p
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		delete(m.waiting, token)
		m.mu.Unlock()
	}()
	if err := m.nc.PublishRequest(api, m.base+"."+token, req); err != nil {
		return nil, err
	}
	var out []*jetstream.RawStreamMsg
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case msg := <-p.ch:
			if p.lost.Load() {
				return nil, errors.New("direct get: more answers than the batch asked for")
			}
			if len(msg.Data) == 0 {
				switch status := msg.Header.Get("Status"); status {
				case "204": // end of batch
					return out, nil
				case "404":
					return out, nil // no (more) messages
				case "":
				case "503":
					return nil, nats.ErrNoResponders
				default:
					return nil, fmt.Errorf("direct get: status %s %s", status, msg.Header.Get("Description"))
				}
			}
			raw, err := toRaw(msg)
			if err != nil {
				return nil, err
			}
			out = append(out, raw)
			if len(out) > batch {
				return nil, errors.New("direct get: more answers than the batch asked for")
			}
		}
	}
}

// toRaw reads a direct-get answer: the stored message, its subject, sequence and time in
// Nats-* headers.
func toRaw(msg *nats.Msg) (*jetstream.RawStreamMsg, error) {
	if msg.Header.Get("Nats-Num-Pending") == "" {
		return nil, errors.New("direct get: the server does not answer batched gets (nats-server 2.11 or later needed)")
	}
	seq, err := strconv.ParseUint(msg.Header.Get(jetstream.SequenceHeader), 10, 64)
	if err != nil {
		return nil, fmt.Errorf("direct get: sequence header: %w", err)
	}
	tm, err := time.Parse(time.RFC3339Nano, msg.Header.Get(jetstream.TimeStampHeaer))
	if err != nil {
		return nil, fmt.Errorf("direct get: time header: %w", err)
	}
	subject := msg.Header.Get(jetstream.SubjectHeader)
	if subject == "" {
		return nil, errors.New("direct get: no subject header")
	}
	return &jetstream.RawStreamMsg{Subject: subject, Sequence: seq, Header: msg.Header, Data: msg.Data, Time: tm}, nil
}

// apiSubject is the stream's direct-get subject under js's API prefix.
func apiSubject(js jetstream.JetStream, stream string) string {
	o := js.Options()
	switch {
	case o.APIPrefix != "":
		return strings.TrimSuffix(o.APIPrefix, ".") + ".DIRECT.GET." + stream
	case o.Domain != "":
		return "$JS." + o.Domain + ".API.DIRECT.GET." + stream
	}
	return "$JS.API.DIRECT.GET." + stream
}

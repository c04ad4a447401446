// Package archive reads turns back from the turns stream, which is agentmem's archive of every
// turn ever published, with batched direct gets (no consumer is created, so nothing is left
// behind on the stream). events.ReadStoredTurn decodes a turn it returns, with the turn's time
// (the event's, or the stored time when it has none). Purge and PurgeKV remove messages from a
// stream and keys from a KV bucket, history included (forget, and the compressor's memo).
package archive

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/nats-io/nats.go/jetstream"
)

// batchSize is how many messages one direct-get request returns at most.
const batchSize = 256

// Reader reads one stream.
type Reader struct {
	js     jetstream.JetStream
	stream string

	mu     sync.Mutex
	handle jetstream.Stream // bound on first use, for Next's single direct gets
}

// NewReader reads the named stream through js.
func NewReader(js jetstream.JetStream, stream string) *Reader {
	return &Reader{js: js, stream: stream}
}

// Scan calls fn, in sequence order, with every message on subject (wildcards allowed) whose
// sequence lies within [from, to]; to == 0 means up to the end of the stream. It stops at the
// first error fn returns.
func (r *Reader) Scan(ctx context.Context, subject string, from, to uint64, fn func(*jetstream.RawStreamMsg) error) error {
	if from == 0 {
		from = 1
	}
	for {
		if to != 0 && from > to {
			return nil
		}
		mux, err := muxOf(r.js.Conn())
		if err != nil {
			return err
		}
		msgs, err := mux.directGet(ctx, apiSubject(r.js, r.stream), from, subject, batchSize)
		if err != nil {
			return fmt.Errorf("reading %s from %q at %d: %w", subject, r.stream, from, err)
		}
		n, more := 0, false
		for _, m := range msgs {
			if to != 0 && m.Sequence > to {
				return nil
			}
			n++
			from = m.Sequence + 1
			if err := fn(m); err != nil {
				return err
			}
			more = pendingAfter(m) > 0
		}
		if n == 0 || !more {
			return nil
		}
	}
}

// Batch returns, in sequence order, up to one batch of the messages on subject (wildcards
// allowed) from sequence from on, and whether the stream holds more after them: Scan one step at
// a time, for a reader that merges several subjects (package ingest's replay of chosen sessions).
func (r *Reader) Batch(ctx context.Context, subject string, from uint64) ([]*jetstream.RawStreamMsg, bool, error) {
	if from == 0 {
		from = 1
	}
	mux, err := muxOf(r.js.Conn())
	if err != nil {
		return nil, false, err
	}
	msgs, err := mux.directGet(ctx, apiSubject(r.js, r.stream), from, subject, batchSize)
	if err != nil {
		return nil, false, fmt.Errorf("reading %s from %q at %d: %w", subject, r.stream, from, err)
	}
	if len(msgs) == 0 {
		return nil, false, nil
	}
	return msgs, pendingAfter(msgs[len(msgs)-1]) > 0, nil
}

// Next returns the first message on subject with a sequence of at least from, or nil when there
// is none. It is one direct get (next by subject) over the connection's shared reply
// subscription: no subscription is made per call, as a batch get does.
func (r *Reader) Next(ctx context.Context, subject string, from uint64) (*jetstream.RawStreamMsg, error) {
	if from == 0 {
		from = 1
	}
	s, err := r.bind(ctx)
	if err != nil {
		return nil, err
	}
	m, err := s.GetMsg(ctx, from, jetstream.WithGetMsgSubject(subject))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s from %q at %d: %w", subject, r.stream, from, err)
	}
	return m, nil
}

// bind returns the stream's handle, looked up once.
func (r *Reader) bind(ctx context.Context) (jetstream.Stream, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.handle != nil {
		return r.handle, nil
	}
	s, err := r.js.Stream(ctx, r.stream)
	if err != nil {
		return nil, fmt.Errorf("binding stream %q: %w", r.stream, err)
	}
	r.handle = s
	return s, nil
}

// pendingAfter is the server's count of matching messages after m (Nats-Num-Pending).
func pendingAfter(m *jetstream.RawStreamMsg) uint64 {
	n, err := strconv.ParseUint(m.Header.Get("Nats-Num-Pending"), 10, 64)
	if err != nil {
		return 1
	}
	return n
}

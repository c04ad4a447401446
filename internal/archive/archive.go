// Package archive reads turns back from the turns stream, which is agentmem's archive of every
// turn ever published, with batched direct gets (no consumer is created, so nothing is left
// behind on the stream).
package archive

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"
)

// batchSize is how many messages one direct-get request returns at most.
const batchSize = 256

// Reader reads one stream.
type Reader struct {
	js     jetstream.JetStream
	stream string
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
		msgs, err := jetstreamext.GetBatch(ctx, r.js, r.stream, batchSize,
			jetstreamext.GetBatchSeq(from), jetstreamext.GetBatchSubject(subject))
		if err != nil {
			return fmt.Errorf("reading %s from %q at %d: %w", subject, r.stream, from, err)
		}
		n, more := 0, false
		for m, err := range msgs {
			if errors.Is(err, jetstreamext.ErrNoMessages) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("reading %s from %q at %d: %w", subject, r.stream, from, err)
			}
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

// Next returns the first message on subject with a sequence of at least from, or nil when there
// is none.
func (r *Reader) Next(ctx context.Context, subject string, from uint64) (*jetstream.RawStreamMsg, error) {
	if from == 0 {
		from = 1
	}
	msgs, err := jetstreamext.GetBatch(ctx, r.js, r.stream, 1,
		jetstreamext.GetBatchSeq(from), jetstreamext.GetBatchSubject(subject))
	if err != nil {
		return nil, fmt.Errorf("reading %s from %q at %d: %w", subject, r.stream, from, err)
	}
	for m, err := range msgs {
		if errors.Is(err, jetstreamext.ErrNoMessages) {
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s from %q at %d: %w", subject, r.stream, from, err)
		}
		return m, nil
	}
	return nil, nil
}

// pendingAfter is the server's count of matching messages after m (Nats-Num-Pending).
func pendingAfter(m *jetstream.RawStreamMsg) uint64 {
	n, err := strconv.ParseUint(m.Header.Get("Nats-Num-Pending"), 10, 64)
	if err != nil {
		return 1
	}
	return n
}

package session

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/synadia-io/orbit.go/jetstreamext"

	"github.com/agentmem/agentmem/pkg/events"
)

// Group commit.
//
// With every JetStream write synced to disk (memoryd's default durability), a session commit
// costs a sync per chunk and one for the header, and ingest commits many sessions at once (the
// sessions of a batch, in every partition). Commits that arrive while others are being written
// wait and are written together: the first caller with nothing in flight leads, takes every
// commit waiting and writes their chunks as one JetStream atomic batch and then their headers as
// another, each header still checked against the revision its session read
// (Nats-Expected-Last-Subject-Sequence), then hands each commit its outcome and leads the next
// group if more arrived meanwhile. The order within a commit holds: its chunks are stored before
// its header.
//
// An atomic batch costs a few syncs of its own (nats-server stages it in a store of its own), so
// a group smaller than events.MinAtomicBatch is written commit by commit, concurrently, as before;
// so is every group when the buckets are persisted lazily (events.Topology.Lazy), where a write
// syncs nothing and nats-server allows no atomic batch.
// When a batch is refused (a header another writer changed, a bucket or server without atomic
// batches, a timeout) the group's writes are made one commit at a time instead, so that each
// commit gets its own outcome (ErrConflict for the one another writer got to first).

type committer struct {
	st *Store
	// batches: the buckets allow atomic batches (not when persisted lazily).
	batches bool
	mu      sync.Mutex
	busy    bool
	pending []*commitReq
	// atomic counts the groups written as atomic batches (for the tests).
	atomic atomic.Int64
}

type kvWrite struct {
	key  string
	data []byte
}

// commitReq is one session's commit: its chunks, then its header (created when create, else
// updated from revision expect).
type commitReq struct {
	ctx    context.Context
	chunks []kvWrite
	header kvWrite
	create bool
	expect uint64
	done   chan struct{}
	lead   chan struct{} // closed when this commit is to lead the next group
	rev    uint64
	err    error
}

// commit writes r with the commits waiting beside it and returns when r is written or failed.
// A leader writes one group, its own, and hands the lead to the first commit that arrived
// meanwhile, so that no caller waits for more than the group before its own and its own.
func (c *committer) commit(r *commitReq) {
	r.done, r.lead = make(chan struct{}), make(chan struct{})
	c.mu.Lock()
	c.pending = append(c.pending, r)
	if c.busy {
		c.mu.Unlock()
		select {
		case <-r.done:
			return
		case <-r.lead:
		}
		c.mu.Lock()
	}
	c.busy = true
	group := c.pending
	c.pending = nil
	c.mu.Unlock()
	c.write(group)
	c.mu.Lock()
	if len(c.pending) > 0 {
		close(c.pending[0].lead)
	} else {
		c.busy = false
	}
	c.mu.Unlock()
}

// write writes a group and closes each commit's done.
func (c *committer) write(group []*commitReq) {
	defer func() {
		for _, r := range group {
			close(r.done)
		}
	}()
	if !c.batches || len(group) < events.MinAtomicBatch || !c.writeAtomic(group) {
		var wg sync.WaitGroup
		for _, r := range group {
			wg.Go(func() { r.rev, r.err = c.st.writeCommit(r) })
		}
		wg.Wait()
	}
}

// writeAtomic writes a group's chunks, then its headers, as atomic batches. It returns false,
// having written no header, when a batch was refused: the caller then writes the group commit by
// commit (chunks the chunk batch stored are written again under the same keys; Create finds them).
func (c *committer) writeAtomic(group []*commitReq) bool {
	ctx := group[0].ctx
	var chunks, headers []*nats.Msg
	for _, r := range group {
		for _, w := range r.chunks {
			chunks = append(chunks, &nats.Msg{Subject: "$KV." + c.st.chunks.Bucket() + "." + w.key, Data: w.data, Header: nats.Header{}})
		}
		m := &nats.Msg{Subject: "$KV." + c.st.headers.Bucket() + "." + r.header.key, Data: r.header.data, Header: nats.Header{}}
		m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, strconv.FormatUint(r.expect, 10)) // 0 when created
		headers = append(headers, m)
	}
	if len(chunks) > events.MaxAtomicBatch || len(headers) > events.MaxAtomicBatch {
		return false
	}
	if len(chunks) > 0 {
		if len(chunks) == 1 {
			if _, err := c.st.js.PublishMsg(ctx, chunks[0]); err != nil {
				return false
			}
		} else if _, err := jetstreamext.PublishMsgBatch(ctx, c.st.js, chunks); err != nil {
			return false
		}
	}
	ack, err := jetstreamext.PublishMsgBatch(ctx, c.st.js, headers)
	if err != nil || ack.BatchSize != uint64(len(headers)) || ack.Sequence < ack.BatchSize {
		return false
	}
	first := ack.Sequence - ack.BatchSize + 1
	for i, r := range group {
		r.rev = first + uint64(i)
	}
	c.atomic.Add(1)
	return true
}

// writeCommit writes commit r on its own: its chunks, then its header (kv.Create for a new header
// and for chunks, whose keys are new; kv.Update from revision r.expect otherwise).
func (st *Store) writeCommit(r *commitReq) (uint64, error) {
	for _, w := range r.chunks {
		if _, err := st.chunks.Create(r.ctx, w.key, w.data); err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
			return 0, fmt.Errorf("writing chunk %q: %w", w.key, err)
		}
	}
	if r.create {
		rev, err := st.headers.Create(r.ctx, r.header.key, r.header.data)
		if errors.Is(err, jetstream.ErrKeyExists) {
			return 0, fmt.Errorf("%w: %s was created meanwhile", ErrConflict, r.header.key)
		}
		if err != nil {
			return 0, fmt.Errorf("writing header %q: %w", r.header.key, err)
		}
		return rev, nil
	}
	rev, err := st.headers.Update(r.ctx, r.header.key, r.header.data, r.expect)
	if errors.Is(err, jetstream.ErrKeyRevisionMismatch) || errors.Is(err, jetstream.ErrKeyExists) {
		return 0, fmt.Errorf("%w: %s (expected revision %d)", ErrConflict, r.header.key, r.expect)
	}
	if err != nil {
		return 0, fmt.Errorf("writing header %q: %w", r.header.key, err)
	}
	return rev, nil
}

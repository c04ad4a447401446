package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// groupCommit writes the events of batch requests that arrive together as one JetStream atomic
// batch (group commit). nats-server stages each atomic batch of a file stream with one replica
// in a store of its own: a directory, two synced metadata files and a synced block, a fixed
// cost of about 5 ms on the 2-core machine against about 20 µs per event stored, so a batch of
// 100 events is mostly that fixed cost. Requests that arrive while a group is being written
// queue, and the next group takes every queued request whole, up to events.MaxAtomicBatch
// events: eight clients posting batches of 100 cost one staging store per about 500 events
// instead of one per 100 (docs/benchmarks.md, "HTTP batches written together").
//
// What a request sees does not change: its events are stored in order and contiguous, all or
// none, when the group's batch is stored; its result lists its own events only. When the
// server refuses or loses a group's batch (an event it stored before, a timeout, a leader
// change), each request of the group is written again on its own with client.PublishAtomic, so
// one request's duplicate does not cost the others their batch, and a stored event comes back
// as a duplicate. A request that ends before its group is written (its timeout, its client
// gone) is answered with its context's error; its events may still be stored, and retrying is
// safe, as for any timeout.
type groupCommit struct {
	js      jetstream.JetStream
	timeout time.Duration // bounds the writing of one group, as Config.Timeout bounds a request
	metrics *metrics.Metrics

	mu      sync.Mutex
	queue   []*groupJob
	writers int // groups being written

	groups, jobs int // groups written and requests in them (tests)
}

// groupJob is one request's events waiting for their group.
type groupJob struct {
	msgs []*nats.Msg
	res  []client.Published
	done chan struct{}
}

// groupWriters is how many groups are written at once. One made the largest groups and the
// fastest batches: two or three overlap the writing of one group with the acknowledgement of
// another, but split the queue into smaller groups (measured side by side, docs/benchmarks.md).
const groupWriters = 1

// publish stores msgs as part of a group and returns one result per message, in order.
func (gc *groupCommit) publish(ctx context.Context, msgs []*nats.Msg) []client.Published {
	if len(msgs) >= events.MaxAtomicBatch {
		return client.PublishAtomic(ctx, gc.js, msgs, publishAttempt) // a group of its own
	}
	job := &groupJob{msgs: msgs, done: make(chan struct{})}
	gc.mu.Lock()
	gc.queue = append(gc.queue, job)
	if gc.writers < groupWriters {
		gc.writers++
		go gc.write()
	}
	gc.mu.Unlock()
	select {
	case <-job.done:
		return job.res
	case <-ctx.Done():
		out := make([]client.Published, len(msgs))
		for i := range out {
			out[i].Err = ctx.Err()
		}
		return out
	}
}

// write writes groups until the queue is empty.
func (gc *groupCommit) write() {
	for {
		gc.mu.Lock()
		n, size := 0, 0
		for n < len(gc.queue) && (n == 0 || size+len(gc.queue[n].msgs) <= events.MaxAtomicBatch) {
			size += len(gc.queue[n].msgs)
			n++
		}
		if n == 0 {
			gc.writers--
			gc.mu.Unlock()
			return
		}
		group := make([]*groupJob, n)
		copy(group, gc.queue)
		rest := copy(gc.queue, gc.queue[n:])
		clear(gc.queue[rest:]) // no hold on the events of answered requests
		gc.queue = gc.queue[:rest]
		gc.groups++
		gc.jobs += n
		gc.mu.Unlock()
		gc.metrics.BatchGroup(n)
		gc.commit(group, size)
	}
}

// commit writes one group and hands each request its results.
func (gc *groupCommit) commit(group []*groupJob, size int) {
	ctx, cancel := context.WithTimeout(context.Background(), gc.timeout)
	defer cancel()
	defer func() {
		for _, j := range group {
			close(j.done)
		}
	}()
	if len(group) == 1 {
		group[0].res = client.PublishAtomic(ctx, gc.js, group[0].msgs, publishAttempt)
		return
	}
	all := make([]*nats.Msg, 0, size)
	for _, j := range group {
		all = append(all, j.msgs...)
	}
	var res []client.Published
	var err error
	if size < events.MinAtomicBatch {
		res = client.PublishAll(ctx, gc.js, all, publishAttempt) // cheaper than staging a batch
	} else if res, err = client.PublishAtomicOnce(ctx, gc.js, all, publishAttempt); err != nil {
		for _, j := range group { // refused or lost whole: each request again, on its own
			j.res = client.PublishAtomic(ctx, gc.js, j.msgs, publishAttempt)
			for i := range j.res {
				j.res[i].Attempts++
			}
		}
		return
	}
	for _, j := range group {
		j.res, res = res[:len(j.msgs):len(j.msgs)], res[len(j.msgs):]
	}
}

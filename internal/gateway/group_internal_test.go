package gateway

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// groupEnv is a stream that takes atomic batches, as the turns stream does, and a groupCommit
// writing to it.
func groupEnv(t *testing.T) (*groupCommit, jetstream.Stream) {
	t.Helper()
	env := brokertest.Start(t)
	ctx := context.Background()
	s, err := env.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "G", Subjects: []string{"g.>"},
		Storage: jetstream.FileStorage, AllowAtomicPublish: true, Duplicates: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	return &groupCommit{js: env.JS, timeout: 30 * time.Second}, s
}

// groupMsgs is n messages with ids prefix-0 … prefix-(n-1).
func groupMsgs(prefix string, n int) []*nats.Msg {
	msgs := make([]*nats.Msg, n)
	for i := range msgs {
		msgs[i] = nats.NewMsg(fmt.Sprintf("g.%s.%d", prefix, i%3))
		msgs[i].Data = fmt.Appendf(nil, "%s-%d", prefix, i)
		msgs[i].Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("%s-%d", prefix, i))
	}
	return msgs
}

// busy makes gc behave as while a group is being written: publishes queue.
func busy(gc *groupCommit) {
	gc.mu.Lock()
	gc.writers = groupWriters
	gc.mu.Unlock()
}

// queued waits until n requests are queued.
func queued(t *testing.T, gc *groupCommit, n int) {
	t.Helper()
	brokertest.CheckFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		gc.mu.Lock()
		defer gc.mu.Unlock()
		if len(gc.queue) != n {
			return fmt.Errorf("%d requests queued, want %d", len(gc.queue), n)
		}
		return nil
	})
}

// written waits until gc's writer has stopped and returns the groups and requests written.
func written(t *testing.T, gc *groupCommit) (groups, jobs int) {
	t.Helper()
	brokertest.CheckFor(t, 10*time.Second, 5*time.Millisecond, func() error {
		gc.mu.Lock()
		defer gc.mu.Unlock()
		if gc.writers != 0 {
			return fmt.Errorf("%d writers", gc.writers)
		}
		groups, jobs = gc.groups, gc.jobs
		return nil
	})
	return groups, jobs
}

// result is one request's results.
type result struct {
	prefix string
	res    []client.Published
}

// publishQueued publishes each of sizes' requests (ids <name>0-…, <name>1-…) from its own
// goroutine while gc is busy, waits until all are queued, lets the writer go and returns their
// results in request order.
func publishQueued(t *testing.T, gc *groupCommit, name string, sizes ...int) ([][]*nats.Msg, [][]client.Published) {
	t.Helper()
	busy(gc)
	out := make(chan result, len(sizes))
	msgs := make([][]*nats.Msg, len(sizes))
	for i, n := range sizes {
		prefix := fmt.Sprintf("%s%d", name, i)
		msgs[i] = groupMsgs(prefix, n)
		go func() { out <- result{prefix, gc.publish(context.Background(), msgs[i])} }()
		queued(t, gc, i+1) // in this order
	}
	go gc.write() // the busy writer's turn
	res := make([][]client.Published, len(sizes))
	for range sizes {
		r := <-out
		var i int
		if _, err := fmt.Sscanf(strings.TrimPrefix(r.prefix, name), "%d", &i); err != nil {
			t.Fatal(err)
		}
		res[i] = r.res
	}
	return msgs, res
}

// stored checks that every message of every request was stored once at the sequence its result
// gives, in order and contiguous within its request, and returns each request's first sequence.
func stored(t *testing.T, s jetstream.Stream, msgs [][]*nats.Msg, res [][]client.Published) []uint64 {
	t.Helper()
	ctx := context.Background()
	firsts := make([]uint64, len(msgs))
	for i := range msgs {
		if len(res[i]) != len(msgs[i]) {
			t.Fatalf("request %d: %d results for %d messages", i, len(res[i]), len(msgs[i]))
		}
		for k, r := range res[i] {
			if r.Err != nil || r.Ack == nil || r.Ack.Duplicate {
				t.Fatalf("request %d, message %d: %+v", i, k, r)
			}
			if k > 0 && r.Ack.Sequence != res[i][k-1].Ack.Sequence+1 {
				t.Fatalf("request %d, message %d at sequence %d after %d: not contiguous", i, k, r.Ack.Sequence, res[i][k-1].Ack.Sequence)
			}
			got, err := s.GetMsg(ctx, r.Ack.Sequence)
			if err != nil || string(got.Data) != string(msgs[i][k].Data) {
				t.Fatalf("request %d, message %d: sequence %d holds %v (%v)", i, k, r.Ack.Sequence, got, err)
			}
		}
		firsts[i] = res[i][0].Ack.Sequence
	}
	return firsts
}

// The requests queued while a group is written go as one atomic batch: their messages stored
// one after another, in the order they came, each request's contiguous; a group takes whole
// requests up to events.MaxAtomicBatch messages, and the rest go in the next.
func TestGroupCommitWritesQueuedRequestsTogether(t *testing.T) {
	gc, s := groupEnv(t)
	gc.metrics = metrics.New()
	msgs, res := publishQueued(t, gc, "a", 100, 3, 250, 1)
	firsts := stored(t, s, msgs, res)
	for i := 1; i < len(msgs); i++ {
		if firsts[i] != firsts[i-1]+uint64(len(msgs[i-1])) {
			t.Fatalf("request %d starts at %d, request %d at %d: not one batch", i, firsts[i], i-1, firsts[i-1])
		}
	}
	if groups, jobs := written(t, gc); groups != 1 || jobs != 4 {
		t.Fatalf("%d groups of %d requests written, want 1 of 4", groups, jobs)
	}

	// Twelve requests of 100: ten in the first group (1,000 messages), two in the second.
	sizes := slices.Repeat([]int{100}, 12)
	msgs, res = publishQueued(t, gc, "b", sizes...)
	firsts = stored(t, s, msgs, res)
	for i := 1; i < len(msgs); i++ {
		if i != 10 && firsts[i] != firsts[i-1]+100 {
			t.Fatalf("request %d starts at %d after %d", i, firsts[i], firsts[i-1])
		}
	}
	if groups, jobs := written(t, gc); groups != 3 || jobs != 16 {
		t.Fatalf("%d groups of %d requests written in all, want 3 of 16", groups, jobs)
	}
	if info, err := s.Info(context.Background()); err != nil || info.State.Msgs != 1554 {
		t.Fatalf("the stream holds %v messages (%v), want 1,554", info.State.Msgs, err)
	}
	// The metric: three batches written, for 4 + 10 + 2 requests.
	fams, err := gc.metrics.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var count uint64
	var sum float64
	for _, f := range fams {
		if f.GetName() == metrics.Namespace+"_http_batch_group_requests" {
			count, sum = f.GetMetric()[0].GetHistogram().GetSampleCount(), f.GetMetric()[0].GetHistogram().GetSampleSum()
		}
	}
	if count != 3 || sum != 16 {
		t.Fatalf("http_batch_group_requests: %d batches of %v requests, want 3 of 16", count, sum)
	}
}

// A group the server refuses whole (one request's events were stored before: a client's retry)
// is written again request by request, so the others keep an atomic batch of their own and the
// retried events come back as duplicates.
func TestGroupCommitRetriesEachRequestOfARefusedGroup(t *testing.T) {
	gc, s := groupEnv(t)
	ctx := context.Background()
	again := groupMsgs("r0", 20)
	for _, r := range client.PublishAll(ctx, gc.js, again, 5*time.Second) {
		if r.Err != nil {
			t.Fatal(r.Err)
		}
	}
	msgs, res := publishQueued(t, gc, "r", 20, 30)
	for k, r := range res[0] {
		if r.Err != nil || !r.Ack.Duplicate || r.Attempts != 3 {
			t.Fatalf("retried message %d: %+v, want a duplicate on the third attempt (the group, its own batch, one by one)", k, r)
		}
	}
	stored(t, s, msgs[1:], res[1:])
	for k, r := range res[1] {
		if r.Attempts != 2 {
			t.Fatalf("message %d: %d attempts, want 2 (the group, then its own batch)", k, r.Attempts)
		}
	}
	if info, err := s.Info(ctx); err != nil || info.State.Msgs != 50 {
		t.Fatalf("the stream holds %v messages (%v), want 50", info.State.Msgs, err)
	}
}

// A request whose context ends while it waits for its group is answered with the context's
// error at once; its events are still written with the group (a retry would find them).
func TestGroupCommitAnswersARequestThatEnds(t *testing.T) {
	gc, s := groupEnv(t)
	busy(gc)
	ctx, cancel := context.WithCancel(context.Background())
	out := make(chan []client.Published, 1)
	go func() { out <- gc.publish(ctx, groupMsgs("gone", 5)) }()
	queued(t, gc, 1)
	cancel()
	res := <-out
	for k, r := range res {
		if r.Err != context.Canceled {
			t.Fatalf("message %d: %+v, want the context's error", k, r)
		}
	}
	gc.write()
	if groups, _ := written(t, gc); groups != 1 {
		t.Fatalf("%d groups written, want 1", groups)
	}
	if info, err := s.Info(context.Background()); err != nil || info.State.Msgs != 5 {
		t.Fatalf("the stream holds %v messages (%v), want 5", info.State.Msgs, err)
	}
}

// A request of events.MaxAtomicBatch events or more does not wait for a group.
func TestGroupCommitWritesALargeRequestAlone(t *testing.T) {
	gc, s := groupEnv(t)
	busy(gc)
	msgs := groupMsgs("big", events.MaxAtomicBatch+1)
	res := gc.publish(context.Background(), msgs)
	stored(t, s, [][]*nats.Msg{msgs}, [][]client.Published{res})
	gc.mu.Lock()
	defer gc.mu.Unlock()
	if gc.groups != 0 {
		t.Fatalf("%d groups written", gc.groups)
	}
}

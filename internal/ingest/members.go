package ingest

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/pkg/events"
)

// Scale-out.
//
// Any number of ingest processes may run. Each registers as a member in a KV bucket whose keys
// expire (the member's heartbeat refreshes its key every MemberTTL/3), and every member assigns
// the partitions to the live members with rendezvous hashing with bounded load (assignment):
// every member owns partitions/N rounded down or up, every member computes the same assignment
// from the same member list, a new member takes over its share (and balancing moves at most about
// as many again), and when a member dies its key expires and the others take over its partitions.
//
// The assignment says who should consume; the server makes sure only one does: the partition
// consumers use a priority group with the pinned-client policy, so JetStream delivers a
// partition to one pinned member at a time, and a member that lets a partition go unpins it at
// once (a dead member's pin expires after PinnedTTL). During a hand-over two members may both
// hold a partition for a moment; commits are revision-checked and the gap fill applies a
// session's messages in stream order, so the outcome is the same. A partition that cannot start
// (its consumers cannot be bound, as while their leader is elected) is started again by its owner
// until it can (keepPartition): the others take it for served.

// membersBucket holds one key per live ingest member: "<member id>".
func membersBucket(t events.Topology) string { return t.Prefix + "_INGEST_MEMBERS" }

// hrw is the rendezvous weight of member for partition p: FNV-1a of the member name, mixed with
// the partition number through the SplitMix64 finaliser. (FNV-1a of name and number alone ranks
// members the same way for every partition whose number has the same last digit, so two members
// could own 0 and 16 partitions.)
func hrw(member string, p int) uint64 {
	h := fnv.New64a()
	h.Write([]byte(member))
	x := h.Sum64() ^ (uint64(p)+1)*0x9e3779b97f4a7c15
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9
	x = (x ^ (x >> 27)) * 0x94d049bb133111eb
	return x ^ (x >> 31)
}

// assignment gives each of n partitions to a member: rendezvous hashing with bounded load. All
// (member, partition) pairs are taken by weight, highest first, and a pair's member gets its
// partition when the partition is still free and the member has room: fewer than n/len(members)
// partitions, or exactly that many while fewer than n%len(members) members hold one more. Every
// member owns n/len(members) rounded down or up, every member computes the same assignment from
// the same member list (in any order), and a member joining or leaving moves about its share.
func assignment(members []string, n int) []string {
	if len(members) == 0 {
		return nil
	}
	type pair struct {
		w      uint64
		member string
		p      int
	}
	pairs := make([]pair, 0, len(members)*n)
	for _, m := range members {
		for p := range n {
			pairs = append(pairs, pair{hrw(m, p), m, p})
		}
	}
	slices.SortFunc(pairs, func(a, b pair) int {
		if c := cmp.Compare(b.w, a.w); c != 0 {
			return c
		}
		if c := strings.Compare(a.member, b.member); c != 0 {
			return c
		}
		return cmp.Compare(a.p, b.p)
	})
	base, extra := n/len(members), n%len(members)
	owned := make(map[string]int, len(members))
	full := 0 // members holding base+1
	out := make([]string, n)
	left := n
	for _, pr := range pairs {
		if left == 0 {
			break
		}
		if c := owned[pr.member]; out[pr.p] != "" || c > base || (c == base && full >= extra) {
			continue
		}
		out[pr.p] = pr.member
		left--
		if owned[pr.member]++; owned[pr.member] == base+1 {
			full++
		}
	}
	return out
}

// assign returns the partitions (out of n) that member owns among members.
func assign(member string, members []string, n int) []int {
	var out []int
	for p, m := range assignment(members, n) {
		if m == member {
			out = append(out, p)
		}
	}
	return out
}

// running is a partition this member consumes.
type running struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when the partition has stopped
}

// membership runs the member's heartbeat and keeps the owned partitions running.
type membership struct {
	w       *Worker
	kv      jetstream.KeyValue
	id      string
	ttl     time.Duration
	mu      sync.Mutex
	running map[int]*running
}

func (w *Worker) newMembership(ctx context.Context) (*membership, error) {
	kv, err := events.EnsureBucket(ctx, w.js, jetstream.KeyValueConfig{
		Bucket: membersBucket(w.cfg.Topology), Description: "agentmem ingest members (keys expire without heartbeats)",
		TTL: w.cfg.MemberTTL, History: 1, Storage: w.cfg.Topology.Storage, Replicas: w.cfg.Topology.Replicas,
	})
	if err != nil {
		return nil, fmt.Errorf("creating the members bucket: %w", err)
	}
	return &membership{w: w, kv: kv, id: w.cfg.Member, ttl: w.cfg.MemberTTL, running: map[int]*running{}}, nil
}

// owned lists the partitions this member consumes now.
func (m *membership) owned() []int {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]int, 0, len(m.running))
	for p := range m.running {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

func (m *membership) run(ctx context.Context) error {
	tick := time.NewTicker(m.ttl / 3)
	defer tick.Stop()
	defer m.leave()
	for {
		if err := m.rebalance(ctx); err != nil && ctx.Err() == nil {
			m.w.log.Warn().Err(err).Msg("membership; will retry")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func (m *membership) rebalance(ctx context.Context) error {
	if _, err := m.kv.Put(ctx, m.id, []byte(time.Now().UTC().Format(time.RFC3339Nano))); err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	lister, err := m.kv.ListKeys(ctx)
	if err != nil {
		return fmt.Errorf("listing members: %w", err)
	}
	var members []string
	for k := range lister.Keys() {
		members = append(members, k)
	}
	if !slices.Contains(members, m.id) {
		members = append(members, m.id)
	}
	slices.Sort(members)
	want := assign(m.id, members, m.w.cfg.Topology.Partitions)
	m.mu.Lock()
	var start, stop []int
	for _, p := range want {
		if _, ok := m.running[p]; !ok {
			start = append(start, p)
		}
	}
	for p := range m.running {
		if !slices.Contains(want, p) {
			stop = append(stop, p)
		}
	}
	m.mu.Unlock()
	for _, p := range stop {
		m.release(p)
	}
	for _, p := range start {
		m.acquire(ctx, p)
	}
	if len(start)+len(stop) > 0 {
		m.w.log.Info().Str("member", m.id).Strs("members", members).Ints("partitions", m.owned()).
			Ints("acquired", start).Ints("released", stop).Msg("partitions rebalanced")
	}
	return nil
}

// acquire starts consuming partition p. It unpins p's consumers first: the member that held the
// partition may be dead, and its pin was not released by the pin's TTL in 2 of 7 fault runs
// (make chaos: a partition stayed unserved for minutes after its member and the node leading
// consumers were killed; with this unpin, 8 of 8 runs passed). If that member is alive it pulls
// again and is pinned again until it releases the partition; both holding it for a moment is
// safe (commits are revision-checked).
func (m *membership) acquire(ctx context.Context, p int) {
	m.w.unpin(p)
	pctx, cancel := context.WithCancel(ctx)
	r := &running{cancel: cancel, done: make(chan struct{})}
	m.mu.Lock()
	m.running[p] = r
	m.mu.Unlock()
	go func() {
		defer close(r.done)
		m.w.keepPartition(pctx, p)
	}()
}

// release stops consuming partition p (draining what was delivered) and unpins its consumers so
// that the new owner is served at once.
func (m *membership) release(p int) {
	m.mu.Lock()
	r := m.running[p]
	delete(m.running, p)
	m.mu.Unlock()
	if r == nil {
		return
	}
	r.cancel()
	<-r.done
	m.w.unpin(p)
}

// unpin unpins partition p's consumers, so that whoever consumes it next is served at once
// instead of after the pin's TTL.
func (w *Worker) unpin(p int) {
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	topo := w.cfg.Topology
	for stream, consumer := range map[string]string{topo.TurnsStream(): TurnsConsumerName(topo, p), topo.SummaryStream(): SummaryConsumerName(topo, p)} {
		s, err := w.js.Stream(ctx, stream)
		if err != nil {
			continue
		}
		if err := s.UnpinConsumer(ctx, consumer, PriorityGroup); err != nil && !isNotPinned(err) {
			w.log.Debug().Err(err).Str("consumer", consumer).Msg("unpinning")
		}
	}
}

func isNotPinned(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "pin")
}

// leave stops every partition and removes the member's key.
func (m *membership) leave() {
	for _, p := range m.owned() {
		m.release(p)
	}
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := m.kv.Delete(ctx, m.id); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		m.w.log.Debug().Err(err).Msg("leaving")
	}
}

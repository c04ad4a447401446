package eval

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/pkg/events"
)

// drained is what one look at the consumers of the turns stream saw.
type drained struct {
	consumers int
	pending   uint64 // NumPending + NumAckPending over every consumer
	busy      []busyConsumer
}

// busyConsumer is a consumer with something pending or unacknowledged.
type busyConsumer struct {
	name                string
	pending, ackPending uint64
}

func (c busyConsumer) String() string {
	return fmt.Sprintf("%s pending=%d ack_pending=%d", c.name, c.pending, c.ackPending)
}

// summary names the n busiest consumers.
func (d drained) summary(n int) string {
	busy := slices.Clone(d.busy)
	slices.SortStableFunc(busy, func(a, b busyConsumer) int { return cmp.Compare(b.pending+b.ackPending, a.pending+a.ackPending) })
	var parts []string
	for _, c := range busy[:min(n, len(busy))] {
		parts = append(parts, c.String())
	}
	if len(busy) > n {
		parts = append(parts, fmt.Sprintf("and %d more", len(busy)-n))
	}
	return strings.Join(parts, "; ")
}

// lookDrained lists every consumer of stream with what it has pending or unacknowledged.
func lookDrained(ctx context.Context, st jetstream.Stream) (drained, error) {
	var d drained
	lister := st.ListConsumers(ctx)
	for ci := range lister.Info() {
		d.consumers++
		if p := ci.NumPending + uint64(ci.NumAckPending); p > 0 {
			d.pending += p
			d.busy = append(d.busy, busyConsumer{ci.Name, ci.NumPending, uint64(ci.NumAckPending)})
		}
	}
	if err := lister.Err(); err != nil {
		return d, fmt.Errorf("listing the consumers of %s: %w", st.CachedInfo().Config.Name, err)
	}
	return d, nil
}

// waitDrained waits, as an operator would, until every consumer of the stream that holds the
// turns (memory.turns.>) reports nothing pending and nothing unacknowledged, looking every poll.
// It fails when no stream holds the turns, when the stream has no consumer (nothing would ever
// apply the turns) or after timeout, naming the consumers still busy.
func waitDrained(ctx context.Context, js jetstream.JetStream, poll, timeout time.Duration, log zerolog.Logger) (time.Duration, error) {
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	name, err := js.StreamNameBySubject(ctx, events.TurnsSubjects)
	if err != nil {
		return 0, fmt.Errorf("finding the stream of %s: %w", events.TurnsSubjects, err)
	}
	st, err := js.Stream(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", name, err)
	}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	var most uint64 // the most ever pending: the base of the drained share
	nextTenth, lastLog := 1, time.Now()
	var last drained // the last complete look, for the timeout's error
	for {
		d, err := lookDrained(ctx, st)
		if err == nil {
			last = d
		}
		switch {
		case err != nil && ctx.Err() == nil:
			return time.Since(start), err
		case err != nil:
		case d.consumers == 0:
			return time.Since(start), fmt.Errorf("stream %s has no consumers: nothing applies the turns (is the service running?)", name)
		case d.pending == 0:
			log.Info().Msgf("ingest: all %d consumers of %s drained after %s", d.consumers, name, time.Since(start).Round(time.Millisecond))
			return time.Since(start), nil
		default:
			most = max(most, d.pending)
			tenth := int(10 * (most - d.pending) / most)
			if tenth >= nextTenth || time.Since(lastLog) >= 10*time.Second {
				log.Info().Msgf("ingest: %d message(s) pending, %d%% drained, after %s: %s", d.pending, 10*tenth,
					time.Since(start).Round(time.Second), d.summary(3))
				nextTenth, lastLog = max(nextTenth, tenth+1), time.Now()
			}
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return time.Since(start), fmt.Errorf("the consumers of %s did not drain within %s: %s", name, timeout, last.summary(len(last.busy)))
			}
			return time.Since(start), ctx.Err()
		case <-tick.C:
		}
	}
}

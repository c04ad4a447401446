package eval

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/pkg/events"
)

// drained is what one look at the consumers of the turns stream saw.
type drained struct {
	consumers int
	pending   uint64   // NumPending + NumAckPending over every consumer
	busy      []string // the consumers with something pending
}

// lookDrained lists every consumer of stream with what it has pending or unacknowledged.
func lookDrained(ctx context.Context, st jetstream.Stream) (drained, error) {
	var d drained
	lister := st.ListConsumers(ctx)
	for ci := range lister.Info() {
		d.consumers++
		if p := ci.NumPending + uint64(ci.NumAckPending); p > 0 {
			d.pending += p
			d.busy = append(d.busy, fmt.Sprintf("%s pending=%d ack_pending=%d", ci.Name, ci.NumPending, ci.NumAckPending))
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
	var first uint64
	lastLog := time.Now()
	for {
		d, err := lookDrained(ctx, st)
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
			first = max(first, d.pending)
			if time.Since(lastLog) >= 5*time.Second {
				log.Info().Msgf("ingest: %d message(s) pending (%d%% drained) after %s: %s", d.pending,
					100-100*d.pending/first, time.Since(start).Round(time.Second), strings.Join(d.busy, "; "))
				lastLog = time.Now()
			}
		}
		select {
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return time.Since(start), fmt.Errorf("the consumers of %s did not drain within %s: %s", name, timeout, strings.Join(d.busy, "; "))
			}
			return time.Since(start), ctx.Err()
		case <-tick.C:
		}
	}
}

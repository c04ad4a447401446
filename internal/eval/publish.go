package eval

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"
	"golang.org/x/sync/errgroup"

	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// PublishStats says what publishing stored.
type PublishStats struct {
	Sessions   int           `json:"sessions"`
	Turns      int           `json:"turns"`
	Ends       int           `json:"ends"`
	Duplicates int           `json:"duplicates"` // turns the stream had stored before (a re-run)
	Retried    int           `json:"retried"`
	Elapsed    time.Duration `json:"elapsed_ns"`
}

// publishAttempts is how often one event is tried; a retried turn keeps its id, so the stream
// stores it once.
const publishAttempts = 3

// publish stores every session through pkg/client: the turns of a session one after the other
// (so they are stored in order), then its end. Up to window sessions are published at once, so
// at most window PubAcks are outstanding.
func publish(ctx context.Context, nc *nats.Conn, sessions []Session, window int, timeout time.Duration, log zerolog.Logger) (PublishStats, error) {
	start := time.Now()
	clients := map[string]*client.Client{}
	total := 0
	for _, s := range sessions {
		if _, ok := clients[s.Tenant]; !ok {
			cl, err := client.New(nc, client.Options{Tenant: s.Tenant, Source: "agentmem/memeval", Timeout: timeout})
			if err != nil {
				return PublishStats{}, err
			}
			clients[s.Tenant] = cl
		}
		total += len(s.Turns) + 1
	}
	prog := newProgress(log, "publish", total)
	var turns, ends, dups, retried atomic.Int64
	next := make(chan int)
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error {
		defer close(next)
		for i := range sessions {
			select {
			case next <- i:
			case <-gctx.Done():
				return gctx.Err()
			}
		}
		return nil
	})
	var once sync.Once
	for range max(1, min(window, len(sessions))) {
		g.Go(func() error {
			for i := range next {
				s := sessions[i]
				cl := clients[s.Tenant]
				for _, t := range s.Turns {
					ack, n, err := retry(gctx, func(ctx context.Context) (client.Ack, error) { return cl.Publish(ctx, t) })
					retried.Add(int64(n))
					if err != nil {
						return fmt.Errorf("publishing turn %q of session %s/%s: %w", t.ID, s.Tenant, s.ID, err)
					}
					turns.Add(1)
					if ack.Duplicate {
						dups.Add(1)
						once.Do(func() {
							log.Warn().Str("tenant", s.Tenant).Msg("the stream had stored these turns before (a re-run against the same service): they are not applied again")
						})
					}
					prog.add(1)
				}
				_, n, err := retry(gctx, func(ctx context.Context) (client.Ack, error) { return cl.EndSession(ctx, s.ID, s.User) })
				retried.Add(int64(n))
				if err != nil {
					return fmt.Errorf("ending session %s/%s: %w", s.Tenant, s.ID, err)
				}
				ends.Add(1)
				prog.add(1)
			}
			return nil
		})
	}
	err := g.Wait()
	st := PublishStats{Sessions: int(ends.Load()), Turns: int(turns.Load()), Ends: int(ends.Load()),
		Duplicates: int(dups.Load()), Retried: int(retried.Load()), Elapsed: time.Since(start)}
	return st, err
}

// retry calls fn up to publishAttempts times while it fails for a reason other than bad input;
// it returns the number of retries.
func retry(ctx context.Context, fn func(context.Context) (client.Ack, error)) (client.Ack, int, error) {
	var err error
	for attempt := range publishAttempts {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return client.Ack{}, attempt - 1, errors.Join(err, ctx.Err())
			case <-time.After(time.Duration(attempt) * 250 * time.Millisecond):
			}
		}
		var ack client.Ack
		if ack, err = fn(ctx); err == nil {
			return ack, attempt, nil
		}
		if errors.Is(err, events.ErrInvalid) || ctx.Err() != nil {
			return client.Ack{}, attempt, err
		}
	}
	return client.Ack{}, publishAttempts - 1, err
}

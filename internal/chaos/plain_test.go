package chaos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/daemon/daemontest"
	"github.com/agentmem/agentmem/pkg/events"
)

// publish stores msg (with its Nats-Msg-Id) once, riding through a stream leader's election.
func publish(ctx context.Context, js jetstream.JetStream, msg *nats.Msg) (*jetstream.PubAck, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second) // past an election: 4-9 s after a crash
	defer cancel()
	for {
		// A send to a leader that just died is never answered: give up on it after 2 s. While no
		// stream answers (no responders), nats.go sends again every 250 ms within the attempt.
		attempt, stop := context.WithTimeout(ctx, 2*time.Second)
		ack, err := js.PublishMsg(attempt, msg, jetstream.WithRetryAttempts(10), jetstream.WithRetryWait(250*time.Millisecond))
		stop()
		var apiErr *jetstream.APIError
		switch {
		case err == nil:
			return ack, nil
		case errors.As(err, &apiErr) && apiErr.Code < 500, ctx.Err() != nil:
			return nil, err // refused (a 4xx: the turn is invalid), or out of time
		}
		select { // then the same message again: the same Nats-Msg-Id, stored once
		case <-ctx.Done():
			return nil, err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// plainTurn is turn i of session s of tenant plain, as a plain publisher builds it: a binary-mode
// CloudEvent with Nats-Msg-Id <tenant>.<session>.<id>.
func plainTurn(s string, i int) (*nats.Msg, string, error) {
	id := fmt.Sprintf("%s-%05d", s, i)
	msg, err := events.NewMsg(context.Background(), "plain", s, id, events.TypeTurn, "agent/plain", time.Now(),
		events.Turn{Role: "user", Content: fmt.Sprintf("turn %d of a plain publisher: the rollback plan", i), User: "u-" + s})
	return msg, id, err
}

// The documented settings of a plain nats.go publisher (publish above, docs/protocol.md) ride
// through a kill -9 of the node leading the turns stream: 0 failed, each turn stored once. A
// publisher with nats.go's defaults, in the same crash, usually fails some (logged).
func TestPlainPublisherRidesThroughALeaderCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3-node cluster and crashes a node; skipped with -short")
	}
	c := daemontest.StartCluster(t)
	js := c.JetStream(t, c.Connect(t, "plain"))
	const publishers = 3
	var acked, defaultsOK, defaultsFailed atomic.Int64
	stop := make(chan struct{})
	errs := make(chan error, publishers)
	published := make([][]string, publishers)
	slowest := make([]time.Duration, publishers)
	var wg sync.WaitGroup
	for p := range publishers {
		wg.Go(func() {
			sess := fmt.Sprintf("p%d", p)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				msg, id, err := plainTurn(sess, i)
				start := time.Now()
				if err == nil {
					_, err = publish(context.Background(), js, msg)
				}
				if err != nil {
					errs <- fmt.Errorf("turn %s: %w", id, err)
					return
				}
				slowest[p] = max(slowest[p], time.Since(start))
				published[p] = append(published[p], id)
				acked.Add(1)
			}
		})
	}
	wg.Go(func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			msg, _, err := plainTurn("defaults", i)
			if err == nil {
				_, err = js.PublishMsg(context.Background(), msg) // nats.go's defaults
			}
			if err != nil {
				defaultsFailed.Add(1)
				continue
			}
			defaultsOK.Add(1)
		}
	})
	c.CrashTurnsLeaderUnder(t, &acked, errs, 90*time.Second)
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		return
	}
	stored := c.Stored(t)
	total := 0
	for p, ids := range published {
		total += len(ids)
		for _, id := range ids {
			if n := stored[events.MsgID("plain", fmt.Sprintf("p%d", p), id)]; n != 1 {
				t.Errorf("turn %s stored %d times", id, n)
			}
		}
	}
	t.Logf("documented settings: %d published, 0 failed, each stored once, the slowest in %s; nats.go's defaults in the same crash: %d of %d failed",
		total, slices.Max(slowest).Round(time.Millisecond), defaultsFailed.Load(), defaultsOK.Load()+defaultsFailed.Load())
	// The crash must bite: the stream went without a leader (a handover costs milliseconds). A
	// publisher with nats.go's defaults usually gives up on the election too, but not always: one
	// caught waiting on the dead connection has 5 s, and an election can end within them (the
	// log above says how many failed).
	if slices.Max(slowest) < time.Second {
		t.Errorf("the slowest publish took %s: the crash was not staged (no election)", slices.Max(slowest))
	}
}

// docs/protocol.md shows publish as it is here.
func TestPlainPublisherIsDocumented(t *testing.T) {
	src, err := os.ReadFile("plain_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fn := regexp.MustCompile(`(?s)// publish stores msg.*?\n}\n`).Find(src)
	doc, err := os.ReadFile("../../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	if fn == nil || !strings.Contains(string(doc), "```go\n"+string(fn)+"```\n") {
		t.Errorf("docs/protocol.md does not show publish (internal/chaos/plain_test.go) as it is:\n%s", fn)
	}
}

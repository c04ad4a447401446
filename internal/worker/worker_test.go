package worker_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/deadletter"
	"github.com/agentmem/agentmem/internal/worker"
	"github.com/agentmem/agentmem/pkg/events"
)

func setup(t *testing.T, maxDeliver int, ackWait time.Duration) (*brokertest.Env, jetstream.JetStream) {
	t.Helper()
	env := brokertest.Start(t)
	ctx := context.Background()
	topo := events.DefaultTopology()
	if err := topo.Ensure(ctx, env.JS); err != nil {
		t.Fatal(err)
	}
	if _, err := env.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "WORK", Subjects: []string{"work.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.JS.CreateOrUpdateConsumer(ctx, "WORK", jetstream.ConsumerConfig{Durable: "w", AckPolicy: jetstream.AckExplicitPolicy,
		MaxDeliver: maxDeliver, AckWait: ackWait}); err != nil {
		t.Fatal(err)
	}
	return env, env.JS
}

// run starts a worker on consumer w of stream WORK; stop (also called at cleanup) stops it and
// waits for Run to return.
func run(t *testing.T, env *brokertest.Env, cfg worker.Config, h worker.Handler) (stop func()) {
	t.Helper()
	js, _ := jetstream.New(env.Connect(t))
	cfg.Stream, cfg.Consumer, cfg.Name = "WORK", "w", "test"
	w := worker.New(cfg, js, deadletter.NewWriter(js, 0), h, zerolog.Nop())
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return stop
}

func nextLetter(t *testing.T, env *brokertest.Env, timeout time.Duration) events.DeadLetter {
	t.Helper()
	var dl events.DeadLetter
	brokertest.CheckFor(t, timeout, 20*time.Millisecond, func() error {
		s, err := env.JS.Stream(context.Background(), "AGENTMEM_DLQ")
		if err != nil {
			return err
		}
		m, err := s.GetMsg(context.Background(), 1)
		if err != nil {
			return err
		}
		return json.Unmarshal(m.Data, &dl)
	})
	return dl
}

func TestPermanentErrorsAreDeadLetteredAtOnce(t *testing.T) {
	env, js := setup(t, 5, 5*time.Second)
	var calls atomic.Int64
	run(t, env, worker.Config{}, func(context.Context, jetstream.Msg) error {
		calls.Add(1)
		return worker.Permanent(errors.New("the body names no session"))
	})
	if _, err := js.Publish(context.Background(), "work.a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	dl := nextLetter(t, env, 10*time.Second)
	if !strings.Contains(dl.Reason, "names no session") || dl.Delivered != 1 || calls.Load() != 1 {
		t.Fatalf("dead letter %+v after %d calls", dl, calls.Load())
	}
}

func TestLastFailedDeliveryIsDeadLettered(t *testing.T) {
	env, js := setup(t, 3, 5*time.Second)
	var calls atomic.Int64
	run(t, env, worker.Config{Backoff: func(uint64) time.Duration { return 10 * time.Millisecond }}, func(context.Context, jetstream.Msg) error {
		calls.Add(1)
		return errors.New("the LLM is down")
	})
	if _, err := js.Publish(context.Background(), "work.a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	dl := nextLetter(t, env, 10*time.Second)
	if !strings.Contains(dl.Reason, "all 3 deliveries") || !strings.Contains(dl.Reason, "LLM is down") || calls.Load() != 3 {
		t.Fatalf("dead letter %+v after %d calls", dl, calls.Load())
	}
}

func TestPanicIsRetried(t *testing.T) {
	env, js := setup(t, 5, 5*time.Second)
	var calls atomic.Int64
	done := make(chan struct{})
	run(t, env, worker.Config{Backoff: func(uint64) time.Duration { return 10 * time.Millisecond }}, func(context.Context, jetstream.Msg) error {
		if calls.Add(1) == 1 {
			panic("boom")
		}
		close(done)
		return nil
	})
	if _, err := js.Publish(context.Background(), "work.a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the message was not retried after the panic")
	}
}

// A worker that dies (here: hangs) during the last delivery never fails it; JetStream gives up
// and says so in an advisory, which the worker group turns into a dead letter.
func TestExhaustedWithoutAFailureIsDeadLetteredFromTheAdvisory(t *testing.T) {
	env, js := setup(t, 2, 300*time.Millisecond)
	release := make(chan struct{})
	// Both deliveries hang; the third handler keeps pulling, so JetStream tries a third delivery
	// and gives up (a worker with every handler busy fetches nothing).
	run(t, env, worker.Config{Heartbeat: time.Hour, Timeout: time.Hour, Concurrency: 3}, func(ctx context.Context, _ jetstream.Msg) error {
		<-release
		return fmt.Errorf("released")
	})
	t.Cleanup(func() { close(release) }) // runs before the worker's own cleanup waits for its handlers
	if _, err := js.Publish(context.Background(), "work.a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	dl := nextLetter(t, env, 15*time.Second)
	if !strings.Contains(dl.Reason, "stopped after 2 deliveries") || dl.StreamSeq != 1 || dl.Consumer != "w" {
		t.Fatalf("dead letter %+v", dl)
	}
}

// A worker holds only messages it handles, each with heartbeats: messages that arrive while every
// handler is busy stay on the server (and go to whichever process is free) instead of waiting in
// a buffer until their AckWait runs out and they are delivered a second time.
func TestBusyWorkerLeavesMessagesOnTheServer(t *testing.T) {
	env, js := setup(t, -1, 300*time.Millisecond)
	type handled struct {
		data      string
		delivered uint64
	}
	got := make(chan handled, 16)
	release := make(chan struct{})
	run(t, env, worker.Config{Heartbeat: 50 * time.Millisecond, Concurrency: 1}, func(ctx context.Context, m jetstream.Msg) error {
		meta, _ := m.Metadata()
		got <- handled{string(m.Data()), meta.NumDelivered}
		if string(m.Data()) == "slow" {
			<-release
		}
		return nil
	})
	ctx := context.Background()
	if _, err := js.Publish(ctx, "work.a", []byte("slow")); err != nil {
		t.Fatal(err)
	}
	if h := <-got; h.data != "slow" {
		t.Fatalf("first handled %q", h.data)
	}
	for i := range 3 {
		if _, err := js.Publish(ctx, "work.a", fmt.Appendf(nil, "queued-%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	// Several AckWaits pass while the only handler is busy.
	cons, _ := js.Consumer(ctx, "WORK", "w")
	brokertest.CheckFor(t, 5*time.Second, 50*time.Millisecond, func() error {
		info, err := cons.Info(ctx)
		if err != nil {
			return err
		}
		if info.NumPending != 3 || info.NumAckPending != 1 {
			return fmt.Errorf("pending %d, ack pending %d: want 3 left on the server and 1 held", info.NumPending, info.NumAckPending)
		}
		return nil
	})
	select {
	case h := <-got:
		t.Fatalf("%q was handled while the only handler was busy", h.data)
	case <-time.After(time.Second): // a few AckWaits
	}
	close(release)
	for range 3 {
		if h := <-got; h.delivered != 1 {
			t.Fatalf("%q was delivered %d times", h.data, h.delivered)
		}
	}
}

// A consumer that skips most messages fetches ahead; the messages it fetched ahead and does not
// skip wait for a handler with heartbeats, so none is redelivered while this process holds it.
func TestSkippingWorkerFetchesAheadAndKeepsWhatWaits(t *testing.T) {
	env, js := setup(t, -1, 300*time.Millisecond)
	handled := make(chan string, 16)
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	run(t, env, worker.Config{Heartbeat: 50 * time.Millisecond, Concurrency: 1,
		Skip: func(m jetstream.Msg) bool { return strings.HasPrefix(string(m.Data()), "skip") }},
		func(ctx context.Context, m jetstream.Msg) error {
			meta, _ := m.Metadata()
			if meta.NumDelivered != 1 {
				t.Errorf("%s delivered %d times", m.Data(), meta.NumDelivered)
			}
			if string(m.Data()) == "work-0" {
				<-release // a slow handler: held below for several AckWaits
			}
			handled <- string(m.Data())
			return nil
		})
	t.Cleanup(free) // before the worker's own cleanup waits for its handlers
	ctx := context.Background()
	for i := range 300 {
		data := fmt.Sprintf("skip-%d", i)
		if i%100 == 0 {
			data = fmt.Sprintf("work-%d", i/100)
		}
		if _, err := js.Publish(ctx, "work.a", []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	// The only handler is busy; work-1 and work-2 were fetched ahead with the skipped ones and
	// wait in this process. For several AckWaits none of them is redelivered.
	cons, _ := js.Consumer(ctx, "WORK", "w")
	brokertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		info, err := cons.Info(ctx)
		if err != nil {
			return err
		}
		if info.NumAckPending != 3 {
			return fmt.Errorf("%d unacknowledged: want 3 (work-0 handled, two waiting)", info.NumAckPending)
		}
		return nil
	})
	for end := time.Now().Add(time.Second); time.Now().Before(end); {
		info, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.NumRedelivered != 0 {
			t.Fatalf("%d messages redelivered while this process held them", info.NumRedelivered)
		}
	}
	free()
	for i := range 3 {
		select {
		case h := <-handled:
			if h != fmt.Sprintf("work-%d", i) {
				t.Fatalf("handled %s, want work-%d", h, i)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("work-%d not handled", i)
		}
	}
	brokertest.CheckFor(t, 5*time.Second, 20*time.Millisecond, func() error {
		info, err := cons.Info(ctx)
		if err != nil {
			return err
		}
		if info.NumPending+uint64(info.NumAckPending) != 0 || info.NumRedelivered != 0 {
			return fmt.Errorf("pending %d, unacknowledged %d, redelivered %d", info.NumPending, info.NumAckPending, info.NumRedelivered)
		}
		return nil
	})
}

// TestMessagesFetchedAheadStartWhenAHandlerFrees: a fetch asking for more messages than the
// consumer has lasts its whole FetchWait; a message it delivered while every handler was busy is
// started as soon as one frees, not when the fetch ends.
func TestMessagesFetchedAheadStartWhenAHandlerFrees(t *testing.T) {
	env, js := setup(t, -1, 300*time.Millisecond)
	handled := make(chan string, 16)
	release := make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	stop := run(t, env, worker.Config{Heartbeat: 50 * time.Millisecond, Concurrency: 1, FetchWait: time.Minute,
		Skip: func(m jetstream.Msg) bool { return strings.HasPrefix(string(m.Data()), "skip") }},
		func(ctx context.Context, m jetstream.Msg) error {
			if string(m.Data()) == "work-0" {
				<-release
			}
			handled <- string(m.Data())
			return nil
		})
	t.Cleanup(free)
	ctx := context.Background()
	publish := func(data string) {
		t.Helper()
		if _, err := js.Publish(ctx, "work.a", []byte(data)); err != nil {
			t.Fatal(err)
		}
	}
	publish("work-0")
	publish("work-1")
	cons, _ := js.Consumer(ctx, "WORK", "w")
	brokertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		info, err := cons.Info(ctx)
		if err != nil {
			return err
		}
		if info.NumAckPending != 2 {
			return fmt.Errorf("%d delivered: want both in this process's fetch", info.NumAckPending)
		}
		return nil
	})
	free()
	for i := range 2 {
		select {
		case h := <-handled:
			if h != fmt.Sprintf("work-%d", i) {
				t.Fatalf("handled %s, want work-%d", h, i)
			}
		case <-time.After(15 * time.Second):
			t.Fatalf("work-%d not handled while the fetch that delivered it waits for more", i)
		}
	}
	// Stop the worker: the fetch in flight asks for 256 messages and would wait its whole minute,
	// so fill it.
	stopped := make(chan struct{})
	go func() { stop(); close(stopped) }()
	for i := range 256 {
		publish(fmt.Sprintf("skip-%d", i))
	}
	select {
	case <-stopped:
	case <-time.After(15 * time.Second):
		t.Fatal("the worker did not stop once its fetch was filled")
	}
}

// TestCreatedFollowsAConsumerCreatedAgain: a worker is told when its consumer was created, and
// told again, before the message is handled, when the consumer was deleted and created anew
// under it (its deliveries start over from the stream's first message).
func TestCreatedFollowsAConsumerCreatedAgain(t *testing.T) {
	env, js := setup(t, 5, 5*time.Second)
	ctx := context.Background()
	var created atomic.Int64
	type seen struct {
		data    string
		created int64
	}
	handled := make(chan seen, 16)
	run(t, env, worker.Config{Created: func(at time.Time) { created.Store(at.UnixNano()) }},
		func(_ context.Context, m jetstream.Msg) error {
			handled <- seen{string(m.Data()), created.Load()}
			return nil
		})
	if _, err := js.Publish(ctx, "work.a", []byte("one")); err != nil {
		t.Fatal(err)
	}
	next := func() seen {
		t.Helper()
		select {
		case s := <-handled:
			return s
		case <-time.After(10 * time.Second):
			t.Fatal("no message handled in 10s")
			return seen{}
		}
	}
	first := next()
	info, err := js.Consumer(ctx, "WORK", "w")
	if err != nil {
		t.Fatal(err)
	}
	if first.data != "one" || first.created != info.CachedInfo().Created.UnixNano() {
		t.Fatalf("first message %+v, want it handled knowing the consumer's creation %v", first, info.CachedInfo().Created)
	}
	if err := js.DeleteConsumer(ctx, "WORK", "w"); err != nil {
		t.Fatal(err)
	}
	again, err := js.CreateOrUpdateConsumer(ctx, "WORK", jetstream.ConsumerConfig{Durable: "w", AckPolicy: jetstream.AckExplicitPolicy,
		MaxDeliver: 5, AckWait: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	want := again.CachedInfo().Created.UnixNano()
	if want == first.created {
		t.Fatal("the consumer created again has the first one's creation time")
	}
	// The new consumer delivers "one" again: it is handled knowing the new creation time.
	replayed := next()
	if replayed.data != "one" || replayed.created != want {
		t.Fatalf("replayed message %+v, want it handled knowing the new creation %d", replayed, want)
	}
}

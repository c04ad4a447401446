package worker

import (
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// hold keeps msgs from being redelivered while they are handled: every interval it sends
// InProgress for each of them, which restarts their AckWait. release stops it; it returns once
// no InProgress is being sent any more, so a message settled after release is never extended.
func hold(msgs []jetstream.Msg, every time.Duration) (release func()) {
	h := newHeld(every)
	for _, m := range msgs {
		h.add(m)
	}
	return h.stop
}

// held is a changing set of messages kept with heartbeats: every interval it sends InProgress
// for each message in it. A message taken out (or every message, once stopped) is never
// extended again after take (stop) returns.
type held struct {
	mu      sync.Mutex
	msgs    map[jetstream.Msg]struct{}
	stopped bool
	t       *time.Timer
}

func newHeld(every time.Duration) *held {
	h := &held{msgs: map[jetstream.Msg]struct{}{}}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.t = time.AfterFunc(every, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.stopped {
			return
		}
		for m := range h.msgs {
			_ = m.InProgress()
		}
		h.t.Reset(every)
	})
	return h
}

// add puts m in the set.
func (h *held) add(m jetstream.Msg) {
	h.mu.Lock()
	h.msgs[m] = struct{}{}
	h.mu.Unlock()
}

// take takes m out of the set.
func (h *held) take(m jetstream.Msg) {
	h.mu.Lock()
	delete(h.msgs, m)
	h.mu.Unlock()
}

// stop ends the heartbeats.
func (h *held) stop() {
	h.mu.Lock()
	h.stopped = true
	h.t.Stop()
	h.mu.Unlock()
}

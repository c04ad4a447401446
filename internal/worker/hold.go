package worker

import (
	"slices"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// hold keeps msgs from being redelivered while they are handled: every interval it sends
// InProgress for each of them, which restarts their AckWait. release stops it; it returns once
// no InProgress is being sent any more, so a message settled after release is never extended.
func hold(msgs []jetstream.Msg, every time.Duration) (release func()) {
	return newHeld(every, msgs).stop
}

// held is a changing set of messages kept with heartbeats: every interval it sends InProgress
// for each message in it. A message taken out (or every message, once stopped) is never
// extended again after take (stop) returns.
type held struct {
	mu      sync.Mutex
	msgs    []jetstream.Msg
	stopped bool
	t       *time.Timer
}

// newHeld keeps msgs, and what is added later, with heartbeats every interval.
func newHeld(every time.Duration, msgs []jetstream.Msg) *held {
	h := &held{msgs: msgs}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.t = time.AfterFunc(every, func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.stopped {
			return
		}
		for _, m := range h.msgs {
			_ = m.InProgress()
		}
		h.t.Reset(every)
	})
	return h
}

// add puts m in the set.
func (h *held) add(m jetstream.Msg) {
	h.mu.Lock()
	h.msgs = append(h.msgs, m)
	h.mu.Unlock()
}

// take takes m out of the set (a queue of a fetch's messages: a few hundred at most).
func (h *held) take(m jetstream.Msg) {
	h.mu.Lock()
	if i := slices.Index(h.msgs, m); i >= 0 {
		last := len(h.msgs) - 1
		h.msgs[i], h.msgs[last] = h.msgs[last], nil
		h.msgs = h.msgs[:last]
	}
	h.mu.Unlock()
}

// stop ends the heartbeats.
func (h *held) stop() {
	h.mu.Lock()
	h.stopped = true
	h.t.Stop()
	h.mu.Unlock()
}

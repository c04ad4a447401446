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
	var mu sync.Mutex
	stopped := false
	var t *time.Timer
	mu.Lock()
	t = time.AfterFunc(every, func() {
		mu.Lock()
		defer mu.Unlock()
		if stopped {
			return
		}
		for _, m := range msgs {
			_ = m.InProgress()
		}
		t.Reset(every)
	})
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		t.Stop()
		mu.Unlock()
	}
}

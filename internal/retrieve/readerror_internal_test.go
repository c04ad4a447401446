package retrieve

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// TestReadErrorSaysTryAgainWhileJetStreamDoesNotAnswer: a read that found no stream to answer
// (a leader being elected) or timed out is a 503, which agentmem's clients ask again; anything
// else a 500.
func TestReadErrorSaysTryAgainWhileJetStreamDoesNotAnswer(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
	}{
		{fmt.Errorf("reading 0.memory.turns.acme.s0 from %q at 145: %w", "AGENTMEM_TURNS", nats.ErrNoResponders), 503},
		{fmt.Errorf("get: %w", nats.ErrTimeout), 503},
		{context.DeadlineExceeded, 503},
		{jetstream.ErrNoStreamResponse, 503},
		{&jetstream.APIError{Code: 503, Description: "JetStream system temporarily unavailable"}, 503},
		{&jetstream.APIError{Code: 500, Description: "insufficient resources"}, 500},
		{errors.New("corrupt record"), 500},
	} {
		if got := readError("reading session", tc.err); got.Code != tc.code {
			t.Errorf("%v: %d, want %d", tc.err, got.Code, tc.code)
		}
	}
}

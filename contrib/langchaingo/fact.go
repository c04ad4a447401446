package langchaingo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// WaitForFact polls agentmem until user has a live fact that contains substr (ignoring case;
// any fact when substr is empty) and returns its content. Facts are extracted after a session
// ends (Memory.Clear, ChatHistory.Clear), so they appear a moment later. It waits up to 15s when
// ctx has no deadline, and fails with the context's error when none appeared in time.
func WaitForFact(ctx context.Context, c *client.Client, user, substr string) (string, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 15*time.Second)
		defer cancel()
	}
	query := substr
	if strings.TrimSpace(query) == "" {
		query = "what do you know about me?"
	}
	// The profile carries the user's live facts whatever the query shares with them.
	req := events.RetrieveRequest{Query: query, User: user, Sources: []string{events.SourceLong}, Types: []string{string(memory.Fact)}}
	for {
		reply, err := c.Retrieve(ctx, req)
		if err == nil {
			for _, e := range append(reply.Entries, reply.Profile...) {
				if strings.Contains(strings.ToLower(e.Content), strings.ToLower(substr)) {
					return e.Content, nil
				}
			}
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = ctx.Err()
			}
			return "", fmt.Errorf("waiting for a fact of %s with %q: %w", user, substr, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

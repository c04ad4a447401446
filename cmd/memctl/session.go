package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agentmem/agentmem/internal/view"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

func sessionCommand(out io.Writer) *ffcli.Command {
	c := &common{}
	var sess string
	return newCommand("session", "--session S", "show a session's short-term memory: entries, tokens, budget, usage ratio, pending", c, out,
		func(fs *flag.FlagSet) {
			fs.StringVar(&sess, "session", "", "session (required)")
		},
		func(ctx context.Context, _ []string) error {
			if sess == "" {
				return errors.New("--session is required")
			}
			v, err := c.readSession(ctx, sess)
			if err != nil {
				return err
			}
			return c.print(v, func(w io.Writer) {
				fmt.Fprintf(w, "session %s/%s  user %s\n", v.Tenant, v.Session, v.User)
				fmt.Fprintf(w, "tokens %d / %d (%.1f %%)  kept %d  pending %d (%d tokens)\n", v.Tokens, v.Budget, 100*v.Ratio, v.Kept, v.Pending, v.PendingTokens)
				fmt.Fprintf(w, "turns %d  rejected %d  pressures %d  summaries %d  ended %t\n", v.Turns, v.Rejected, v.Pressures, v.Summaries, v.Ended)
				for _, e := range v.Entries {
					extra := ""
					if e.Covers > 0 {
						extra = fmt.Sprintf(" covers %d turns", e.Covers)
					}
					fmt.Fprintf(w, "  %-7s %-12s %-9s %6d tok  %s  %s%s\n", e.State, e.Type, e.Role, e.Tokens, e.Timestamp.UTC().Format("2006-01-02 15:04:05"), e.ID, extra)
				}
			})
		})
}

// readSession asks the retriever for a session's short-term state on memory.session.<tenant>,
// a subject of the tenant's own: an agent's credentials do (docs/security.md).
func (c *common) readSession(ctx context.Context, sess string) (view.Session, error) {
	var v view.Session
	if err := events.ValidateToken("session", sess); err != nil {
		return v, fmt.Errorf("--session: %w", err)
	}
	subject, err := events.SessionSubject(c.tenant)
	if err != nil {
		return v, err
	}
	body, err := json.Marshal(events.SessionRequest{Session: sess})
	if err != nil {
		return v, err
	}
	nc, err := c.connect()
	if err != nil {
		return v, err
	}
	defer nc.Close()
	// Asked again, as the Go client asks a retrieve, when no retriever answered for a moment.
	ctx, cancel := context.WithTimeout(ctx, client.DefaultRetry)
	defer cancel()
	msg, _, err := client.Request(ctx, nc, &nats.Msg{Subject: subject, Data: body}, 10*time.Second)
	if err != nil {
		return v, fmt.Errorf("requesting %s: %w", subject, err)
	}
	if se := client.ServiceErrorOf(msg); se != nil {
		if se.Code == 404 {
			return v, fmt.Errorf("session %s/%s not found%s", c.tenant, sess, c.tenantHint())
		}
		return v, se
	}
	if err := json.Unmarshal(msg.Data, &v); err != nil {
		return v, fmt.Errorf("decoding the reply on %s: %w", subject, err)
	}
	return v, nil
}

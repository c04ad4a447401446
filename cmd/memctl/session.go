package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/view"
)

// sessionView is what memctl session prints.
type sessionView struct {
	Header  session.Header `json:"header"`
	Ratio   float64        `json:"ratio"`
	Entries []entryView    `json:"entries"`
}

// entryView is a view.Entry with its turns-stream sequence.
type entryView struct {
	ID        string    `json:"id"`
	Type      string    `json:"type"`
	Role      string    `json:"role,omitempty"`
	Tokens    int       `json:"tokens"`
	Timestamp time.Time `json:"timestamp"`
	Seq       uint64    `json:"seq,omitempty"`
	State     string    `json:"state"` // kept, pending, or named (waiting for its summary)
	Covers    int       `json:"covers,omitempty"`
}

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
			js, nc, err := c.jetstream()
			if err != nil {
				return err
			}
			defer nc.Close()
			store, err := session.NewStore(ctx, js, c.topo.Events())
			if err != nil {
				return err
			}
			st, err := store.Load(ctx, session.Key{Tenant: c.tenant, Session: sess}, 0)
			if err != nil {
				return err
			}
			if st.Revision() == 0 {
				return fmt.Errorf("session %s/%s not found", c.tenant, sess)
			}
			v := sessionView{Header: st.Header, Ratio: st.Header.Ratio()}
			for _, e := range view.NewSession(st).Entries {
				v.Entries = append(v.Entries, entryView{ID: e.ID, Type: e.Type, Role: e.Role, Tokens: e.Tokens,
					Timestamp: e.Timestamp, Seq: e.Stored.Seq, State: e.State, Covers: e.Covers})
			}
			return c.print(v, func(w io.Writer) {
				h := st.Header
				fmt.Fprintf(w, "session %s/%s  user %s  partition %d\n", h.Tenant, h.Session, h.User, h.Partition)
				fmt.Fprintf(w, "tokens %d / %d (%.1f %%)  kept %d  pending %d (%d tokens)\n", h.Tokens, h.Budget, 100*h.Ratio(), h.Kept, h.Pending, h.PendingTokens)
				fmt.Fprintf(w, "turns %d  rejected %d  pressures %d  summaries %d  ended %t  last seq %d\n", h.Turns, h.Rejected, h.Pressures, h.Summaries, h.Ended, h.LastSeq)
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

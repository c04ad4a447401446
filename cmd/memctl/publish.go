package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agentmem/agentmem/pkg/client"
)

func (c *common) client() (*client.Client, func(), error) {
	nc, err := c.conn.Connect("memctl")
	if err != nil {
		return nil, nil, err
	}
	cl, err := client.New(nc, client.Options{Tenant: c.tenant, Source: "agentmem/memctl", Timeout: 10 * time.Second})
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return cl, nc.Close, nil
}

func (c *common) print(v any, text func(io.Writer)) error {
	if c.json {
		enc := json.NewEncoder(c.out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	text(c.out)
	return nil
}

func publishCommand(out io.Writer) *ffcli.Command {
	c := &common{}
	var sess, user, role, text, id, tool, at string
	return newCommand("publish", "--session S --user U [--role user] [--text TEXT | TEXT...]",
		"publish one conversation turn", c, out,
		func(fs *flag.FlagSet) {
			fs.StringVar(&sess, "session", "", "session (required)")
			fs.StringVar(&user, "user", "", "user the session belongs to (required on its first turn)")
			fs.StringVar(&role, "role", "user", "role: user, assistant, system or tool")
			fs.StringVar(&text, "text", "", "turn content (or give it as arguments)")
			fs.StringVar(&id, "id", "", "turn id (default: a random UUID)")
			fs.StringVar(&tool, "tool", "", "tool name, for role tool")
			fs.StringVar(&at, "time", "", "when the turn happened, RFC 3339 (default: now)")
		},
		func(ctx context.Context, args []string) error {
			if text == "" {
				text = strings.Join(args, " ")
			}
			if sess == "" {
				return errors.New("--session is required")
			}
			t := client.Turn{ID: id, Session: sess, User: user, Role: role, Content: text, Tool: tool}
			if at != "" {
				ts, err := time.Parse(time.RFC3339, at)
				if err != nil {
					return fmt.Errorf("--time: %w", err)
				}
				t.Time = ts
			}
			cl, closeFn, err := c.client()
			if err != nil {
				return err
			}
			defer closeFn()
			ack, err := cl.Publish(ctx, t)
			if err != nil {
				return err
			}
			return c.print(ack, func(w io.Writer) {
				dup := ""
				if ack.Duplicate {
					dup = " (duplicate: stored before)"
				}
				fmt.Fprintf(w, "stored turn %s of %s/%s at %s seq %d%s\n", ack.ID, c.tenant, sess, ack.Stream, ack.Sequence, dup)
			})
		})
}

func endCommand(out io.Writer) *ffcli.Command {
	c := &common{}
	var sess, user string
	return newCommand("end", "--session S [--user U]", "end a session (its facts get extracted)", c, out,
		func(fs *flag.FlagSet) {
			fs.StringVar(&sess, "session", "", "session (required)")
			fs.StringVar(&user, "user", "", "user the session belongs to")
		},
		func(ctx context.Context, _ []string) error {
			if sess == "" {
				return errors.New("--session is required")
			}
			cl, closeFn, err := c.client()
			if err != nil {
				return err
			}
			defer closeFn()
			ack, err := cl.EndSession(ctx, sess, user)
			if err != nil {
				return err
			}
			return c.print(ack, func(w io.Writer) {
				fmt.Fprintf(w, "ended %s/%s (event %s, seq %d)\n", c.tenant, sess, ack.ID, ack.Sequence)
			})
		})
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go"
	"github.com/peterbourgon/ff/v3/ffcli"
	"golang.org/x/term"

	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
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
	var wait bool
	var waitFor time.Duration
	return newCommand("publish", "--session S --user U [--role user] [--wait] [--text TEXT | TEXT... | -- TEXT...]",
		"publish one conversation turn (and, with --wait, say whether it was applied or dead-lettered)", c, out,
		func(fs *flag.FlagSet) {
			fs.StringVar(&sess, "session", "", "session (required)")
			fs.StringVar(&user, "user", "", "user the session belongs to (required on its first turn)")
			fs.StringVar(&role, "role", "user", "role: user, assistant, system or tool")
			fs.StringVar(&text, "text", "", "turn content (or give it as arguments)")
			fs.StringVar(&id, "id", "", "turn id (default: a random UUID)")
			fs.StringVar(&tool, "tool", "", "tool name, for role tool")
			fs.StringVar(&at, "time", "", "when the turn happened, RFC 3339 (default: now)")
			fs.BoolVar(&wait, "wait", false, "after it is stored, wait until the turn is applied or dead-lettered and say which (default: true when standard output is a terminal); exit status 1 when it was dead-lettered or --wait-timeout passed")
			fs.DurationVar(&waitFor, "wait-timeout", 10*time.Second, "how long --wait waits")
		},
		func(ctx context.Context, args []string) error {
			if text != "" && len(args) > 0 {
				return fmt.Errorf("the text is given twice, with --text and as arguments %q: give one", args)
			}
			if text == "" {
				text = strings.Join(args, " ")
			}
			if sess == "" {
				return errors.New("--session is required")
			}
			if !flagSet(c.fs, "wait") {
				wait = isTerminal(out)
			}
			t := client.Turn{ID: id, Session: sess, User: user, Role: role, Content: text, Tool: tool}
			if at != "" {
				ts, err := time.Parse(time.RFC3339, at)
				if err != nil {
					return fmt.Errorf("--time: %w", err)
				}
				t.Time = ts
			}
			if t.ID == "" {
				t.ID = uuid.NewString()
			}
			nc, err := c.conn.Connect("memctl")
			if err != nil {
				return err
			}
			defer nc.Close()
			cl, err := client.New(nc, client.Options{Tenant: c.tenant, Source: "agentmem/memctl", Timeout: 10 * time.Second})
			if err != nil {
				return err
			}
			var letters *deadLetters
			if wait {
				// Subscribed before the publish, so that a dead letter cannot pass unseen.
				if letters, err = watchDeadLetters(nc, c.tenant, sess, t.ID); err != nil {
					return err
				}
				defer letters.stop()
			}
			ack, err := cl.Publish(ctx, t)
			if err != nil {
				return err
			}
			res := published{Ack: ack}
			if wait {
				res.State, res.Reason = awaitTurn(ctx, cl, letters, sess, ack.ID, waitFor)
			}
			err = c.print(res, func(w io.Writer) {
				dup := ""
				if ack.Duplicate {
					dup = " (duplicate: stored before)"
				}
				fmt.Fprintf(w, "stored turn %s of %s/%s at %s seq %d%s\n", ack.ID, c.tenant, sess, ack.Stream, ack.Sequence, dup)
				switch res.State {
				case stateApplied:
					fmt.Fprintf(w, "applied to session %s/%s\n", c.tenant, sess)
				case stateDeadLettered:
					fmt.Fprintf(w, "dead-lettered, not applied (memctl dlq list --tenant %s shows it)\n", c.tenant)
				case statePending:
					fmt.Fprintf(w, "not applied within %s\n", waitFor)
				}
			})
			if err != nil {
				return err
			}
			switch res.State {
			case stateDeadLettered:
				return fmt.Errorf("turn %s was dead-lettered: %s", ack.ID, res.Reason)
			case statePending:
				return fmt.Errorf("turn %s was not applied within %s: %s", ack.ID, waitFor, res.Reason)
			}
			return nil
		})
}

// What memctl publish --wait found.
const (
	stateApplied      = "applied"
	stateDeadLettered = "dead-lettered"
	statePending      = "pending"
)

// published is memctl publish's answer: the HTTP API's ack keys, and with --wait the turn's
// state and, when it was not applied, why.
type published struct {
	client.Ack
	State  string `json:"state,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// deadLetters receives the dead letter of one turn, from a subscription to its session's
// dead-letter subject.
type deadLetters struct {
	sub *nats.Subscription
	ch  chan events.DeadLetter
}

// watchDeadLetters subscribes to memory.dlq.<tenant>.<session> for the dead letter of turn id
// (its Nats-Msg-Id header names it); the subscription is active at the server on return.
func watchDeadLetters(nc *nats.Conn, tenant, session, id string) (*deadLetters, error) {
	if _, err := events.TurnSubject(tenant, session); err != nil {
		return nil, err
	}
	subject := events.DeadLetterSubject(tenant, session)
	msgID := events.MsgID(tenant, session, id)
	d := &deadLetters{ch: make(chan events.DeadLetter, 1)}
	var err error
	d.sub, err = nc.Subscribe(subject, func(m *nats.Msg) {
		var dl events.DeadLetter
		if json.Unmarshal(m.Data, &dl) != nil || nats.Header(dl.Headers).Get(events.HeaderMsgID) != msgID {
			return
		}
		select {
		case d.ch <- dl:
		default:
		}
	})
	if err != nil {
		return nil, fmt.Errorf("subscribing to %s: %w", subject, err)
	}
	if err := nc.Flush(); err != nil {
		_ = d.sub.Unsubscribe()
		return nil, fmt.Errorf("subscribing to %s: %w", subject, err)
	}
	return d, nil
}

func (d *deadLetters) stop() { _ = d.sub.Unsubscribe() }

// awaitTurn waits up to timeout until turn id of session is applied (a read-your-writes
// retrieve) or dead-lettered, and returns the state and, unless applied, the reason.
func awaitTurn(ctx context.Context, cl *client.Client, letters *deadLetters, session, id string, timeout time.Duration) (state, reason string) {
	ctx, cancel := context.WithTimeout(ctx, timeout+5*time.Second)
	defer cancel()
	applied := make(chan error, 1)
	go func() {
		none := 0
		_, err := cl.Retrieve(ctx, events.RetrieveRequest{
			Query: "applied?", Session: session, Sources: []string{events.SourceShort}, ContextTokens: &none,
			After: id, WaitMS: max(1, int(timeout/time.Millisecond)),
		})
		applied <- err
	}()
	select {
	case dl := <-letters.ch:
		return stateDeadLettered, dl.Reason
	case err := <-applied:
		if err == nil {
			return stateApplied, ""
		}
		// The dead letter may be on its way while the wait ran out.
		select {
		case dl := <-letters.ch:
			return stateDeadLettered, dl.Reason
		case <-time.After(200 * time.Millisecond):
		}
		var se *client.ServiceError
		if errors.As(err, &se) && se.Code == 503 {
			return statePending, "still pending (memctl session shows the session, memctl dlq list its dead letters)"
		}
		return statePending, err.Error()
	}
}

// flagSet reports whether the flag name was given (on the command line or in the environment).
func flagSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
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

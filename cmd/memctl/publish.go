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
	"github.com/peterbourgon/ff/v3/ffcli"
	"golang.org/x/term"

	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

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
	return newCommand("publish", "--session S --user U [--role user] [--wait] [--text TEXT | TEXT... | -- TEXT... | -]",
		"publish one conversation turn (and, with --wait, say whether it was applied or dead-lettered)", c, out,
		func(fs *flag.FlagSet) {
			fs.StringVar(&sess, "session", "", "session (required)")
			fs.StringVar(&user, "user", "", "user the session belongs to (required on its first turn)")
			fs.StringVar(&role, "role", "user", "role: user, assistant, system or tool")
			fs.StringVar(&text, "text", "", "turn content (or give it as arguments, or - to read it from standard input)")
			fs.StringVar(&id, "id", "", "turn id (default: a random UUID)")
			fs.StringVar(&tool, "tool", "", "tool name, for role tool")
			fs.StringVar(&at, "time", "", "when the turn happened, RFC 3339 (default: now)")
			fs.BoolVar(&wait, "wait", false, "after it is stored, wait until the turn is applied or dead-lettered and say which (default: true when standard output is a terminal); exit status 1 when it was dead-lettered, 3 when it is stored but was not applied within --wait-timeout")
			fs.DurationVar(&waitFor, "wait-timeout", 10*time.Second, "how long --wait waits (at most 1m)")
		},
		func(ctx context.Context, args []string) error {
			if text != "" && len(args) > 0 {
				return fmt.Errorf("the text is given twice, with --text and as arguments %q: give one", args)
			}
			if text == "" {
				text = strings.Join(args, " ")
			}
			if len(args) == 1 && args[0] == "-" {
				var err error
				if text, err = readText(os.Stdin); err != nil {
					return err
				}
			}
			if sess == "" {
				return errors.New("--session is required")
			}
			if !flagSet(c.fs, "wait") {
				wait = isTerminal(out)
			}
			if waitFor <= 0 || waitFor > events.MaxWaitMS*time.Millisecond {
				return fmt.Errorf("--wait-timeout %s: want more than 0 and at most %s (the retriever's longest wait)", waitFor, events.MaxWaitMS*time.Millisecond)
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
			nc, err := c.connect()
			if err != nil {
				return err
			}
			defer nc.Close()
			cl, err := client.New(nc, client.Options{Tenant: c.tenant, Source: "agentmem/memctl", Timeout: 10 * time.Second})
			if err != nil {
				return err
			}
			ack, err := cl.Publish(ctx, t)
			if err != nil {
				return err
			}
			res := published{Ack: ack}
			if wait {
				res.State, res.Reason = awaitTurn(ctx, cl, sess, ack.ID, waitFor)
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
					fmt.Fprintf(w, "dead-lettered, not applied: %s (memctl dlq list --tenant %s shows it)\n", res.Reason, c.tenant)
				case statePending:
					fmt.Fprintf(w, "stored, not yet applied (%s); it is not lost: ingest applies it when it gets to it, "+
						"after the turns before it and, when a NATS node was lost, once the stream has a leader again "+
						"(memctl session --session %s shows it then)\n", res.Reason, sess)
				}
			})
			if err != nil {
				return err
			}
			switch res.State {
			case stateDeadLettered:
				return fmt.Errorf("turn %s was dead-lettered: %s", ack.ID, res.Reason)
			case statePending:
				return exitStatus{code: exitStoredNotApplied}
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

// awaitTurn waits up to timeout until turn id of session is applied or dead-lettered (a
// read-your-writes retrieve: the retriever answers 400 with the dead letter's reason for a turn
// ingest rejected) and returns the state and, unless applied, the reason. Every other outcome
// (the wait ran out, the retriever could not follow the session or did not answer) leaves the
// turn pending: it is stored, and ingest applies it when it gets to it.
func awaitTurn(ctx context.Context, cl *client.Client, session, id string, timeout time.Duration) (state, reason string) {
	ctx, cancel := context.WithTimeout(ctx, timeout+5*time.Second)
	defer cancel()
	none := 0
	_, err := cl.Retrieve(ctx, events.RetrieveRequest{
		Query: "applied?", Session: session, Sources: []string{events.SourceShort}, ContextTokens: &none,
		After: id, WaitMS: max(1, int(timeout/time.Millisecond)),
	})
	var se *client.ServiceError
	switch {
	case err == nil:
		return stateApplied, ""
	case errors.As(err, &se) && se.Code == 400 && se.Field == "after" && strings.Contains(se.Message, rejectedMark):
		_, why, _ := strings.Cut(se.Message, rejectedMark)
		return stateDeadLettered, why
	case errors.As(err, &se) && se.Code == 503 && se.Field == "after":
		return statePending, fmt.Sprintf("still waiting after %s", timeout)
	}
	return statePending, err.Error()
}

// rejectedMark precedes the reason in the retriever's answer for a dead-lettered turn
// ("turn \"…\" of session \"…\" was rejected: REASON").
const rejectedMark = " was rejected: "

// readText reads a turn's text from in (memctl publish -), without the newline that ends it.
func readText(in *os.File) (string, error) {
	if term.IsTerminal(int(in.Fd())) {
		fmt.Fprintln(os.Stderr, "memctl: reading the text from standard input; end it with Ctrl-D")
	}
	data, err := io.ReadAll(in)
	if err != nil {
		return "", fmt.Errorf("reading the text from standard input: %w", err)
	}
	text := strings.TrimSuffix(strings.TrimSuffix(string(data), "\n"), "\r")
	if text == "" {
		return "", errors.New("standard input held no text (memctl publish - reads the turn's text from it)")
	}
	return text, nil
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

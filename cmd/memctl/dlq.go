package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/pkg/events"
)

func dlqCommand(out io.Writer) *ffcli.Command {
	subs := []*ffcli.Command{dlqListCommand(out), dlqRetryCommand(out)}
	for _, sub := range subs {
		// newCommand names a top-level command; these are "memctl dlq list", "memctl dlq retry".
		sub.ShortUsage = strings.Replace(sub.ShortUsage, "memctl ", "memctl dlq ", 1)
		sub.FlagSet.Init("memctl dlq "+sub.Name, flag.ContinueOnError)
	}
	return &ffcli.Command{
		Name:        "dlq",
		ShortUsage:  "memctl dlq <list|retry> [flags]",
		ShortHelp:   "inspect dead letters",
		Subcommands: subs,
		Exec:        groupExec("dlq", subs),
	}
}

type letter struct {
	Seq uint64 `json:"seq"`
	events.DeadLetter
	// Preview is what the dead letter carried, shortened: a turn's content, else its body.
	Preview string `json:"preview"`
}

func dlqListCommand(out io.Writer) *ffcli.Command {
	c := &common{}
	var all bool
	var limit int
	return newCommand("list", "[--tenant T | --all] [--limit N]", "list dead letters with their reasons", c, out,
		func(fs *flag.FlagSet) {
			fs.BoolVar(&all, "all", false, "every tenant, and letters whose subject could not be parsed")
			fs.IntVar(&limit, "limit", 100, "at most this many (the newest)")
		},
		func(ctx context.Context, _ []string) error {
			js, nc, err := c.jetstream()
			if err != nil {
				return err
			}
			defer nc.Close()
			subject := "memory.dlq." + c.tenant + ".>"
			if all {
				subject = events.DeadLetterSubjects
			}
			var letters []letter
			reader := archive.NewReader(js, c.topo.Events().DeadLetterStream())
			err = reader.Scan(ctx, subject, 1, 0, func(m *jetstream.RawStreamMsg) error {
				var dl events.DeadLetter
				if err := json.Unmarshal(m.Data, &dl); err != nil {
					dl.Reason = "undecodable dead letter: " + err.Error()
				}
				letters = append(letters, letter{Seq: m.Sequence, DeadLetter: dl, Preview: preview(dl)})
				if len(letters) > limit {
					letters = letters[1:]
				}
				return nil
			})
			if err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
				return err
			}
			if letters == nil {
				letters = []letter{}
			}
			return c.print(letters, func(w io.Writer) {
				switch {
				case all:
					fmt.Fprintln(w, "every tenant")
				case c.tenantHint() != "":
					fmt.Fprintln(w, "tenant default (--tenant or AGENTMEM_TENANT names another, --all lists every tenant)")
				default:
					fmt.Fprintf(w, "tenant %s\n", c.tenant)
				}
				if len(letters) == 0 {
					fmt.Fprintln(w, "no dead letters")
				}
				for _, l := range letters {
					fmt.Fprintf(w, "#%d %s  %s  delivered %d  consumer %s\n    reason: %s\n    %s\n", l.Seq,
						l.Time.UTC().Format("2006-01-02 15:04:05"), l.Subject, l.Delivered, l.Consumer, l.Reason, l.Preview)
				}
			})
		})
}

// previewRunes bounds a dead letter's preview.
const previewRunes = 100

// preview is what a dead letter carried, for a person to recognise it: the content of a turn
// (binary or structured mode) when its body has one, else the body itself, shortened, with
// bytes that are not printable UTF-8 escaped.
func preview(dl events.DeadLetter) string {
	cut := ""
	if dl.Truncated {
		cut = fmt.Sprintf(" (%d of %d bytes kept)", len(dl.Body), dl.BodySize)
	}
	if len(dl.Body) == 0 {
		return "body: empty"
	}
	var data struct {
		Content *string `json:"content"`
		Data    *struct {
			Content *string `json:"content"`
		} `json:"data"`
	}
	if utf8.Valid(dl.Body) && json.Unmarshal(dl.Body, &data) == nil {
		if data.Content == nil && data.Data != nil {
			data.Content = data.Data.Content
		}
		if data.Content != nil {
			return "content: " + quoteShort(*data.Content) + cut
		}
	}
	return "body: " + quoteShort(string(dl.Body)) + cut
}

// quoteShort quotes s cut to previewRunes runes (escaping what is not printable UTF-8).
func quoteShort(s string) string {
	more := ""
	if utf8.RuneCountInString(s) > previewRunes {
		i := 0
		for n := range s {
			if i == previewRunes {
				s, more = s[:n], "…"
				break
			}
			i++
		}
	}
	return strconv.Quote(s) + more
}

func dlqRetryCommand(out io.Writer) *ffcli.Command {
	c := &common{}
	var seq uint64
	var bodyFile string
	var keep bool
	return newCommand("retry", "--seq N [--body FILE] [--keep]",
		"republish a dead letter to its original subject (after fixing its cause, or its body with --body) and remove it", c, out,
		func(fs *flag.FlagSet) {
			fs.Uint64Var(&seq, "seq", 0, "the dead letter's sequence, as dlq list prints it (required)")
			fs.StringVar(&bodyFile, "body", "", "publish this file as the body instead of the original")
			fs.BoolVar(&keep, "keep", false, "keep the dead letter after republishing it")
		},
		func(ctx context.Context, _ []string) error {
			if seq == 0 {
				return errors.New("--seq is required")
			}
			js, nc, err := c.jetstream()
			if err != nil {
				return err
			}
			defer nc.Close()
			stream, err := js.Stream(ctx, c.topo.Events().DeadLetterStream())
			if err != nil {
				return err
			}
			raw, err := stream.GetMsg(ctx, seq)
			if err != nil {
				return fmt.Errorf("reading dead letter %d: %w", seq, err)
			}
			var dl events.DeadLetter
			if err := json.Unmarshal(raw.Data, &dl); err != nil {
				return fmt.Errorf("decoding dead letter %d: %w", seq, err)
			}
			body := dl.Body
			if bodyFile != "" {
				if body, err = os.ReadFile(bodyFile); err != nil {
					return err
				}
			} else if dl.Truncated {
				return fmt.Errorf("dead letter %d kept only %d of %d bytes of its body: give the fixed body with --body", seq, len(dl.Body), dl.BodySize)
			}
			msg := nats.NewMsg(dl.Subject)
			for k, vs := range dl.Headers {
				for _, v := range vs {
					msg.Header.Add(k, v)
				}
			}
			// The original Nats-Msg-Id was stored before (and may still be in the duplicate window);
			// the workers recognise the event by its id, so the retry goes without it.
			msg.Header.Del(events.HeaderMsgID)
			msg.Data = body
			ack, err := js.PublishMsg(ctx, msg)
			if err != nil {
				return fmt.Errorf("republishing to %s: %w", dl.Subject, err)
			}
			if !keep {
				if err := stream.DeleteMsg(ctx, seq); err != nil {
					return fmt.Errorf("removing dead letter %d: %w", seq, err)
				}
			}
			res := map[string]any{"seq": seq, "subject": dl.Subject, "stream": ack.Stream, "stream_seq": ack.Sequence, "removed": !keep}
			return c.print(res, func(w io.Writer) {
				fmt.Fprintf(w, "dead letter %d republished to %s (%s seq %d)\n", seq, dl.Subject, ack.Stream, ack.Sequence)
			})
		})
}

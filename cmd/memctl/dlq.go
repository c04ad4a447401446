package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/pkg/events"
)

func dlqCommand(out io.Writer) *ffcli.Command {
	return &ffcli.Command{
		Name:        "dlq",
		ShortUsage:  "memctl dlq <list> [flags]",
		ShortHelp:   "inspect dead letters",
		Subcommands: []*ffcli.Command{dlqListCommand(out)},
		Exec:        func(context.Context, []string) error { return flag.ErrHelp },
	}
}

type letter struct {
	Seq uint64 `json:"seq"`
	events.DeadLetter
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
				letters = append(letters, letter{Seq: m.Sequence, DeadLetter: dl})
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
				if len(letters) == 0 {
					fmt.Fprintln(w, "no dead letters")
				}
				for _, l := range letters {
					fmt.Fprintf(w, "#%d %s  %s  delivered %d  consumer %s\n    reason: %s\n", l.Seq,
						l.Time.UTC().Format("2006-01-02 15:04:05"), l.Subject, l.Delivered, l.Consumer, l.Reason)
				}
			})
		})
}

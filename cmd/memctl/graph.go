package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agentmem/agentmem/internal/graph"
	"github.com/agentmem/agentmem/internal/longterm"
)

// graphCommand lists a user's entities and relations at a time (package graph).
func graphCommand(out io.Writer) *ffcli.Command {
	c := &common{}
	var user, at string
	var history bool
	return newCommand("graph", "--tenant T --user U [--at TIME] [--history]",
		"list a user's entities and the relations that held at a time; --history: every relation, ended ones too", c, out,
		func(fs *flag.FlagSet) {
			fs.StringVar(&user, "user", "", "user (required)")
			fs.StringVar(&at, "at", "", "the time to show the graph at, RFC 3339 (default now)")
			fs.BoolVar(&history, "history", false, "every relation stated by then, ended ones too, oldest first")
		},
		func(ctx context.Context, _ []string) error {
			if user == "" {
				return errors.New("--user is required")
			}
			when := time.Now().UTC()
			if at != "" {
				t, err := time.Parse(time.RFC3339Nano, at)
				if err != nil {
					return fmt.Errorf("--at %q: want an RFC 3339 time such as 2026-11-30T10:00:00Z", at)
				}
				when = t
			}
			js, nc, err := c.jetstream()
			if err != nil {
				return err
			}
			defer nc.Close()
			store, err := longterm.Open(ctx, js, c.topo.Events())
			if err != nil {
				return err
			}
			recs, err := store.User(ctx, c.tenant, user)
			if err != nil {
				return err
			}
			s := graph.Build(recs).At(when)
			return c.print(s, func(w io.Writer) { printGraph(w, s, history) })
		})
}

// printGraph prints a snapshot for a person: the entities, then the relations (or the history).
func printGraph(w io.Writer, s graph.Snapshot, history bool) {
	if len(s.Entities) == 0 {
		fmt.Fprintln(w, "no entities")
		return
	}
	fmt.Fprintf(w, "entities at %s\n", s.At.UTC().Format(time.RFC3339))
	for _, n := range s.Entities {
		typ := n.Type
		if typ == "" {
			typ = "-"
		}
		aliases := ""
		if len(n.Aliases) > 0 {
			aliases = " (also " + strings.Join(n.Aliases, ", ") + ")"
		}
		fmt.Fprintf(w, "  %-28s %-12s %d turns, %s to %s%s\n", n.Name, typ, len(n.Provenance),
			n.FirstSeen.UTC().Format("2006-01-02"), n.LastSeen.UTC().Format("2006-01-02"), aliases)
	}
	edges, title := s.Relations, "relations"
	if history {
		edges, title = s.History, "history"
	}
	fmt.Fprintln(w, title)
	if len(edges) == 0 {
		fmt.Fprintln(w, "  none")
	}
	for _, e := range edges {
		obj := e.ObjectName
		if e.Object == "" {
			obj = "(ended)"
		}
		state := "since " + e.ValidFrom.UTC().Format("2006-01-02")
		if e.ValidTo != nil {
			state += ", until " + e.ValidTo.UTC().Format("2006-01-02")
		}
		fmt.Fprintf(w, "  %s %s %s  (%s; %s, turns %s)\n", e.SubjectName, e.Relation, obj, state, e.Extractor, strings.Join(e.Provenance, ","))
	}
}

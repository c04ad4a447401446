package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agentmem/agentmem/pkg/events"
)

func searchCommand(out io.Writer) *ffcli.Command {
	return retrieveCommand(out, "search", "search memory; prints ranked entries with their score parts", false)
}

func contextCommand(out io.Writer) *ffcli.Command {
	return retrieveCommand(out, "context", "print the context an agent would put into its prompt, after the ranked entries it was built from", true)
}

func retrieveCommand(out io.Writer, name, help string, contextFirst bool) *ffcli.Command {
	c := &common{}
	var sess, user, sources, types, at string
	var limit, ctxTokens int
	var showContext bool
	return newCommand(name, "[--session S] [--user U] QUERY...", help, c, out,
		func(fs *flag.FlagSet) {
			fs.StringVar(&sess, "session", "", "session whose short-term memory to search")
			fs.StringVar(&user, "user", "", "user whose long-term memory and archive to search")
			fs.StringVar(&sources, "sources", "", "comma-separated: short, long, archive (default: short with --session, long and archive when the user is known)")
			fs.StringVar(&types, "types", "", "comma-separated: FACT, SUMMARY, CONVERSATION, TOOL_RESULT")
			fs.StringVar(&at, "at", "", "the query's now, RFC 3339 (default: now)")
			fs.IntVar(&limit, "limit", 10, "entries to return (1-200)")
			fs.IntVar(&ctxTokens, "context-tokens", 2000, "token budget of the built context (0: none)")
			fs.BoolVar(&showContext, "context", contextFirst, "print the built context too")
		},
		func(ctx context.Context, args []string) error {
			query := strings.Join(args, " ")
			if strings.TrimSpace(query) == "" {
				return fmt.Errorf("a query is required: memctl %s [flags] QUERY", name)
			}
			req := events.RetrieveRequest{Query: query, Session: sess, User: user, Limit: &limit, ContextTokens: &ctxTokens}
			if sources != "" {
				req.Sources = strings.Split(sources, ",")
			}
			if types != "" {
				req.Types = strings.Split(types, ",")
			}
			if at != "" {
				ts, err := time.Parse(time.RFC3339, at)
				if err != nil {
					return fmt.Errorf("--at: %w", err)
				}
				req.At = &ts
			}
			cl, closeFn, err := c.client()
			if err != nil {
				return err
			}
			defer closeFn()
			reply, err := cl.Retrieve(ctx, req)
			if err != nil {
				return err
			}
			return c.print(reply, func(w io.Writer) {
				switch {
				case len(reply.Entries) > 0:
				case reply.Context == "":
					fmt.Fprintln(w, "no matching memory"+c.tenantHint())
				case !showContext:
					// The context holds what the retriever puts there without a match: the
					// user's profile.
					fmt.Fprintf(w, "no matching entries; the context holds %d tokens (--context prints it)\n", reply.ContextTokens)
				}
				for i, e := range reply.Entries {
					fmt.Fprintf(w, "%2d. %.4f  %-12s %-7s %s  %s\n", i+1, e.Score, e.Type, e.Source,
						e.Timestamp.UTC().Format("2006-01-02 15:04"), e.ID)
					vec := ""
					if e.Scores.Vector != nil {
						vec = fmt.Sprintf(" vector=%.3f", *e.Scores.Vector)
					}
					rel := ""
					if e.Scores.Relevance != 0 {
						rel = fmt.Sprintf(" relevance=%.3f", e.Scores.Relevance)
					}
					if e.Scores.Period != 0 {
						rel += fmt.Sprintf(" period=%.2f", e.Scores.Period)
					}
					fmt.Fprintf(w, "    keyword=%.3f%s%s decay=%.3f weight=%.1f\n", e.Scores.Keyword, vec, rel, e.Scores.Decay, e.Scores.Weight)
					fmt.Fprintf(w, "    %s\n", shorten(e.Content, 200))
					if by, ok := e.Metadata["superseded_by"].(string); ok && e.Type != "FACT" {
						// A turn that stated what has since changed (docs/facts.md).
						fmt.Fprintf(w, "    since changed: %s holds now\n", by)
					}
				}
				if showContext && reply.Context != "" {
					if len(reply.Entries) > 0 {
						fmt.Fprintln(w)
					}
					fmt.Fprintf(w, "context (%d tokens):\n%s", reply.ContextTokens, reply.Context)
				}
			})
		})
}

func shorten(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/usage"
	"github.com/agentmem/agentmem/internal/view"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

func forgetCommand(out io.Writer) *ffcli.Command {
	c := &common{}
	var user string
	return newCommand("forget", "--tenant T --user U", "remove everything agentmem holds of a user (through memory.forget.<tenant>)", c, out,
		func(fs *flag.FlagSet) { fs.StringVar(&user, "user", "", "user to forget (required)") },
		func(ctx context.Context, _ []string) error {
			if user == "" {
				return errors.New("--user is required")
			}
			cl, closeConn, err := c.client()
			if err != nil {
				return err
			}
			defer closeConn()
			ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
			defer cancel()
			reply, err := cl.Forget(ctx, user)
			if err != nil {
				return fmt.Errorf("forget failed: %w", err)
			}
			return c.print(reply, func(w io.Writer) {
				keys := make([]string, 0, len(reply.Forgotten))
				for k := range reply.Forgotten {
					keys = append(keys, k)
				}
				slices.Sort(keys)
				fmt.Fprintf(w, "forgot %s/%s:", c.tenant, user)
				for _, k := range keys {
					fmt.Fprintf(w, " %s=%d", k, reply.Forgotten[k])
				}
				fmt.Fprintln(w)
			})
		})
}

func factsCommand(out io.Writer) *ffcli.Command {
	c := &common{}
	var user, del, correct, content string
	var history bool
	var page, size int
	return newCommand("facts", "--tenant T --user U [--history] [--page N] | --delete ID | --correct ID --content TEXT",
		"list a user's live facts, or every version; delete or correct one fact", c, out,
		func(fs *flag.FlagSet) {
			fs.StringVar(&user, "user", "", "user (required)")
			fs.StringVar(&del, "delete", "", "delete this fact (it stays in the history)")
			fs.StringVar(&correct, "correct", "", "correct this fact: --content supersedes it")
			fs.StringVar(&content, "content", "", "the corrected fact, with --correct")
			fs.BoolVar(&history, "history", false, "every version: superseded and deleted facts too")
			fs.IntVar(&page, "page", 1, "page number, from 1")
			fs.IntVar(&size, "page-size", 50, "facts per page")
		},
		func(ctx context.Context, _ []string) error {
			if user == "" {
				return errors.New("--user is required")
			}
			switch {
			case del != "" && (correct != "" || content != ""):
				return errors.New("--delete takes no --correct or --content")
			case correct != "" && content == "":
				return errors.New("--correct needs --content")
			case del != "":
				return c.changeFact(ctx, events.ForgetRequest{User: user, FactID: del})
			case correct != "":
				return c.changeFact(ctx, events.ForgetRequest{User: user, FactID: correct, Content: content})
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
			views := view.Facts(recs.Facts, history)
			total := len(views)
			from := min(max(page-1, 0)*size, total)
			views = views[from:min(from+size, total)]
			facts := make([]longterm.Fact, 0, len(views))
			for _, v := range views {
				facts = append(facts, v.Stored)
			}
			return c.print(map[string]any{"facts": facts, "total": total, "page": page}, func(w io.Writer) {
				if total == 0 {
					fmt.Fprintln(w, "no facts")
				}
				for _, f := range views {
					state := f.State
					if f.State == view.FactSuperseded && f.SupersededBy != "" {
						state += " by " + f.SupersededBy
						if f.ValidTo != nil {
							state += " on " + f.ValidTo.UTC().Format("2006-01-02")
						}
					}
					key := ""
					if f.Key != "" {
						key = " [" + f.Key + "]"
					}
					fmt.Fprintf(w, "%s  %-10s %s%s\n    %s  (%s, from %s, turns %s)\n", f.ID, f.Category, f.Content, key,
						state, f.Extractor, f.ValidFrom.UTC().Format("2006-01-02 15:04"), strings.Join(f.Provenance, ","))
				}
				if total > len(facts) {
					fmt.Fprintf(w, "page %d of %d (%d facts)\n", page, (total+size-1)/size, total)
				}
			})
		})
}

// changeFact deletes or corrects one fact through memory.forget.<tenant>.
func (c *common) changeFact(ctx context.Context, req events.ForgetRequest) error {
	cl, closeConn, err := c.client()
	if err != nil {
		return err
	}
	defer closeConn()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var reply events.ForgetReply
	if req.Content != "" {
		reply, err = cl.Correct(ctx, req.User, req.FactID, req.Content)
	} else {
		reply, err = cl.ForgetFact(ctx, req.User, req.FactID)
	}
	if err != nil {
		return err
	}
	return c.print(reply, func(w io.Writer) {
		if reply.Fact != nil {
			fmt.Fprintf(w, "%s superseded by %s: %s\n", req.FactID, reply.Fact.ID, reply.Fact.Content)
			return
		}
		fmt.Fprintf(w, "deleted %s\n", req.FactID)
	})
}

func usageCommand(out io.Writer) *ffcli.Command {
	c := &common{}
	var all bool
	return newCommand("usage", "[--tenant T | --all]", "LLM calls and tokens per session and tenant", c, out,
		func(fs *flag.FlagSet) { fs.BoolVar(&all, "all", false, "every tenant") },
		func(ctx context.Context, _ []string) error {
			js, nc, err := c.jetstream()
			if err != nil {
				return err
			}
			defer nc.Close()
			store, err := usage.Open(ctx, js, c.topo.Events())
			if err != nil {
				return err
			}
			tenant := c.tenant
			if all {
				tenant = ""
			}
			report, err := store.Report(ctx, tenant)
			if err != nil {
				return err
			}
			return c.print(report, func(w io.Writer) { printUsage(w, report) })
		})
}

func printUsage(w io.Writer, r memory.UsageReport) {
	line := func(label string, u memory.Usage) {
		fmt.Fprintf(w, "%s Token 统计: 调用 %d 次 | 总输入: %d | 总输出: %d\n", label, u.Calls, u.InputTokens, u.OutputTokens)
	}
	for _, t := range r.Tenants {
		for _, s := range t.Sessions {
			line(fmt.Sprintf("  session %s/%s", t.Tenant, s.Session), s.Usage)
		}
		line("tenant "+t.Tenant, t.Usage)
	}
	line("total", r.Total)
}

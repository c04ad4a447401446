package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strings"

	"github.com/peterbourgon/ff/v3/ffcli"
)

// endOfFlags stands in for the first "--" of the command line (run puts it there): the flag
// package would drop a "--" it stops at, and then a command could not tell the text after it
// ("memctl publish --session s -- --not-a-flag") from flags given after the text.
const endOfFlags = "\x00--"

// markEndOfFlags returns args with its first "--" replaced by endOfFlags.
func markEndOfFlags(args []string) []string {
	for i, a := range args {
		if a == "--" {
			marked := append([]string(nil), args...)
			marked[i] = endOfFlags
			return marked
		}
	}
	return args
}

// interspersed runs cmd's exec with the positional arguments of the command line, after parsing
// on its flag set the flags given among or after them: "memctl publish --session s hello --user
// bob" sets --user rather than publishing "hello --user bob". Everything after "--" is
// positional, so a text that starts with "-" goes there.
func interspersed(cmd *ffcli.Command, exec func(context.Context, []string) error) func(context.Context, []string) error {
	return func(ctx context.Context, args []string) error {
		fs := cmd.FlagSet
		var pos []string
		for len(args) > 0 {
			a := args[0]
			switch {
			case a == endOfFlags:
				pos = append(pos, args[1:]...)
				args = nil
			case len(a) < 2 || a[0] != '-':
				pos = append(pos, a)
				args = args[1:]
			default:
				if err := fs.Parse(args); err != nil {
					return flagError(cmd, err)
				}
				args = fs.Args()
			}
		}
		// A flag whose value was the "--" itself ("--text --") gets it back.
		fs.Visit(func(f *flag.Flag) {
			if f.Value.String() == endOfFlags {
				_ = f.Value.Set("--")
			}
		})
		return exec(ctx, pos)
	}
}

// flagError is the usage error for a command line cmd's flags could not parse: the error first,
// then, for an unknown flag, the closest of cmd's flags ("did you mean --wait?") or, for a
// command that takes a text, how to give one that starts with "-", and cmd's one-line usage.
// flag.ErrHelp passes through.
func flagError(cmd *ffcli.Command, err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	msg := strings.TrimPrefix(err.Error(), "error parsing commandline arguments: ") // ff's wrapping
	lines := []string{msg}
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		var names []string
		cmd.FlagSet.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		if cmd.Name == "memctl" {
			sharedFlags().VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
		}
		if cmd.Name == "memctl" && sharedFlags().Lookup(name) != nil {
			lines = append(lines, fmt.Sprintf("--%s is a flag of the commands: give a command after it (memctl --%s … <command> …)", name, name))
		} else if m := closest(name, names); m != "" {
			lines = append(lines, fmt.Sprintf("did you mean --%s?", m))
		} else {
			for _, word := range []string{"TEXT", "QUERY"} {
				if strings.Contains(cmd.ShortUsage, word) {
					lines = append(lines, fmt.Sprintf("a %s with words that start with - goes after --: %s [flags] -- %s",
						strings.ToLower(word), cmd.FlagSet.Name(), word))
					break
				}
			}
		}
	}
	lines = append(lines, fmt.Sprintf("usage: %s (%s --help says more)", cmd.ShortUsage, cmd.FlagSet.Name()))
	return usageError{strings.Join(lines, "\n")}
}

// closest returns the name among names nearest to the mistyped name (case aside: a swapped,
// missing, extra or wrong letter, or a prefix of it), or "" when none is near enough to be meant.
func closest(name string, names []string) string {
	name = strings.ToLower(name)
	limit := 0 // how many edits a name of this length may be off
	switch n := len([]rune(name)); {
	case n > 8:
		limit = 3
	case n > 4:
		limit = 2
	case n > 2:
		limit = 1
	}
	best, bestDist := "", limit+1
	for _, cand := range names {
		d := editDistance(name, strings.ToLower(cand))
		if len(name) >= 3 && strings.HasPrefix(cand, name) {
			d = min(d, 1) // --sess for --session
		}
		if d < bestDist || (d == bestDist && best != "" && cand < best) {
			best, bestDist = cand, d
		}
	}
	if bestDist > limit {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance of a and b: insertions, deletions,
// substitutions and swaps of adjacent letters.
func editDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	d := make([][]int, len(x)+1)
	for i := range d {
		d[i] = make([]int, len(y)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(x); i++ {
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(x)][len(y)]
}

// hoistShared moves the shared flags given before the command ("memctl --nats URL search q",
// as memctl --help lists them) to just after the command's name, where the command parses
// them. Flags after the command still win, as they come later.
func hoistShared(root *ffcli.Command, args []string) []string {
	shared := sharedFlags()
	var hoisted []string
	i := 0
	for i < len(args) {
		a := args[i]
		if len(a) < 2 || a[0] != '-' || a == endOfFlags {
			break
		}
		name, _, hasValue := strings.Cut(strings.TrimPrefix(a[1:], "-"), "=")
		f := shared.Lookup(name)
		if f == nil {
			break // --help, --version, or not a flag of every command: the root parses it
		}
		hoisted = append(hoisted, a)
		i++
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !hasValue && !(ok && b.IsBoolFlag()) && i < len(args) {
			hoisted = append(hoisted, args[i])
			i++
		}
	}
	rest := args[i:]
	n, cmd := 0, root
	for n < len(rest) {
		sub := subcommand(cmd, rest[n])
		if sub == nil {
			break
		}
		cmd, n = sub, n+1
	}
	if len(hoisted) == 0 || n == 0 {
		return args
	}
	out := append(append(append([]string(nil), rest[:n]...), hoisted...), rest[n:]...)
	return out
}

// subcommand returns c's subcommand called name, as ffcli matches it, or nil.
func subcommand(c *ffcli.Command, name string) *ffcli.Command {
	for _, sub := range c.Subcommands {
		if strings.EqualFold(sub.Name, name) {
			return sub
		}
	}
	return nil
}

// selected returns the command args name (the deepest subcommand named at their start).
func selected(root *ffcli.Command, args []string) *ffcli.Command {
	cmd := root
	for _, a := range args {
		sub := subcommand(cmd, a)
		if sub == nil {
			break
		}
		cmd = sub
	}
	return cmd
}

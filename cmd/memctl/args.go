package main

import (
	"context"
	"errors"
	"flag"
	"strings"
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

// interspersed runs exec with the positional arguments of the command line, after parsing on fs
// the flags given among or after them: "memctl publish --session s hello --user bob" sets --user
// rather than publishing "hello --user bob". Everything after "--" is positional, so a text that
// starts with "-" goes there.
func interspersed(fs *flag.FlagSet, exec func(context.Context, []string) error) func(context.Context, []string) error {
	return func(ctx context.Context, args []string) error {
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
					if errors.Is(err, flag.ErrHelp) {
						return err
					}
					msg := err.Error()
					if strings.HasPrefix(msg, "flag provided but not defined") {
						msg += " (a text with words that start with - goes after --: memctl " +
							strings.TrimPrefix(fs.Name(), "memctl ") + " [flags] -- TEXT)"
					}
					return usageError{msg}
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

// Command memctl is agentmem's command-line tool: publish turns, end sessions, search memory,
// inspect sessions and dead letters. Every command takes --nats and --json.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/peterbourgon/ff/v3"
	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agentmem/agentmem/cmd/internal/settings"
)

func main() {
	ctx, stop := settings.SignalContext()
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "memctl:", err)
		var usage usageError
		if errors.As(err, &usage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError is a command line memctl cannot run (an unknown command, a bad flag): exit status 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// common holds the flags every subcommand has.
type common struct {
	conn   *settings.Conn
	topo   *settings.Topology
	tenant string
	json   bool
	out    io.Writer
	fs     *flag.FlagSet
}

// tenantHint completes an empty answer when --tenant was left at its default, the commonest
// reason for finding nothing.
func (c *common) tenantHint() string {
	if c.tenant != "default" || c.fs == nil {
		return ""
	}
	set := false
	c.fs.Visit(func(f *flag.Flag) { set = set || f.Name == "tenant" })
	if set {
		return ""
	}
	return ` in tenant "default" (--tenant or AGENTMEM_TENANT names yours)`
}

func (c *common) bind(fs *flag.FlagSet) {
	c.conn = settings.BindConn(fs)
	c.topo = settings.BindTopology(fs)
	fs.StringVar(&c.tenant, "tenant", "default", "tenant")
	fs.BoolVar(&c.json, "json", false, "print JSON instead of text")
}

func run(ctx context.Context, args []string, out io.Writer) error {
	root := &ffcli.Command{
		Name:       "memctl",
		ShortUsage: "memctl <command> [flags]",
		ShortHelp:  "agentmem's command-line tool",
		Subcommands: []*ffcli.Command{
			publishCommand(out),
			endCommand(out),
			searchCommand(out),
			contextCommand(out),
			sessionCommand(out),
			dlqCommand(out),
			forgetCommand(out),
			factsCommand(out),
			usageCommand(out),
			replayCommand(out),
			authCommand(out),
			mcpCommand(out),
			importCommand(out),
			statsCommand(out),
			reembedCommand(out),
		},
		FlagSet: flag.NewFlagSet("memctl", flag.ContinueOnError),
		Exec: func(_ context.Context, args []string) error {
			if len(args) > 0 {
				return usageError{fmt.Sprintf("unknown command %q (memctl --help lists the commands)", args[0])}
			}
			return flag.ErrHelp
		},
	}
	// Help goes to standard output (memctl --help | less); errors to standard error.
	root.FlagSet.SetOutput(out)
	for _, sub := range root.Subcommands {
		setOutput(sub, out)
	}
	if err := root.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	return root.Run(ctx)
}

// setOutput sends the help of c and its subcommands to out.
func setOutput(c *ffcli.Command, out io.Writer) {
	if c.FlagSet != nil {
		c.FlagSet.SetOutput(out)
	}
	for _, sub := range c.Subcommands {
		setOutput(sub, out)
	}
}

// newCommand builds a subcommand whose flags have AGENTMEM_* environment twins.
func newCommand(name, usage, help string, c *common, out io.Writer, bind func(*flag.FlagSet), exec func(context.Context, []string) error) *ffcli.Command {
	fs := flag.NewFlagSet("memctl "+name, flag.ContinueOnError)
	c.out, c.fs = out, fs
	c.bind(fs)
	if bind != nil {
		bind(fs)
	}
	return &ffcli.Command{
		Name:       name,
		ShortUsage: "memctl " + name + " " + usage,
		ShortHelp:  help,
		FlagSet:    fs,
		Options:    []ff.Option{ff.WithEnvVarPrefix(settings.EnvPrefix)},
		Exec:       exec,
	}
}

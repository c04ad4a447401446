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
		os.Exit(1)
	}
}

// common holds the flags every subcommand has.
type common struct {
	conn   *settings.Conn
	topo   *settings.Topology
	tenant string
	json   bool
	out    io.Writer
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
		Exec: func(context.Context, []string) error { return flag.ErrHelp },
	}
	if err := root.Parse(args); err != nil {
		return err
	}
	return root.Run(ctx)
}

// newCommand builds a subcommand whose flags have AGENTMEM_* environment twins.
func newCommand(name, usage, help string, c *common, out io.Writer, bind func(*flag.FlagSet), exec func(context.Context, []string) error) *ffcli.Command {
	fs := flag.NewFlagSet("memctl "+name, flag.ContinueOnError)
	c.out = out
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

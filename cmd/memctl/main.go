// Command memctl is agentmem's command-line tool: publish turns, end sessions, search memory,
// inspect sessions and dead letters. Every command takes the connection flags (--nats, --creds,
// …), --tenant and --json, each also as an AGENTMEM_* environment variable.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/peterbourgon/ff/v3"
	"github.com/peterbourgon/ff/v3/ffcli"

	"github.com/agentmem/agentmem/cmd/internal/settings"
	"github.com/agentmem/agentmem/internal/version"
)

func main() {
	ctx, stop := settings.SignalContext()
	defer stop()
	err := run(ctx, os.Args[1:], os.Stdout)
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	var status exitStatus
	if errors.As(err, &status) {
		os.Exit(status.code) // the command said why on standard output
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

// Exit statuses besides 0 (done), 1 (failed) and 2 (usage error).
const (
	// exitStoredNotApplied: memctl publish --wait stored the turn, and it was not applied within
	// --wait-timeout (or the wait failed): the turn is not lost, ingest applies it later.
	exitStoredNotApplied = 3
)

// exitStatus ends memctl with code after the command printed its outcome: not a failure to report.
type exitStatus struct{ code int }

func (e exitStatus) Error() string { return fmt.Sprintf("exit status %d", e.code) }

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
	perms  *permissions // set while the command runs (guarded)
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

// The topology flags a command takes: the commands that speak only the agent's subjects take
// none, replay (which creates streams and buckets) takes them all, and the others, which read
// streams and buckets, take --prefix, which names them.
const (
	topologyNone = iota
	topologyPrefix
	topologyAll
)

func topologyOf(command string) int {
	switch command {
	case "publish", "end", "search", "context", "forget", "session":
		return topologyNone
	case "replay":
		return topologyAll
	}
	return topologyPrefix
}

// bind registers the shared flags of command on fs: the connection flags, the topology flags
// it takes, --tenant and --json.
func (c *common) bind(fs *flag.FlagSet, command string) {
	c.conn = settings.BindConn(fs)
	switch topologyOf(command) {
	case topologyAll:
		c.topo = settings.BindTopology(fs)
	case topologyPrefix:
		defaults := flag.NewFlagSet("defaults", flag.ContinueOnError)
		c.topo = settings.BindTopology(defaults)
		fs.StringVar(&c.topo.Prefix, "prefix", c.topo.Prefix, defaults.Lookup("prefix").Usage)
	default:
		c.topo = settings.BindTopology(flag.NewFlagSet("defaults", flag.ContinueOnError))
	}
	fs.StringVar(&c.tenant, "tenant", "default", "tenant")
	fs.BoolVar(&c.json, "json", false, "print JSON instead of text")
}

// connectionFlags are the flags every command shares that say where and how to reach agentmem:
// the NATS connection and the name prefix of its streams. A command's help lists them by name
// only; memctl --help describes them.
func connectionFlags() *flag.FlagSet {
	fs := flag.NewFlagSet("memctl", flag.ContinueOnError)
	settings.BindConn(fs)
	topo := flag.NewFlagSet("topology", flag.ContinueOnError)
	settings.BindTopology(topo)
	prefix := topo.Lookup("prefix")
	fs.String(prefix.Name, prefix.DefValue, prefix.Usage)
	return fs
}

// sharedFlags are the flags every command but auth takes: the connection flags, --tenant and
// --json.
func sharedFlags() *flag.FlagSet {
	fs := connectionFlags()
	fs.String("tenant", "default", "tenant")
	fs.Bool("json", false, "print JSON instead of text")
	return fs
}

const envHelp = `ENVIRONMENT
  Every flag of a command can also be set in the environment as AGENTMEM_ and its name in
  capitals with - as _: AGENTMEM_NATS, AGENTMEM_CREDS, AGENTMEM_TENANT, AGENTMEM_JSON, …
  A flag given on the command line wins.`

// rootUsage is memctl --help: the commands, the shared flags and the environment.
func rootUsage(c *ffcli.Command) string {
	var b strings.Builder
	b.WriteString(ffcli.DefaultUsageFunc(c))
	b.WriteString("\nSHARED FLAGS (of every command but auth, before or after its name; --prefix where streams are read)\n")
	tw := tabwriter.NewWriter(&b, 0, 2, 2, ' ', 0)
	sharedFlags().VisitAll(func(f *flag.Flag) {
		def := ""
		if f.DefValue != "" && f.DefValue != "false" {
			def = " " + f.DefValue
		}
		fmt.Fprintf(tw, "  -%s%s\t%s\n", f.Name, def, f.Usage)
	})
	_ = tw.Flush()
	b.WriteString("\n" + envHelp + "\n")
	return b.String()
}

// commandUsage is a command's help: its own flags, then the connection flags by name only.
func commandUsage(c *ffcli.Command) string {
	conn := connectionFlags()
	own := flag.NewFlagSet(c.FlagSet.Name(), flag.ContinueOnError)
	var shared []string
	c.FlagSet.VisitAll(func(f *flag.Flag) {
		if conn.Lookup(f.Name) != nil && !(f.Name == "prefix" && topologyOf(c.Name) == topologyAll) {
			shared = append(shared, "-"+f.Name)
			return
		}
		own.Var(f.Value, f.Name, f.Usage)
		own.Lookup(f.Name).DefValue = f.DefValue
	})
	view := *c
	view.FlagSet = own
	var b strings.Builder
	b.WriteString(ffcli.DefaultUsageFunc(&view))
	if len(shared) > 0 {
		fmt.Fprintf(&b, "\nCONNECTION FLAGS (memctl --help says what they do)\n  %s\n", strings.Join(shared, " "))
	}
	b.WriteString("\n" + envHelp + "\n")
	return b.String()
}

func run(ctx context.Context, args []string, out io.Writer) (err error) {
	rootFlags := flag.NewFlagSet("memctl", flag.ContinueOnError)
	showVersion := rootFlags.Bool("version", false, "print the version and exit")
	subs := []*ffcli.Command{
		publishCommand(out),
		endCommand(out),
		searchCommand(out),
		contextCommand(out),
		sessionCommand(out),
		dlqCommand(out),
		forgetCommand(out),
		factsCommand(out),
		graphCommand(out),
		usageCommand(out),
		replayCommand(out),
		authCommand(out),
		mcpCommand(out),
		importCommand(out),
		statsCommand(out),
		reembedCommand(out),
	}
	root := &ffcli.Command{
		Name:        "memctl",
		ShortUsage:  "memctl <command> [flags]",
		ShortHelp:   "agentmem's command-line tool",
		Subcommands: subs,
		FlagSet:     rootFlags,
		UsageFunc:   rootUsage,
		Exec: func(_ context.Context, args []string) error {
			if *showVersion {
				fmt.Fprintln(out, version.String("memctl"))
				return nil
			}
			if len(args) > 0 {
				return unknownCommand("memctl", args[0], subs)
			}
			return flag.ErrHelp
		},
	}
	// Help goes to standard output (memctl --help | less); errors to standard error, without
	// the help: the flag package prints a command's whole help on a bad flag, so what the flag
	// sets print is kept, and printed only when it is the help that was asked for.
	var help bytes.Buffer
	root.FlagSet.SetOutput(&help)
	for _, sub := range root.Subcommands {
		setOutput(sub, &help)
	}
	defer func() {
		if errors.Is(err, flag.ErrHelp) {
			_, _ = out.Write(help.Bytes())
		}
	}()
	args = hoistShared(root, markEndOfFlags(args))
	if err := root.Parse(args); err != nil {
		return flagError(selected(root, args), err)
	}
	return root.Run(ctx)
}

// unknownCommand is the usage error for name, not a subcommand of group: the closest
// subcommand, if one is near, and where the commands are listed.
func unknownCommand(group, name string, subs []*ffcli.Command) error {
	names := make([]string, 0, len(subs))
	for _, sub := range subs {
		names = append(names, sub.Name)
	}
	msg := fmt.Sprintf("unknown command %q", strings.TrimPrefix(group+" "+name, "memctl "))
	if m := closest(name, names); m != "" {
		msg += fmt.Sprintf("\ndid you mean %s %s?", group, m)
	}
	return usageError{msg + fmt.Sprintf("\n(%s --help lists the commands)", group)}
}

// groupExec runs a command that only groups subcommands (memctl dlq, memctl auth): without
// arguments it prints its help; an unknown subcommand is a usage error.
func groupExec(name string, subs []*ffcli.Command) func(context.Context, []string) error {
	return func(_ context.Context, args []string) error {
		if len(args) > 0 {
			return unknownCommand("memctl "+name, args[0], subs)
		}
		return flag.ErrHelp
	}
}

// setOutput sends the help of c and its subcommands to out.
func setOutput(c *ffcli.Command, out io.Writer) {
	if c.FlagSet == nil {
		// ffcli would make one that exits the process on a bad flag and prints to stderr.
		c.FlagSet = flag.NewFlagSet("memctl "+c.Name, flag.ContinueOnError)
	}
	c.FlagSet.SetOutput(out)
	for _, sub := range c.Subcommands {
		setOutput(sub, out)
	}
}

// newCommand builds a subcommand whose flags have AGENTMEM_* environment twins.
func newCommand(name, usage, help string, c *common, out io.Writer, bind func(*flag.FlagSet), exec func(context.Context, []string) error) *ffcli.Command {
	fs := flag.NewFlagSet("memctl "+name, flag.ContinueOnError)
	c.out, c.fs = out, fs
	c.bind(fs, name)
	if bind != nil {
		bind(fs)
	}
	cmd := &ffcli.Command{
		Name:       name,
		ShortUsage: "memctl " + name + " " + usage,
		ShortHelp:  help,
		FlagSet:    fs,
		Options:    []ff.Option{ff.WithEnvVarPrefix(settings.EnvPrefix)},
		UsageFunc:  commandUsage,
	}
	cmd.Exec = c.guarded(interspersed(cmd, exec))
	return cmd
}

package settings

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"

	"github.com/agentmem/agentmem/internal/version"
)

// ErrVersion is what Parse returns when --version is on the command line: the command does
// nothing else, and Report prints the version.
var ErrVersion = errors.New("settings: --version given")

// bindVersion registers --version on fs. Its value ignores what it is set to: Parse reads it
// from the command line alone, because ff would also set it from AGENTMEM_VERSION, a name a
// deployment may well use for something else.
func bindVersion(fs *flag.FlagSet) {
	if fs.Lookup("version") == nil {
		fs.Var(versionFlag{}, "version", "print the version and exit")
	}
}

type versionFlag struct{}

func (versionFlag) String() string   { return "false" }
func (versionFlag) Set(string) error { return nil }
func (versionFlag) IsBoolFlag() bool { return true }

// askedVersion reports whether args, parsed as fs parses them, give --version. It parses into a
// copy of fs's flags whose values discard what they are set to, so that fs itself is parsed once,
// by ff.
func askedVersion(fs *flag.FlagSet, args []string) bool {
	probe := flag.NewFlagSet(fs.Name(), flag.ContinueOnError)
	probe.SetOutput(io.Discard)
	probe.Usage = func() {}
	asked := false
	fs.VisitAll(func(f *flag.Flag) {
		v := probeValue{}
		if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
			v.boolFlag = true
		}
		if f.Name == "version" {
			v.asked = &asked
		}
		probe.Var(v, f.Name, "")
	})
	_ = probe.Parse(args) // errors are ff's to report; a --version before them counts
	return asked
}

type probeValue struct {
	boolFlag bool
	asked    *bool
}

func (probeValue) String() string { return "" }

func (v probeValue) Set(s string) error {
	if v.asked != nil {
		b, err := strconv.ParseBool(s)
		*v.asked = err == nil && b
	}
	return nil
}

func (v probeValue) IsBoolFlag() bool { return v.boolFlag }

// Report finishes a command whose run returned err, and returns its exit status: for ErrVersion
// the version line on stdout (version.String) and 0; for flag.ErrHelp (the usage is printed
// already) 0; for any other error "name: err" on stderr and 1.
func Report(stdout, stderr io.Writer, name string, err error) int {
	switch {
	case err == nil:
		return 0
	case errors.Is(err, ErrVersion):
		fmt.Fprintln(stdout, version.String(name))
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	default:
		fmt.Fprintln(stderr, name+":", err)
		return 1
	}
}

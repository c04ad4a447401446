package settings

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/version"
)

func TestParseVersion(t *testing.T) {
	parse := func(args ...string) (*string, error) {
		fs := flag.NewFlagSet("ingest", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		data := fs.String("data", "./data", "")
		fs.Bool("json", false, "")
		return data, Parse(fs, args)
	}
	for _, args := range [][]string{{"--version"}, {"-version"}, {"--version=true"}, {"--data", "x", "--json", "--version"}} {
		if _, err := parse(args...); !errors.Is(err, ErrVersion) {
			t.Errorf("%v: %v, want ErrVersion", args, err)
		}
	}
	for _, args := range [][]string{{}, {"--version=false"}, {"--data", "--version"}, {"--", "--version"}} {
		if _, err := parse(args...); err != nil {
			t.Errorf("%v: %v, want no error and no version", args, err)
		}
	}
	// AGENTMEM_VERSION may name something else in a deployment: it neither asks for the version
	// nor fails the parse.
	t.Setenv("AGENTMEM_VERSION", "1.4.2")
	t.Setenv("AGENTMEM_DATA", "/srv/agentmem")
	if data, err := parse(); err != nil || *data != "/srv/agentmem" {
		t.Fatalf("with AGENTMEM_VERSION set: %v, --data %q", err, *data)
	}
	// A bad flag is still ff's error, not swallowed by the look for --version.
	if _, err := parse("--bogus"); err == nil || errors.Is(err, ErrVersion) {
		t.Fatalf("--bogus: %v", err)
	}
}

func TestReport(t *testing.T) {
	old := version.Version
	t.Cleanup(func() { version.Version = old })
	version.Version = "v1.2.3"
	for _, c := range []struct {
		err            error
		code           int
		stdout, stderr string
	}{
		{nil, 0, "", ""},
		{ErrVersion, 0, "retriever v1.2.3 (", ""},
		{flag.ErrHelp, 0, "", ""},
		{errors.New("--nats: no servers"), 1, "", "retriever: --nats: no servers\n"},
	} {
		var stdout, stderr bytes.Buffer
		code := Report(&stdout, &stderr, "retriever", c.err)
		if code != c.code || !strings.HasPrefix(stdout.String(), c.stdout) || (c.stdout == "") != (stdout.Len() == 0) || stderr.String() != c.stderr {
			t.Errorf("Report(%v) = %d, stdout %q, stderr %q; want %d, %q…, %q", c.err, code, stdout.String(), stderr.String(), c.code, c.stdout, c.stderr)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/pkg/client"
)

// Help goes to standard output; an unknown command or flag is a usage error (exit status 2).
func TestHelpAndUsageErrors(t *testing.T) {
	ctx := context.Background()
	var out bytes.Buffer
	if err := run(ctx, []string{"--help"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v, want flag.ErrHelp", err)
	}
	if !strings.Contains(out.String(), "SUBCOMMANDS") || !strings.Contains(out.String(), "publish") {
		t.Fatalf("--help printed %q to standard output, want the commands", out.String())
	}
	out.Reset()
	if err := run(ctx, []string{"dlq", "list", "--help"}, &out); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "memctl dlq list") {
		t.Fatalf("dlq list --help: %v, %q", err, out.String())
	}
	for _, args := range [][]string{{"bogus"}, {"publish", "--bogus"}} {
		var usage usageError
		if err := run(ctx, args, &bytes.Buffer{}); !errors.As(err, &usage) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

// memctl publish --json prints the HTTP API's keys.
func TestAckJSONKeys(t *testing.T) {
	data, err := json.Marshal(client.Ack{ID: "t1", Stream: "AGENTMEM_TURNS", Sequence: 7, Duplicate: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(data); got != `{"id":"t1","stream":"AGENTMEM_TURNS","seq":7,"duplicate":true}` {
		t.Fatalf("ack JSON %s", got)
	}
}

// An empty answer says which tenant was searched when --tenant was left at its default.
func TestTenantHint(t *testing.T) {
	for _, c := range []struct {
		args []string
		hint bool
	}{{nil, true}, {[]string{"--tenant", "default"}, false}, {[]string{"--tenant", "acme"}, false}} {
		cm := &common{}
		fs := flag.NewFlagSet("test", flag.ContinueOnError)
		cm.fs = fs
		cm.bind(fs)
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if got := cm.tenantHint() != ""; got != c.hint {
			t.Errorf("%v: hint %q", c.args, cm.tenantHint())
		}
	}
}

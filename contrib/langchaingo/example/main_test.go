package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/ingest"
)

// The program remembers the name across sessions, against an in-process memoryd, and
// docs/clients.md shows its code as it is, in under 30 lines.
func TestExample(t *testing.T) {
	d, err := daemon.Start(context.Background(), daemon.Config{
		Broker: broker.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir()},
		Ingest: ingest.Config{IdleTimeout: -1},
	}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Stop(); err != nil {
			t.Error(err)
		}
	})
	var out bytes.Buffer
	run(context.Background(), d.URL(), &out)
	if got, want := out.String(), "[The user's name is Erin]\nYour name is Erin.\n"; got != want {
		t.Errorf("it printed %q, want %q", got, want)
	}

	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, body, _ := strings.Cut(string(src), "// docs:begin\n")
	body, _, _ = strings.Cut(body, "\t// docs:end")
	body = strings.ReplaceAll(strings.TrimPrefix(body, "\t"), "\n\t", "\n")
	doc, err := os.ReadFile("../../../docs/clients.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), body) {
		t.Errorf("docs/clients.md does not show the program as it is:\n%s", body)
	}
	if n := strings.Count(body, "\n"); n >= 30 {
		t.Errorf("the program is %d lines, docs/clients.md promises under 30", n)
	}
}

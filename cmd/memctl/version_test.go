package main

import (
	"bytes"
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/agentmem/agentmem/internal/version"
)

// memctl --version prints the version line on standard output.
func TestVersion(t *testing.T) {
	old := version.Version
	t.Cleanup(func() { version.Version = old })
	version.Version = "v1.2.3"
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--version"}, &out); err != nil {
		t.Fatalf("memctl --version: %v", err)
	}
	if !strings.HasPrefix(out.String(), "memctl v1.2.3 (") || !strings.HasSuffix(out.String(), runtime.Version()+")\n") {
		t.Fatalf("memctl --version printed %q", out.String())
	}
}

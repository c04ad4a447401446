package settings

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Console logs written to a file or a buffer carry no ANSI colour codes.
func TestConsoleLogHasNoColoursOffATerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "memoryd.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var buf bytes.Buffer
	l := &Log{Level: "info", Format: "console"}
	for _, w := range []io.Writer{f, &buf} {
		log, err := l.Logger(w, "test")
		if err != nil {
			t.Fatal(err)
		}
		log.Info().Str("component", "ingest").Msg("started")
	}
	data, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"file": string(data), "buffer": buf.String()} {
		if !strings.Contains(out, "started") {
			t.Fatalf("%s: no log line: %q", name, out)
		}
		if strings.Contains(out, "\x1b[") {
			t.Errorf("%s: ANSI codes in a log that is not a terminal: %q", name, out)
		}
	}
}

// A server that does not answer gets a hint that memoryd may not be running.
func TestNoServerSaysWhatToCheck(t *testing.T) {
	_, err := (&Conn{URL: "nats://127.0.0.1:1"}).Connect("test")
	if err == nil || !strings.Contains(err.Error(), "is memoryd running?") {
		t.Fatalf("connecting to a closed port: %v", err)
	}
}

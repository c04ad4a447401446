package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/cmd/internal/settings"
	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/version"
)

// A second memoryd fails at once, naming what is taken: the data directory (with the holder's
// process), the --listen address, the --http address.
func TestSecondMemorydSaysWhatIsTaken(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	listen, health := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--listen", listen, "--data", dir, "--health-listen", health, "--log-level", "error"})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("first memoryd: %v", err)
		}
	})
	// The health endpoints are served once the daemon runs.
	brokertest.CheckFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		resp, err := http.Get("http://" + health + "/healthz")
		if err != nil {
			return err
		}
		return resp.Body.Close()
	})
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	for _, c := range []struct {
		name string
		args []string
		want []string
	}{
		{"same data, another port", []string{"--listen", freeAddr(t), "--data", dir}, []string{"--data: ", dir, "is held by process "}},
		{"same --listen", []string{"--listen", listen, "--data", t.TempDir()}, []string{"--listen: ", listen + " is taken"}},
		{"taken --http", []string{"--listen", freeAddr(t), "--data", t.TempDir(), "--http", taken.Addr().String()},
			[]string{"--http: " + taken.Addr().String() + " is already in use"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := run(context.Background(), append(c.args, "--log-level", "error"))
			if err == nil {
				t.Fatal("the second memoryd ran")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// memoryd --version prints the version line on standard output and starts nothing.
func TestVersion(t *testing.T) {
	old := version.Version
	t.Cleanup(func() { version.Version = old })
	version.Version = "v1.2.3"
	err := run(context.Background(), []string{"--version", "--data", filepath.Join(t.TempDir(), "data")})
	var stdout, stderr bytes.Buffer
	if code := settings.Report(&stdout, &stderr, "memoryd", err); code != 0 || stderr.Len() != 0 {
		t.Fatalf("memoryd --version: status %d, %q on stderr (%v)", code, stderr.String(), err)
	}
	if !strings.HasPrefix(stdout.String(), "memoryd v1.2.3 (") || !strings.HasSuffix(stdout.String(), runtime.Version()+")\n") {
		t.Fatalf("memoryd --version printed %q", stdout.String())
	}
}

package typescript_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// stampFile, inside node_modules, records which package-lock.json and Node.js the installed
// dependencies came from; npm ci removes node_modules, and with it the stamp.
const stampFile = "node_modules/.agentmem-installed"

// agentLine is the JSON line the agent prints.
type agentLine struct {
	OK    bool   `json:"ok"`
	Error string `json:"error"`
	Turns []struct {
		ID   string    `json:"id"`
		Seq  uint64    `json:"seq"`
		Time time.Time `json:"time"`
	} `json:"turns"`
	RetryDuplicate bool `json:"retry_duplicate"`
	Planted        struct {
		ID      string    `json:"id"`
		Content string    `json:"content"`
		Time    time.Time `json:"time"`
	} `json:"planted"`
	Top struct {
		ID      string `json:"id"`
		Type    string `json:"type"`
		Source  string `json:"source"`
		Content string `json:"content"`
	} `json:"top"`
	BadRequest *struct {
		Code    int    `json:"code"`
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"bad_request"`
	RejectedAfter *struct {
		Code    int    `json:"code"`
		Field   string `json:"field"`
		Message string `json:"message"`
	} `json:"rejected_after"`
}

// TestTypeScriptAgent runs the TypeScript agent (official NATS client from npm) against a real
// agentmem: turns in binary-mode CloudEvents over JetStream, a session end, read-your-writes
// retrieval and a 400 service error, all from Node.js.
func TestTypeScriptAgent(t *testing.T) {
	requireNode(t)
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	installDeps(t, dir)
	installed := time.Now()
	run(t, dir, 2*time.Minute, nil, "node", "node_modules/typescript/bin/tsc", "-p", "tsconfig.json")
	built := time.Now()

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, err := daemon.Start(ctx, daemon.Config{
		Broker: broker.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir()},
		Ingest: ingest.Config{IdleTimeout: -1},
	}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Stop(); err != nil {
			t.Errorf("stopping agentmem: %v", err)
		}
	})

	const tenant, session, user = "acme", "ts-s1", "ts-u1"
	out := run(t, dir, 90*time.Second,
		[]string{"NATS_URL=" + d.URL(), "TENANT=" + tenant, "SESSION=" + session, "USER=" + user},
		"node", "dist/agent.js")
	ran := time.Now()
	var got agentLine
	if err := json.Unmarshal(lastLine(out), &got); err != nil {
		t.Fatalf("agent printed no JSON line (%v): %s", err, out)
	}
	t.Logf("agent: %s", lastLine(out))
	t.Logf("npm ci %s, tsc %s, agent %s", installed.Sub(start).Round(time.Millisecond),
		built.Sub(installed).Round(time.Millisecond), ran.Sub(built).Round(time.Millisecond))

	if !got.OK || len(got.Turns) != 3 {
		t.Fatalf("agent reported failure or %d turns: %s", len(got.Turns), out)
	}
	const planted = "请记住：我的护照放在书房左边第二个抽屉里。"
	if got.Planted.Content != planted || got.Planted.ID != got.Turns[1].ID {
		t.Fatalf("planted turn %+v, want the second turn %q", got.Planted, planted)
	}
	if got.Top.ID != got.Planted.ID || got.Top.Content != planted || got.Top.Type != "CONVERSATION" || got.Top.Source != "short" {
		t.Fatalf("top entry %+v, want the planted turn %s from short-term memory", got.Top, got.Planted.ID)
	}
	if !got.RetryDuplicate {
		t.Fatal("a retried publish with the same Nats-Msg-Id was not reported as a duplicate")
	}
	if got.BadRequest == nil || got.BadRequest.Code != 400 || got.BadRequest.Field != "query" {
		t.Fatalf("empty query: %+v, want a 400 service error on field query", got.BadRequest)
	}

	if ra := got.RejectedAfter; ra == nil || ra.Code != 400 || ra.Field != "after" ||
		!strings.Contains(ra.Message, `turn "ts-bad-turn" of session "ts-s1-bad" was rejected: `) {
		t.Fatalf("retrieve after a rejected turn: %+v, want a 400 on field after naming the rejection", ra)
	}

	// What the agent published is what a Go agent sees: 3 turns and the session end applied,
	// only the turn without a user rejected, the retried publish stored once, the Chinese text
	// and ce-time intact.
	brokertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		if n := d.Ingest().Stats().Applied; n < 4 {
			return fmt.Errorf("%d of 4 turns applied", n)
		}
		return nil
	})
	if st := d.Ingest().Stats(); st.Applied != 4 || st.Rejected != 1 || st.Duplicates != 0 {
		t.Fatalf("ingest stats %+v, want 4 applied (3 turns, 1 session end), 1 rejected, no duplicate", st)
	}
	nc, err := nats.Connect(d.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cl, err := client.New(nc, client.Options{Tenant: tenant})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := cl.Retrieve(ctx, events.RetrieveRequest{Query: "护照", Session: session, Types: []string{"CONVERSATION"}})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range reply.Entries {
		if e.ID == got.Planted.ID {
			found = true
			if e.Content != planted || !e.Timestamp.Equal(got.Planted.Time) || e.Metadata["role"] != "user" {
				t.Fatalf("planted turn as Go sees it: %+v, want content %q at %s (its ce-time)", e, planted, got.Planted.Time)
			}
		}
	}
	if !found {
		t.Fatalf("the Go client does not find the planted turn %s: %+v", got.Planted.ID, reply.Entries)
	}
}

// requireNode skips the test when Node.js or npm is missing, except in CI, whose script installs
// them: there a skip would hide the only check of the TypeScript client.
func requireNode(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("%s is not installed; .ci/run installs Node.js and npm before the tests", tool)
			}
			t.Skipf("%s is not installed: the TypeScript client is not tested (apt-get install nodejs npm)", tool)
		}
	}
}

// installDeps runs npm ci unless node_modules already holds what package-lock.json pins for
// this Node.js.
func installDeps(t *testing.T, dir string) {
	t.Helper()
	lock, err := os.ReadFile(filepath.Join(dir, "package-lock.json"))
	if err != nil {
		t.Fatal(err)
	}
	version := run(t, dir, 30*time.Second, nil, "node", "--version")
	sum := sha256.Sum256(append(lock, version...))
	want := hex.EncodeToString(sum[:])
	stamp := filepath.Join(dir, stampFile)
	if have, err := os.ReadFile(stamp); err == nil && string(have) == want {
		return
	}
	_, stderr := runBoth(t, dir, 5*time.Minute, []string{"npm_config_update_notifier=false"},
		"npm", "ci", "--no-audit", "--no-fund", "--loglevel=warn")
	// A dependency that does not run on this Node.js (TestEnginesAgree checks the stated range).
	if strings.Contains(string(stderr), "EBADENGINE") {
		t.Fatalf("npm ci warned EBADENGINE on Node.js %s:\n%s", bytes.TrimSpace(version), stderr)
	}
	if err := os.WriteFile(stamp, []byte(want), 0o644); err != nil {
		t.Fatal(err)
	}
}

// run runs name with args in dir, with env added to the environment, bounded by timeout, and
// returns its standard output. It fails the test with both outputs when the command fails.
func run(t *testing.T, dir string, timeout time.Duration, env []string, name string, args ...string) []byte {
	t.Helper()
	stdout, _ := runBoth(t, dir, timeout, env, name, args...)
	return stdout
}

// runBoth is run that returns the standard error too.
func runBoth(t *testing.T, dir string, timeout time.Duration, env []string, name string, args ...string) ([]byte, []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("%s %s did not finish within %s\nstdout: %s\nstderr: %s", name, strings.Join(args, " "), timeout, stdout.Bytes(), stderr.Bytes())
	}
	if err != nil {
		t.Fatalf("%s %s: %v\nstdout: %s\nstderr: %s", name, strings.Join(args, " "), err, stdout.Bytes(), stderr.Bytes())
	}
	return stdout.Bytes(), stderr.Bytes()
}

func lastLine(b []byte) []byte {
	lines := bytes.Split(bytes.TrimSpace(b), []byte("\n"))
	return lines[len(lines)-1]
}

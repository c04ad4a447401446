package typescript_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/gateway"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/pkg/events"
)

// exampleToken is the bearer token of tenant acme on the test's HTTP API.
const exampleToken = "ts-examples-acme"

// TestTypeScriptExamples runs the LangChain.js and AI SDK examples and the HTTP client's checks
// (test/http.ts) against a real agentmem with its HTTP API: each example remembers a fact in one
// session, ends it and must print a prompt, in a new session, that carries the fact.
func TestTypeScriptExamples(t *testing.T) {
	requireNode(t)
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	installDeps(t, dir)
	run(t, dir, 2*time.Minute, nil, "node", "node_modules/typescript/bin/tsc", "-p", "tsconfig.json")
	run(t, dir, 2*time.Minute, nil, "node", "node_modules/typescript/bin/tsc", "-p", "tsconfig.examples.json")

	base := startHTTP(t)
	env := []string{"AGENTMEM_URL=" + base, "AGENTMEM_TOKEN=" + exampleToken}

	for _, ex := range []struct {
		name, session, want string
	}{
		{"langchain", "lc-2", "The user lives in Lisbon"},
		{"ai-sdk", "ai-2", "The user's favourite language is Go"},
	} {
		t.Run(ex.name, func(t *testing.T) {
			out := string(run(t, dir, 90*time.Second, env, "node", "dist/examples/"+ex.name+".js"))
			t.Logf("%s printed:\n%s", ex.name, out)
			// The fake models' answers do not name the fact: only the prompt agentmem filled can.
			if !strings.Contains(out, ex.want) {
				t.Fatalf("the prompt of the new session lacks %q:\n%s", ex.want, out)
			}
			// The new session's question and answer were published too (stored when the
			// example's publish returned; applied by ingest soon after: wait, bounded).
			if err := waitTurns(base+"/v1/tenants/acme/sessions/"+ex.session, 2, 30*time.Second); err != nil {
				t.Fatal(err)
			}
			src, err := os.ReadFile(filepath.Join("examples", ex.name+".ts"))
			if err != nil {
				t.Fatal(err)
			}
			if n := strings.Count(string(src), "\n"); n >= 30 {
				t.Errorf("examples/%s.ts is %d lines, docs/clients.md promises under 30", ex.name, n)
			}
			doc, err := os.ReadFile("../../docs/clients.md")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(doc), "```ts\n"+string(src)+"```\n") {
				t.Errorf("docs/clients.md does not show examples/%s.ts as it is", ex.name)
			}
		})
	}

	t.Run("client", func(t *testing.T) {
		out := run(t, dir, 90*time.Second, env, "node", "dist/test/http.js")
		var got struct {
			OK     bool     `json:"ok"`
			Error  string   `json:"error"`
			Checks []string `json:"checks"`
		}
		if err := json.Unmarshal(lastLine(out), &got); err != nil || !got.OK {
			t.Fatalf("test/http.ts (%v): %s", err, out)
		}
		t.Logf("%d checks: %s", len(got.Checks), strings.Join(got.Checks, ", "))
	})
}

// startHTTP starts agentmem (every worker) and its HTTP gateway with one token of tenant acme,
// as memoryd --http --http-tokens does, and returns the gateway's base URL.
func startHTTP(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	t.Cleanup(cancel)
	d, err := daemon.Start(ctx, daemon.Config{
		Broker: broker.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir()},
		Ingest: ingest.Config{IdleTimeout: -1},
	}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	nc, err := nats.Connect(d.URL())
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// A first turn without a user, published over NATS as an agent may (the gateway would refuse
	// it before storing it): ingest rejects it, and test/http.ts reads what became of it.
	ev, err := events.NewEvent("t-2-a", events.TypeTurn, "examples_test", time.Now(), events.Turn{Role: "user", Content: "hello"})
	if err != nil {
		t.Fatal(err)
	}
	msg, err := events.EventMsg("acme", "t-2", ev)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}
	gw, err := gateway.New(gateway.Config{Tokens: map[string]string{exampleToken: "acme"}}, nc, js, events.DefaultTopology(), zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gw.Handler())
	t.Cleanup(func() {
		srv.Close()
		nc.Close()
		if err := d.Stop(); err != nil {
			t.Errorf("stopping agentmem: %v", err)
		}
	})
	return srv.URL
}

// waitTurns polls the session at url until it holds want turns, for at most timeout.
func waitTurns(url string, want int, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		var s struct {
			Turns int `json:"turns"`
		}
		last = fetchJSON(url, &s)
		if last == nil && s.Turns == want {
			return nil
		}
		if last == nil {
			last = fmt.Errorf("session %s has %d turns, want the question and the answer (%d)", url, s.Turns, want)
		}
		if time.Now().After(deadline) {
			return last
		}
		<-tick.C
	}
}

// fetchJSON decodes the JSON answer of GET url (with the examples' token) into v.
func fetchJSON(url string, v any) error {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	req.Header.Set("authorization", "Bearer "+exampleToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return nil
}

package typescript_test

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
)

// TestTypeScriptRetries runs test/retry.ts: the HTTP client against a scripted local HTTP server,
// the NATS client against scripted replies on a real NATS server. What may pass (a leader
// election, a service moving, a rate limit) is tried again with the same event; a 4xx, or a 503
// on after, is thrown at once.
func TestTypeScriptRetries(t *testing.T) {
	requireNode(t)
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	installDeps(t, dir)
	run(t, dir, 2*time.Minute, nil, "node", "node_modules/typescript/bin/tsc", "-p", "tsconfig.json")
	run(t, dir, 2*time.Minute, nil, "node", "node_modules/typescript/bin/tsc", "-p", "tsconfig.examples.json")
	env := brokertest.Start(t)
	out := run(t, dir, 2*time.Minute, []string{"NATS_URL=" + env.URL}, "node", "dist/test/retry.js")
	var got struct {
		OK     bool     `json:"ok"`
		Error  string   `json:"error"`
		Checks []string `json:"checks"`
	}
	if err := json.Unmarshal(lastLine(out), &got); err != nil || !got.OK {
		t.Fatalf("test/retry.ts (%v): %s", err, out)
	}
	t.Logf("%d checks: %s", len(got.Checks), strings.Join(got.Checks, ", "))
}

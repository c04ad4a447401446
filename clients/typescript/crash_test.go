package typescript_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/daemon/daemontest"
	"github.com/agentmem/agentmem/pkg/events"
)

// TestTypeScriptRidesThroughALeaderCrash runs test/crash.ts against agentmem on a 3-node cluster
// and crashes the node leading the turns stream (and serving Node.js's connection) mid-run: the
// NATS client's publishes and retrieves, and a plain nats.js publisher with the settings
// docs/protocol.md gives, see no error, and every turn is stored once.
func TestTypeScriptRidesThroughALeaderCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3-node cluster and crashes a node; skipped with -short")
	}
	requireNode(t)
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	installDeps(t, dir)
	run(t, dir, 2*time.Minute, nil, "node", "node_modules/typescript/bin/tsc", "-p", "tsconfig.json")
	run(t, dir, 2*time.Minute, nil, "node", "node_modules/typescript/bin/tsc", "-p", "tsconfig.examples.json")
	c := daemontest.StartCluster(t)

	cmd := exec.Command("node", "dist/test/crash.js")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "NATS_URL="+c.ClientURLs())
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	stored := func(want int) func() error {
		return func() error {
			select {
			case err := <-exited:
				t.Fatalf("test/crash.js exited early (%v): %s\n%s", err, stdout.Bytes(), stderr.Bytes())
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			st, err := c.JS.Stream(ctx, c.Topology.TurnsStream())
			if err != nil {
				return err
			}
			info, err := st.Info(ctx, jetstream.WithSubjectFilter("*.memory.turns.ts.>"))
			if err != nil {
				return err
			}
			n := 0
			for _, k := range info.State.Subjects {
				n += int(k)
			}
			if n < want {
				return fmt.Errorf("%d of %d turns stored", n, want)
			}
			return nil
		}
	}
	brokertest.CheckFor(t, 2*time.Minute, 50*time.Millisecond, stored(100))
	leader := c.TurnsLeader(t)
	c.Crash(leader)
	t.Logf("crashed %s, the turns stream's leader", leader)
	// Enough turns after the crash that both publishers worked through the election.
	brokertest.CheckFor(t, 2*time.Minute, 50*time.Millisecond, stored(400))
	_ = stdin.Close()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("test/crash.js: %v\n%s\n%s", err, stdout.Bytes(), stderr.Bytes())
		}
	case <-time.After(time.Minute):
		t.Fatalf("test/crash.js did not finish a minute after it was told to: %s", stderr.Bytes())
	}
	var got struct {
		OK        bool                `json:"ok"`
		IDs       map[string][]string `json:"ids"`
		Retrieves int                 `json:"retrieves"`
		Errors    []string            `json:"errors"`
		Failed    int                 `json:"failed"`
	}
	if err := json.Unmarshal(lastLine(stdout.Bytes()), &got); err != nil {
		t.Fatalf("test/crash.js printed no JSON line (%v): %s\n%s", err, stdout.Bytes(), stderr.Bytes())
	}
	if !got.OK || got.Failed > 0 {
		t.Fatalf("%d calls failed across the crash:\n%s", got.Failed, strings.Join(got.Errors, "\n"))
	}
	have := c.Stored(t)
	for sess, ids := range got.IDs {
		for _, id := range ids {
			if n := have[events.MsgID("ts", sess, id)]; n != 1 {
				t.Errorf("turn %s stored %d times", id, n)
			}
		}
	}
	t.Logf("NATS client: %d turns, %d retrieves; plain nats.js publisher: %d turns; 0 failed, each stored once",
		len(got.IDs["c0"]), got.Retrieves, len(got.IDs["c1"]))

	// docs/protocol.md gives the plain publisher's settings as test/crash.ts uses them.
	src, err := os.ReadFile("test/crash.ts")
	if err != nil {
		t.Fatal(err)
	}
	call := regexp.MustCompile(`await js\.publish\(subject, data, \{.*\}\);`).Find(src)
	doc, err := os.ReadFile("../../docs/protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	if call == nil || !bytes.Contains(doc, call) {
		t.Errorf("docs/protocol.md does not give the plain nats.js publisher's settings as test/crash.ts uses them: %s", call)
	}
}

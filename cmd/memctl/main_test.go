package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker"
	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/daemon"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/retrieve"
	"github.com/agentmem/agentmem/internal/stage"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
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
	if !strings.Contains(out.String(), "SHARED FLAGS") || !strings.Contains(out.String(), "-nats nats://") || !strings.Contains(out.String(), "AGENTMEM_NATS") {
		t.Errorf("--help does not describe the shared flags and the environment:\n%s", out.String())
	}
	out.Reset()
	if err := run(ctx, []string{"dlq", "list", "--help"}, &out); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "memctl dlq list") {
		t.Fatalf("dlq list --help: %v, %q", err, out.String())
	}
	// A command's help lists its own flags, and the connection flags by name only; the stream
	// administration flags only where they apply (replay).
	for _, c := range []struct {
		cmd       []string
		want, not []string
	}{
		{[]string{"publish"}, []string{"-session string", "-wait-timeout", "-tenant", "CONNECTION FLAGS (", "  -creds -inbox-prefix -nats", "AGENTMEM_"}, []string{"-partitions", "-replicas", "-dlq-max-age", " -prefix", "NATS server URL"}},
		{[]string{"search"}, []string{"-session", "CONNECTION FLAGS"}, []string{"-partitions", "-replicas", "-dlq-max-age", " -prefix"}},
		{[]string{"session"}, []string{"-session", "CONNECTION FLAGS"}, []string{"-partitions", "-replicas", "-dlq-max-age", " -prefix"}},
		{[]string{"dlq", "list"}, []string{"-limit", " -prefix"}, []string{"-partitions", "-replicas", "-dlq-max-age"}},
		{[]string{"replay"}, []string{"-partitions 16", "-replicas 1", "-prefix AGENTMEM"}, nil},
	} {
		out.Reset()
		if err := run(ctx, append(c.cmd, "--help"), &out); !errors.Is(err, flag.ErrHelp) {
			t.Fatalf("%v --help: %v", c.cmd, err)
		}
		for _, w := range c.want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("%v --help lacks %q:\n%s", c.cmd, w, out.String())
			}
		}
		for _, n := range c.not {
			if strings.Contains(out.String(), n) {
				t.Errorf("%v --help has %q:\n%s", c.cmd, n, out.String())
			}
		}
	}
	for _, group := range []string{"dlq", "auth"} {
		out.Reset()
		if err := run(ctx, []string{group}, &out); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "memctl "+group+" <") {
			t.Errorf("memctl %s: %v, printed %q to standard output, want its help", group, err, out.String())
		}
	}
	for _, args := range [][]string{{"bogus"}, {"publish", "--bogus"}, {"publish", "--partitions", "4"}, {"dlq", "bogus"}, {"auth", "--bogus"}} {
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
		cm.bind(fs, "search")
		if err := fs.Parse(c.args); err != nil {
			t.Fatal(err)
		}
		if got := cm.tenantHint() != ""; got != c.hint {
			t.Errorf("%v: hint %q", c.args, cm.tenantHint())
		}
	}
}

// startMemoryd runs an in-process memoryd for the test and returns its NATS URL.
func startMemoryd(t *testing.T) string {
	t.Helper()
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
	return d.URL()
}

// memctl publish --wait says whether the turn was applied or dead-lettered, with the reason,
// and exits non-zero for a dead letter.
func TestPublishWait(t *testing.T) {
	url := startMemoryd(t)
	ctx := context.Background()
	base := []string{"publish", "--nats", url, "--tenant", "acme", "--wait", "--wait-timeout", "20s"}

	var out bytes.Buffer
	err := run(ctx, append(base, "--session", "s1", "--id", "t1", "hello without a user"), &out)
	if err == nil || !strings.Contains(err.Error(), "dead-lettered") || !strings.Contains(err.Error(), "user is required") {
		t.Errorf("a first turn without --user: %v, want dead-lettered with the reason", err)
	}
	if !strings.Contains(out.String(), "stored turn t1") || !strings.Contains(out.String(), "dead-lettered, not applied") {
		t.Errorf("it printed %q", out.String())
	}

	out.Reset()
	if err := run(ctx, append(base, "--session", "s2", "--user", "alice", "--json", "hello"), &out); err != nil {
		t.Fatalf("a first turn with --user: %v (%s)", err, out.String())
	}
	var res struct{ ID, State, Reason string }
	if err := json.Unmarshal(out.Bytes(), &res); err != nil || res.ID == "" || res.State != "applied" || res.Reason != "" {
		t.Errorf("--json printed %s (%v), want the ack with state applied", out.String(), err)
	}

	// Without --wait (and not on a terminal) it returns once the turn is stored.
	out.Reset()
	if err := run(ctx, []string{"publish", "--nats", url, "--tenant", "acme", "--session", "s3", "hi"}, &out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "applied") || strings.Contains(out.String(), "dead-lettered") {
		t.Errorf("without --wait it printed %q", out.String())
	}
}

// memctl mcp --http needs a token to listen beyond loopback; with one, every request must
// carry it; without one, only loopback callers are answered.
func TestMCPHTTPToken(t *testing.T) {
	err := run(context.Background(), []string{"mcp", "--tenant", "acme", "--user", "alice", "--session", "s1", "--http", "0.0.0.0:0"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "--http-token") {
		t.Errorf("--http 0.0.0.0:0 without a token: %v, want --http-token required", err)
	}
	ok := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	for _, c := range []struct {
		token, auth, remote string
		want                int
	}{
		{"s3cret", "Bearer s3cret", "192.0.2.1:5000", http.StatusNoContent},
		{"s3cret", "Bearer wrong", "127.0.0.1:5000", http.StatusUnauthorized},
		{"s3cret", "", "127.0.0.1:5000", http.StatusUnauthorized},
		{"", "", "127.0.0.1:5000", http.StatusNoContent},
		{"", "", "192.0.2.1:5000", http.StatusForbidden},
	} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.RemoteAddr = c.remote
		if c.auth != "" {
			r.Header.Set("Authorization", c.auth)
		}
		w := httptest.NewRecorder()
		guard(ok, c.token, zerolog.Nop()).ServeHTTP(w, r)
		if w.Code != c.want {
			t.Errorf("token %q, authorization %q, from %s: %d, want %d", c.token, c.auth, c.remote, w.Code, c.want)
		}
	}
}

// search --context prints the context without "no matching memory" above it when no entry
// matched but the context holds the user's profile; plain search says the context is there.
func TestSearchContextWithoutEntries(t *testing.T) {
	url := startMemoryd(t)
	ctx := context.Background()
	base := []string{"--nats", url, "--tenant", "acme"}
	var out bytes.Buffer
	if err := run(ctx, append([]string{"publish", "--session", "s1", "--user", "alice", "--wait", "--wait-timeout", "20s", "I prefer Go for backend services."}, base...), &out); err != nil {
		t.Fatalf("publish: %v (%s)", err, out.String())
	}
	if err := run(ctx, append([]string{"end", "--session", "s1", "--user", "alice"}, base...), &out); err != nil {
		t.Fatal(err)
	}
	brokertest.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		out.Reset()
		if err := run(ctx, append([]string{"facts", "--user", "alice"}, base...), &out); err != nil {
			return err
		}
		if !strings.Contains(out.String(), "Go") {
			return fmt.Errorf("no fact yet: %s", out.String())
		}
		return nil
	})
	out.Reset()
	if err := run(ctx, append([]string{"search", "--user", "alice", "--context", "zebra"}, base...), &out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "no matching memory") || !strings.HasPrefix(out.String(), "context (") || !strings.Contains(out.String(), "Go") {
		t.Errorf("search --context with no entry but a profile printed:\n%s", out.String())
	}
	out.Reset()
	if err := run(ctx, append([]string{"search", "--user", "alice", "zebra"}, base...), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "no matching entries; the context holds") || strings.Contains(out.String(), "Go") {
		t.Errorf("search without --context, no entry but a profile, printed:\n%s", out.String())
	}
	out.Reset()
	if err := run(ctx, append([]string{"search", "--user", "nobody", "--context", "zebra"}, base...), &out); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != "no matching memory\n" {
		t.Errorf("search --context with neither entries nor context printed %q", got)
	}
}

// startMemorydWith runs an in-process memoryd with only the given stages; without any, a NATS
// server with agentmem's streams and buckets and no worker.
func startMemorydWith(t *testing.T, stages ...stage.Stage) string {
	t.Helper()
	if len(stages) == 0 {
		env := brokertest.Start(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := events.DefaultTopology().Ensure(ctx, env.JS); err != nil {
			t.Fatal(err)
		}
		return env.URL
	}
	d, err := daemon.Start(context.Background(), daemon.Config{
		Broker: broker.Config{Listen: "127.0.0.1:-1", DataDir: t.TempDir()},
		Stages: stages,
	}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := d.Stop(); err != nil {
			t.Error(err)
		}
	})
	return d.URL()
}

// A turn that was stored but whose application memctl publish --wait could not see (ingest
// not getting to it in time, the retriever not answering, as while a NATS node is lost) is
// reported as stored and not yet applied, with exit status 3: not as a failed publish.
func TestPublishStoredNotApplied(t *testing.T) {
	for _, c := range []struct {
		name   string
		stages []stage.Stage
		reason string
	}{
		{"no ingest", []stage.Stage{retrieve.Stage(retrieve.Config{})}, "still waiting after 300ms"},
		{"no retriever", nil, "no responders"},
	} {
		t.Run(c.name, func(t *testing.T) {
			url := startMemorydWith(t, c.stages...)
			var out bytes.Buffer
			err := run(context.Background(), []string{"publish", "--nats", url, "--tenant", "acme", "--session", "s1", "--user", "bob",
				"--id", "t1", "--wait", "--wait-timeout", "300ms", "hello"}, &out)
			var status exitStatus
			if !errors.As(err, &status) || status.code != exitStoredNotApplied {
				t.Fatalf("publish: %v, want exit status %d", err, exitStoredNotApplied)
			}
			if !strings.Contains(out.String(), "stored turn t1") || !strings.Contains(out.String(), "stored, not yet applied (") || !strings.Contains(out.String(), c.reason) ||
				!strings.Contains(out.String(), "it is not lost") {
				t.Errorf("publish printed:\n%s", out.String())
			}
			out.Reset()
			err = run(context.Background(), []string{"publish", "--nats", url, "--tenant", "acme", "--session", "s1", "--user", "bob",
				"--id", "t1", "--wait", "--wait-timeout", "300ms", "--json", "hello"}, &out)
			var res struct{ ID, State, Reason string }
			if jerr := json.Unmarshal(out.Bytes(), &res); jerr != nil || res.State != statePending || !strings.Contains(res.Reason, c.reason) || !errors.As(err, &status) {
				t.Errorf("publish --json: %v, printed %s", err, out.String())
			}
		})
	}
}

// search shows which fact holds now under a turn that stated what has since changed.
func TestSearchShowsAChangedStatement(t *testing.T) {
	url := startMemoryd(t)
	ctx := context.Background()
	base := []string{"--nats", url, "--tenant", "acme"}
	var out bytes.Buffer
	for i, text := range []string{"I live in Paris.", "I moved from Paris to Lisbon."} {
		sess := fmt.Sprintf("s%d", i+1)
		if err := run(ctx, append([]string{"publish", "--session", sess, "--user", "alice", "--wait", "--wait-timeout", "20s", text}, base...), &out); err != nil {
			t.Fatalf("publish: %v (%s)", err, out.String())
		}
		if err := run(ctx, append([]string{"end", "--session", sess, "--user", "alice"}, base...), &out); err != nil {
			t.Fatal(err)
		}
		want := []string{"Paris", "Lisbon"}[i]
		brokertest.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
			out.Reset()
			if err := run(ctx, append([]string{"facts", "--user", "alice"}, base...), &out); err != nil {
				return err
			}
			if !strings.Contains(out.String(), want) {
				return fmt.Errorf("no fact with %s yet: %s", want, out.String())
			}
			return nil
		})
	}
	out.Reset()
	if err := run(ctx, append([]string{"search", "--user", "alice", "where do I live?"}, base...), &out); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	i := strings.Index(got, "I live in Paris.")
	if i < 0 || !strings.Contains(got[i:], "since changed: fact_") {
		t.Errorf("search does not say that the Paris turn has since changed:\n%s", got)
	}
}

// memctl's commands use agentmem's Go client with its defaults: a moment without a retriever
// (one moving to another server after a node crashed) costs search latency, not an error.
func TestSearchRidesThroughAMomentWithoutRetriever(t *testing.T) {
	env := brokertest.Start(t)
	nc := env.Connect(t)
	var attempts atomic.Int32
	// The first two requests get the reply nats.go takes for "no responders"; the third an answer.
	sub, err := nc.Subscribe("memory.retrieve.acme", func(m *nats.Msg) {
		r := &nats.Msg{Subject: m.Reply, Header: nats.Header{"Status": []string{"503"}}}
		if attempts.Add(1) == 3 {
			r = &nats.Msg{Subject: m.Reply, Data: []byte(`{"entries":[{"id":"t1","type":"CONVERSATION","content":"I live in Porto.","timestamp":"2026-11-30T10:00:00Z","source":"short","score":1}]}`)}
		}
		_ = nc.PublishMsg(r)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"search", "--nats", env.URL, "--tenant", "acme", "Porto"}, &out); err != nil {
		t.Fatalf("search: %v (after %d attempts)", err, attempts.Load())
	}
	if !strings.Contains(out.String(), "t1") || attempts.Load() != 3 {
		t.Fatalf("search printed %q after %d attempts", out.String(), attempts.Load())
	}
}

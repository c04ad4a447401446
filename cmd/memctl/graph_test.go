package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/graph"
)

// memctl graph lists a user's entities and relations, now and at an earlier time, as text and
// as JSON; bad flags are refused with what is wrong.
func TestGraphCommand(t *testing.T) {
	url := startMemoryd(t)
	ctx := context.Background()
	base := []string{"--nats", url, "--tenant", "acme"}
	var out bytes.Buffer
	say := func(session, text string) {
		t.Helper()
		if err := run(ctx, append([]string{"publish", "--session", session, "--user", "alice", "--wait", "--wait-timeout", "20s", text}, base...), &out); err != nil {
			t.Fatalf("publish: %v (%s)", err, out.String())
		}
		if err := run(ctx, append([]string{"end", "--session", session, "--user", "alice"}, base...), &out); err != nil {
			t.Fatal(err)
		}
	}
	say("s1", "My best friend Melanie, Mel for short, lives in Rome. I live in Paris.")
	var before graph.Snapshot
	brokertest.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		out.Reset()
		if err := run(ctx, append([]string{"graph", "--user", "alice", "--json"}, base...), &out); err != nil {
			return err
		}
		if err := json.Unmarshal(out.Bytes(), &before); err != nil || len(before.Relations) < 2 {
			return fmt.Errorf("graph: %v %s", err, out.String())
		}
		return nil
	})
	mid := time.Now().UTC()
	say("s2", "I moved from Paris to Lisbon.")
	brokertest.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		out.Reset()
		if err := run(ctx, append([]string{"graph", "--user", "alice"}, base...), &out); err != nil {
			return err
		}
		// The Lisbon edge is written, then the Paris edge it supersedes is ended.
		if !strings.Contains(out.String(), "user lives_in Lisbon") || strings.Contains(out.String(), "user lives_in Paris") {
			return fmt.Errorf("graph:\n%s", out.String())
		}
		return nil
	})
	text := out.String()
	for _, want := range []string{"entities at ", "Melanie", "(also Mel)", "person", "relations", "user friend Melanie", "rules, turns"} {
		if !strings.Contains(text, want) {
			t.Errorf("memctl graph printed no %q:\n%s", want, text)
		}
	}
	if strings.Contains(text, "user lives_in Paris") {
		t.Errorf("memctl graph shows the ended Paris relation as holding:\n%s", text)
	}
	out.Reset()
	if err := run(ctx, append([]string{"graph", "--user", "alice", "--history"}, base...), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "user lives_in Paris") || !strings.Contains(out.String(), "until ") {
		t.Errorf("memctl graph --history shows no ended Paris relation:\n%s", out.String())
	}
	out.Reset()
	if err := run(ctx, append([]string{"graph", "--user", "alice", "--at", mid.Format(time.RFC3339Nano)}, base...), &out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "user lives_in Paris") || strings.Contains(out.String(), "Lisbon") {
		t.Errorf("memctl graph --at before the move:\n%s", out.String())
	}
	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"graph"}, "--user is required"},
		{[]string{"graph", "--user", "alice", "--at", "yesterday"}, "--at \"yesterday\""},
	} {
		if err := run(ctx, append(bad.args, base...), &out); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("memctl %v: %v, want %q", bad.args, err, bad.want)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// Flags after the text are parsed, not published as part of it; everything after -- is text,
// so a text may start with -; an unknown flag among the words says how to give such a text.
func TestFlagsAfterText(t *testing.T) {
	url := startMemoryd(t)
	ctx := context.Background()
	var out bytes.Buffer
	// --wait: a first turn without a user would be dead-lettered and fail the command.
	if err := run(ctx, []string{"publish", "--nats", url, "--tenant", "acme", "--session", "s1", "hello there", "--user", "bob", "--wait", "--wait-timeout", "20s"}, &out); err != nil {
		t.Fatalf("flags after the text: %v (%s)", err, out.String())
	}
	if err := run(ctx, []string{"publish", "--nats", url, "--tenant", "acme", "--session", "s1", "--wait", "--wait-timeout", "20s", "--", "--not-a-flag", "-x"}, &out); err != nil {
		t.Fatalf("text after --: %v (%s)", err, out.String())
	}
	if got := sessionContents(t, url, "s1"); strings.Join(got, "|") != "--not-a-flag -x|hello there" {
		t.Fatalf("session s1 holds %q, want the two texts without the flags", got)
	}

	var usage usageError
	err := run(ctx, []string{"publish", "--nats", url, "--tenant", "acme", "--session", "s1", "it", "is", "-5", "degrees"}, &out)
	if !errors.As(err, &usage) || !strings.Contains(err.Error(), "-5") || !strings.Contains(err.Error(), "-- TEXT") {
		t.Errorf("a word starting with - among the text: %v, want a usage error that points at --", err)
	}
	if err := run(ctx, []string{"publish", "--session", "s1", "hello", "--help"}, &out); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("--help after the text: %v, want flag.ErrHelp", err)
	}
	err = run(ctx, []string{"publish", "--nats", url, "--tenant", "acme", "--session", "s1", "--text", "one", "two"}, &out)
	if err == nil || !strings.Contains(err.Error(), "given twice") {
		t.Errorf("--text and arguments: %v, want an error", err)
	}
}

// memctl publish refuses text that is not valid UTF-8, as memctl import and the gateway do,
// instead of publishing U+FFFD in its place.
func TestPublishNotUTF8(t *testing.T) {
	url := startMemoryd(t)
	err := run(context.Background(), []string{"publish", "--nats", url, "--tenant", "acme", "--session", "s1", "--user", "bob", "caf\xe9"}, &bytes.Buffer{})
	if err == nil || !strings.Contains(err.Error(), "content: not valid UTF-8 at byte 3") {
		t.Fatalf("publishing text that is not UTF-8: %v", err)
	}
}

// memctl dlq list says which tenant it lists, and shows what each dead letter carried.
func TestDLQListTenantAndContent(t *testing.T) {
	url := startMemoryd(t)
	ctx := context.Background()
	var out bytes.Buffer
	// A first turn without a user, published over NATS in tenant default: ingest dead-letters it.
	err := run(ctx, []string{"publish", "--nats", url, "--session", "s1", "--wait", "--wait-timeout", "20s", "remember my first words"}, &out)
	if err == nil || !strings.Contains(err.Error(), "dead-lettered") {
		t.Fatalf("a first turn without a user: %v", err)
	}
	out.Reset()
	if err := run(ctx, []string{"dlq", "list", "--nats", url}, &out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"tenant default (--tenant", "reason: user is required on the first turn", `content: "remember my first words"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("dlq list printed\n%s\nwithout %q", out.String(), want)
		}
	}
	out.Reset()
	if err := run(ctx, []string{"dlq", "list", "--nats", url, "--tenant", "acme"}, &out); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "tenant acme\n") || !strings.Contains(out.String(), "no dead letters") {
		t.Errorf("dlq list --tenant acme printed %q", out.String())
	}
	for _, c := range []struct {
		dl   events.DeadLetter
		want string
	}{
		{events.DeadLetter{Body: []byte("{\"specversion\":\"1.0\",\"data\":{\"content\":\"structured\"}}")}, `content: "structured"`},
		{events.DeadLetter{Body: []byte("{\"content\":\"caf\xe9\"}")}, `body: "{\"content\":\"caf\xe9\"}"`},
		{events.DeadLetter{Body: []byte(strings.Repeat("é", 150)), BodySize: 900, Truncated: true}, `body: "` + strings.Repeat("é", 100) + `"… (300 of 900 bytes kept)`},
		{events.DeadLetter{}, "body: empty"},
	} {
		if got := preview(c.dl); got != c.want {
			t.Errorf("preview(%q) = %s, want %s", c.dl.Body, got, c.want)
		}
	}
}

// sessionContents returns the contents of a session's short-term entries, sorted.
func sessionContents(t *testing.T, url, session string) []string {
	t.Helper()
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	cl, err := client.New(nc, client.Options{Tenant: "acme", Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	none := 0
	reply, err := cl.Retrieve(context.Background(), events.RetrieveRequest{Query: "hello there not a flag x", Session: session,
		Sources: []string{events.SourceShort}, ContextTokens: &none})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range reply.Entries {
		got = append(got, e.Content)
	}
	slices.Sort(got)
	return got
}

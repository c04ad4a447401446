package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"os"
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

// A bad flag says what is wrong first, then the flag that was probably meant, then the
// command's one-line usage: not the command's whole help.
func TestBadFlagSaysWhatWasMeant(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"publish", "--sesion", "s1", "hello"}, []string{"flag provided but not defined: -sesion", "did you mean --session?", "usage: memctl publish --session S"}},
		{[]string{"publish", "--session", "s1", "hello", "--wiat"}, []string{"not defined: -wiat", "did you mean --wait?"}},
		{[]string{"search", "--tenat", "acme", "q"}, []string{"did you mean --tenant?"}},
		{[]string{"dlq", "list", "--limt", "3"}, []string{"did you mean --limit?", "usage: memctl dlq list", "memctl dlq list --help"}},
		{[]string{"--jsno", "search", "q"}, []string{"did you mean --json?"}},
		{[]string{"search", "it", "is", "-5", "degrees"}, []string{"not defined: -5", "goes after --: memctl search [flags] -- QUERY"}},
		{[]string{"serch", "q"}, []string{`unknown command "serch"`, "did you mean memctl search?"}},
		{[]string{"dlq", "lst"}, []string{`unknown command "dlq lst"`, "did you mean memctl dlq list?"}},
		{[]string{"publish", "--session"}, []string{"flag needs an argument: -session", "usage: memctl publish"}},
	} {
		var out bytes.Buffer
		err := run(context.Background(), c.args, &out)
		var usage usageError
		if !errors.As(err, &usage) {
			t.Errorf("%v: %v, want a usage error", c.args, err)
			continue
		}
		if out.Len() > 0 {
			t.Errorf("%v printed on standard output:\n%s", c.args, out.String())
		}
		lines := strings.Split(err.Error(), "\n")
		if len(lines) > 3 {
			t.Errorf("%v: %d lines, want the error and at most two of hints:\n%s", c.args, len(lines), err)
		}
		if !strings.Contains(lines[0], "not defined") && !strings.Contains(lines[0], "unknown command") && !strings.Contains(lines[0], "needs an argument") {
			t.Errorf("%v: first line %q, want the error", c.args, lines[0])
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%v: %q lacks %q", c.args, err, w)
			}
		}
	}
	// Nothing near: no guess.
	err := run(context.Background(), []string{"publish", "--session", "s1", "--zzzzzz"}, &bytes.Buffer{})
	if err == nil || strings.Contains(err.Error(), "did you mean") {
		t.Errorf("a flag like no other: %v, want no guess", err)
	}
}

func TestClosest(t *testing.T) {
	names := []string{"session", "user", "wait", "wait-timeout", "tenant", "json", "nats", "creds", "id", "text", "time"}
	for _, c := range []struct{ typo, want string }{
		{"sesion", "session"}, {"sess", "session"}, {"wiat", "wait"}, {"wait-timout", "wait-timeout"},
		{"JSON", "json"}, {"tenat", "tenant"}, {"crds", "creds"}, {"natss", "nats"},
		{"x", ""}, {"5", ""}, {"ix", ""}, {"banana", ""}, {"texts", "text"},
	} {
		if got := closest(c.typo, names); got != c.want {
			t.Errorf("closest(%q) = %q, want %q", c.typo, got, c.want)
		}
	}
}

// The shared flags may come before the command, as memctl --help lists them; flags after the
// command win.
func TestSharedFlagsBeforeTheCommand(t *testing.T) {
	url := startMemoryd(t)
	ctx := context.Background()
	var out bytes.Buffer
	if err := run(ctx, []string{"--nats", url, "--tenant=acme", "--json", "publish", "--session", "s1", "--user", "bob", "--wait", "--wait-timeout", "20s", "hello there"}, &out); err != nil {
		t.Fatalf("shared flags before publish: %v (%s)", err, out.String())
	}
	if !strings.HasPrefix(out.String(), "{") || !strings.Contains(out.String(), `"state": "applied"`) {
		t.Errorf("--json before the command: printed %s", out.String())
	}
	if got := sessionContents(t, url, "s1"); len(got) != 1 || got[0] != "hello there" {
		t.Fatalf("acme/s1 holds %q: --tenant before the command was not used", got)
	}
	out.Reset()
	if err := run(ctx, []string{"--nats", url, "--tenant", "nobody", "search", "--tenant", "acme", "--session", "s1", "hello"}, &out); err != nil || !strings.Contains(out.String(), "hello there") {
		t.Errorf("--tenant after the command should win: %v\n%s", err, out.String())
	}
	out.Reset()
	if err := run(ctx, []string{"--nats", url, "dlq", "list", "--tenant", "acme"}, &out); err != nil || !strings.HasPrefix(out.String(), "tenant acme") {
		t.Errorf("--nats before dlq list: %v\n%s", err, out.String())
	}
	// A flag that is not every command's stays the root's, and is refused there.
	var usage usageError
	if err := run(ctx, []string{"--session", "s1", "publish", "hi"}, &bytes.Buffer{}); !errors.As(err, &usage) {
		t.Errorf("--session before the command: %v, want a usage error", err)
	}
	if err := run(ctx, []string{"--nats", url, "auth", "list"}, &bytes.Buffer{}); !errors.As(err, &usage) {
		t.Errorf("--nats before auth, which takes none: %v, want a usage error", err)
	}
}

// memctl publish - reads the text from standard input, also when it is longer than a command
// line may be (~128 KB on Linux).
func TestPublishFromStdin(t *testing.T) {
	url := startMemoryd(t)
	text := strings.Repeat("the quick brown fox jumps over the lazy dog ", 4000) + "END" // 176 KB
	f, err := os.CreateTemp(t.TempDir(), "stdin")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(text + "\n"); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	saved := os.Stdin
	os.Stdin = f
	defer func() { os.Stdin = saved }()
	var out bytes.Buffer
	if err := run(context.Background(), []string{"publish", "--nats", url, "--tenant", "acme", "--session", "big", "--user", "bob", "--wait", "--wait-timeout", "20s", "-"}, &out); err != nil {
		t.Fatalf("publish -: %v (%s)", err, out.String())
	}
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
	reply, err := cl.Retrieve(context.Background(), events.RetrieveRequest{Query: "quick brown fox END", Session: "big", Sources: []string{events.SourceShort}, ContextTokens: &none})
	if err != nil {
		t.Fatal(err)
	}
	if len(reply.Entries) != 1 || reply.Entries[0].Content != text {
		t.Fatalf("session big holds %d entries; want the %d bytes read from standard input, without its newline", len(reply.Entries), len(text))
	}
	// An empty standard input is refused.
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(0); err != nil {
		t.Fatal(err)
	}
	if err := run(context.Background(), []string{"publish", "--nats", url, "--tenant", "acme", "--session", "big", "-"}, &out); err == nil || !strings.Contains(err.Error(), "standard input held no text") {
		t.Errorf("publish - with nothing on standard input: %v", err)
	}
}

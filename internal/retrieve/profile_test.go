package retrieve_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// A user's live facts are in every context of a retrieve with that user, even when the query
// shares no word with them: "what do you know about me?", "你了解我什么？" and a "hi!" opening a
// new session.
func TestProfileInEveryContext(t *testing.T) {
	e := start(t)
	ctx := context.Background()
	e.seed(t, "p1", "ann", []client.Turn{
		{Content: "I live in Paris and I work as a nurse."},
		{Role: "assistant", Content: "Noted."},
		{Content: "我养了一只猫叫小白"},
	})
	if _, err := e.cl.EndSession(ctx, "p1", "ann"); err != nil {
		t.Fatal(err)
	}
	// The extractor makes the facts at the session's end.
	brokertest.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
		r, err := e.cl.Retrieve(ctx, events.RetrieveRequest{Query: "Paris nurse 小白", User: "ann", Types: []string{"FACT"}})
		if err != nil {
			return err
		}
		if len(r.Entries) < 3 {
			return fmt.Errorf("%d facts so far", len(r.Entries))
		}
		return nil
	})
	for _, q := range []struct{ query, session string }{
		{"what do you know about me?", ""},
		{"你了解我什么？", ""},
		{"hi!", "p2"},
	} {
		req := events.RetrieveRequest{Query: q.query, User: "ann", Session: q.session}
		r, err := e.cl.Retrieve(ctx, req)
		if err != nil {
			t.Fatalf("%q: %v", q.query, err)
		}
		for _, want := range []string{"Paris", "小白"} {
			if !strings.Contains(r.Context, want) {
				t.Errorf("%q: the context leaves out the fact about %s:\n%s", q.query, want, r.Context)
			}
		}
		if len(r.Profile) < 3 {
			t.Errorf("%q: %d profile entries, want the 3 facts", q.query, len(r.Profile))
		}
		for _, p := range r.Profile {
			if p.Type != "FACT" || p.Source != "long" {
				t.Errorf("%q: profile entry %+v is not a long-term fact", q.query, p)
			}
		}
	}
	// Another user gets none of them; a request that asks for turns only gets no profile.
	r, err := e.cl.Retrieve(ctx, events.RetrieveRequest{Query: "what do you know about me?", User: "bob"})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(r.Context, "Paris") || len(r.Profile) > 0 {
		t.Fatalf("bob's context carries ann's facts: %q", r.Context)
	}
	r, err = e.cl.Retrieve(ctx, events.RetrieveRequest{Query: "what do you know about me?", User: "ann", Types: []string{"CONVERSATION"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Profile) > 0 {
		t.Fatalf("types CONVERSATION only, yet %d profile entries", len(r.Profile))
	}
	// The profile takes at most its share of a small budget.
	r, err = e.cl.Retrieve(ctx, events.RetrieveRequest{Query: "what do you know about me?", User: "ann", ContextTokens: intp(40)})
	if err != nil {
		t.Fatal(err)
	}
	if r.ContextTokens > 40 {
		t.Fatalf("context of %d tokens for a budget of 40", r.ContextTokens)
	}
}

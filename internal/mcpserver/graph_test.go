package mcpserver_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/mcpserver"
)

// list_entities shows the user's entities and relations once the session's extraction ran,
// at a time before them nothing, and refuses a bad time; another user's server sees none.
func TestListEntities(t *testing.T) {
	_, nc := startDaemon(t)
	cs := connect(t, newServer(t, nc, "acme", "alice", "s1"))
	callOK[mcpserver.RememberOutput](t, cs, "remember", map[string]any{"content": "My best friend Melanie, Mel for short, lives in Rome. I live in Paris."})
	callOK[mcpserver.EndSessionOutput](t, cs, "end_session", nil)
	var g mcpserver.GraphOutput
	brokertest.CheckFor(t, 30*time.Second, 50*time.Millisecond, func() error {
		g = callOK[mcpserver.GraphOutput](t, cs, "list_entities", nil)
		if len(g.Relations) < 2 {
			return fmt.Errorf("list_entities: %+v", g)
		}
		return nil
	})
	var rels []string
	for _, r := range g.Relations {
		rels = append(rels, r.Subject+" "+r.Relation+" "+r.Object)
	}
	slices.Sort(rels)
	if want := []string{"user friend Melanie", "user lives_in Paris"}; !slices.Equal(rels, want) {
		t.Errorf("relations %q, want %q", rels, want)
	}
	found := false
	for _, e := range g.Entities {
		if e.Name == "Melanie" {
			found = slices.Equal(e.Aliases, []string{"Mel"}) && e.Type == "person" && e.Turns == 1
		}
	}
	if !found || !g.Entities[0].User {
		t.Errorf("entities %+v: want the user first and Melanie, a person, also Mel", g.Entities)
	}
	early := callOK[mcpserver.GraphOutput](t, cs, "list_entities", map[string]any{"at": "2000-01-01T00:00:00Z"})
	if len(early.Entities)+len(early.Relations) != 0 {
		t.Errorf("in 2000: %+v", early)
	}
	if msg := callErr(t, cs, "list_entities", map[string]any{"at": "yesterday"}); !strings.Contains(msg, `at "yesterday"`) {
		t.Errorf("bad at: %q", msg)
	}
	bob := connect(t, newServer(t, nc, "acme", "bob", "s2"))
	if other := callOK[mcpserver.GraphOutput](t, bob, "list_entities", map[string]any{"history": true}); len(other.Entities) != 0 {
		t.Errorf("bob sees %+v", other)
	}
}

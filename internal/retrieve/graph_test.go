package retrieve_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/rank"
	"github.com/agentmem/agentmem/internal/retrieve"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// TestRecallThroughTheGraph: a question about the user's sister's husband names the sister by
// the relation ("my sister"), and her husband is her neighbour in the graph: the turn about
// him is found although it shares no word with the question, and the reply names the entities
// used. Without the graph it is not found. In English and in Chinese.
func TestRecallThroughTheGraph(t *testing.T) {
	for _, tc := range []struct {
		name, query string
		turns       []client.Turn
		want        string // the turn the graph finds
		named, near string
	}{
		{name: "english", query: "What does my sister's husband do for a living?",
			turns: []client.Turn{
				{Content: "My sister Anna just married Tom."},
				{Role: "assistant", Content: "Congratulations to them!"},
				{ID: "dinner", Content: "I had dinner with Tom yesterday, he flies planes for Lufthansa."},
				{Content: "I also need a recipe for lasagna."},
			},
			want: "dinner", named: "Anna", near: "Tom"},
		{name: "chinese", query: "我妹妹的丈夫做什么工作？",
			turns: []client.Turn{
				{Content: "我妹妹小美和小刚结婚了。"},
				{Role: "assistant", Content: "恭喜他们！"},
				{ID: "dinner", Content: "昨天小刚请我吃饭，他现在开飞机。"},
				{Content: "帮我找一个红烧肉的菜谱。"},
			},
			want: "dinner", named: "小美", near: "小刚"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, graphOn := range []bool{true, false} {
				cfg := retrieve.Config{}
				if !graphOn {
					cfg.Graph = rank.Off
				}
				e := startWith(t, cfg)
				ctx := context.Background()
				e.seed(t, "s1", "ann", slices.Clone(tc.turns))
				if _, err := e.cl.EndSession(ctx, "s1", "ann"); err != nil {
					t.Fatal(err)
				}
				// Wait for the extractor to store the graph (a fact of the session is not needed).
				var r events.RetrieveReply
				brokertest.CheckFor(t, 20*time.Second, 50*time.Millisecond, func() error {
					var err error
					if r, err = e.cl.Retrieve(ctx, events.RetrieveRequest{Query: tc.query, User: "ann"}); err != nil {
						return err
					}
					// Until every edge of the session is stored, the neighbour may be missing.
					if graphOn && !slices.ContainsFunc(r.Entities, func(en events.RetrievedEntity) bool { return en.Name == tc.near }) {
						return errors.New("the neighbour is not used yet")
					}
					return nil
				})
				var found *events.RetrievedEntry
				for i := range r.Entries {
					if r.Entries[i].ID == tc.want {
						found = &r.Entries[i]
					}
				}
				if !graphOn {
					if found != nil || len(r.Entities) != 0 {
						t.Errorf("without the graph: %q found (%+v), entities %+v", tc.want, found, r.Entities)
					}
					continue
				}
				if found == nil || found.Scores.Graph <= 0 || found.Scores.Keyword != 0 {
					t.Fatalf("with the graph, turn %q: %+v among %d entries", tc.want, found, len(r.Entries))
				}
				var names []string
				for _, en := range r.Entities {
					names = append(names, en.Name)
					if en.Name == tc.named && !en.Named || en.Name == tc.near && en.Named {
						t.Errorf("entity %+v: want %s named and %s its neighbour", en, tc.named, tc.near)
					}
				}
				if !slices.Contains(names, tc.named) || !slices.Contains(names, tc.near) {
					t.Errorf("entities %q, want %s and %s", names, tc.named, tc.near)
				}
			}
		})
	}
}

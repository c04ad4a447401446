package retrieve_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/rank"
	"github.com/agentmem/agentmem/internal/retrieve"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// startRank is start with the given ranking configuration.
func startRank(t *testing.T, rc rank.Config) *env {
	return startWith(t, retrieve.Config{Rank: rc})
}

// A dialogue as the query: the assistant's line ("assistant: ...") weighs less than the user's,
// so the user's guitar beats the piano the assistant names twice; with the retriever's ranking
// configured without the speaker weight (Config.Rank), the piano wins.
func TestDialogueQueryWeighsTheUsersLines(t *testing.T) {
	query := "I played my guitar today\nassistant: the piano? a piano is nice"
	for _, tc := range []struct {
		name string
		rc   rank.Config
		want string
	}{
		{"default", rank.Config{}, "s1-00"},
		{"speaker weight off", rank.Config{QuerySpeaker: rank.Off}, "s1-01"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := startRank(t, tc.rc)
			e.seed(t, "s1", "alice", []client.Turn{{Content: "my guitar"}, {Content: "my piano"}})
			for _, src := range []string{"short", "archive"} {
				reply, err := e.cl.Retrieve(context.Background(), events.RetrieveRequest{Query: query, Session: "s1", User: "alice", Sources: []string{src}})
				if err != nil {
					t.Fatal(err)
				}
				if len(reply.Entries) == 0 || reply.Entries[0].ID != tc.want {
					t.Errorf("%s: top %v, want %s", src, top(reply), tc.want)
				}
			}
		})
	}
}

func TestConfigRankValidated(t *testing.T) {
	cfg := retrieve.Config{Rank: rank.Config{QuerySpeaker: 2}}
	if _, err := retrieve.New(context.Background(), cfg, nil, nil, zerolog.Nop()); err == nil {
		t.Fatal("a QuerySpeaker of 2 was accepted")
	}
}

// recordingEmbedder embeds every text as the same vector and records the texts.
type recordingEmbedder struct {
	mu    sync.Mutex
	texts []string
}

func (r *recordingEmbedder) Name() string { return "test:recording" }

func (r *recordingEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	r.mu.Lock()
	r.texts = append(r.texts, texts...)
	r.mu.Unlock()
	out := make([][]float32, len(texts))
	for i := range out {
		out[i] = []float32{1, 0, 0}
	}
	return out, nil
}

// The embedder reads a dialogue query without its role markers: they are no part of what was said.
func TestEmbedderReadsTheQueryWithoutRoleMarkers(t *testing.T) {
	emb := &recordingEmbedder{}
	e := startWith(t, retrieve.Config{Embedder: emb})
	e.seed(t, "s1", "alice", []client.Turn{{Content: "my cat is called Snow"}})
	if _, err := e.cl.Retrieve(context.Background(), events.RetrieveRequest{Query: "I have a cat\nassistant: what is its name?", Session: "s1", User: "alice"}); err != nil {
		t.Fatal(err)
	}
	emb.mu.Lock()
	defer emb.mu.Unlock()
	if !slices.Contains(emb.texts, "I have a cat\nwhat is its name?") {
		t.Errorf("embedded %q, want the query without its marker", emb.texts)
	}
}

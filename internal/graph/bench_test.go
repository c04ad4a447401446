package graph_test

import (
	"fmt"
	"testing"

	"github.com/agentmem/agentmem/internal/fact"
	"github.com/agentmem/agentmem/internal/graph"
	"github.com/agentmem/agentmem/internal/longterm"
)

// BenchmarkRelated measures what the graph adds to a warm retrieve: finding the entities a
// query names, and their neighbours' turns, in a graph of 1,000 entities and 2,000 edges.
func BenchmarkRelated(b *testing.B) {
	var recs longterm.UserRecords
	recs.Entities = append(recs.Entities, longterm.Entity{ID: fact.UserEntityID("acme", "alice"), Tenant: "acme", User: "alice", Name: "user", FirstSeen: t0})
	for i := range 1000 {
		recs.Entities = append(recs.Entities, ent(fmt.Sprintf("Person%d Name%d", i, i), "person", t0, fmt.Sprintf("t%d", i), fmt.Sprintf("u%d", i)))
	}
	for i := range 2000 {
		rel := "friend"
		subj := "user"
		if i >= 1000 {
			subj, rel = fmt.Sprintf("Person%d Name%d", i%1000, i%1000), "colleague"
		}
		recs.Edges = append(recs.Edges, edge(subj, rel, fmt.Sprintf("Person%d Name%d", (i*7)%1000, (i*7)%1000), t0, nil, fmt.Sprintf("e%d", i)))
	}
	v := graph.Build(recs)
	for _, q := range []string{"What did Person42 Name42 say about the trip?", "What is the weather like in the mountains this week?"} {
		b.Run(fmt.Sprintf("names=%v", q[5] == 'd'), func(b *testing.B) {
			for b.Loop() {
				v.Related(q, t0)
			}
		})
	}
}

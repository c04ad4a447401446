package stages_test

import (
	"slices"
	"testing"

	"github.com/agentmem/agentmem/internal/stage"
	"github.com/agentmem/agentmem/internal/stages"
	"github.com/agentmem/agentmem/pkg/events"
)

// TestConsumerNames pins the names of every consumer (deployed consumers keep their state by
// name: a renamed consumer would go through its stream again) and which stage reads which.
func TestConsumerNames(t *testing.T) {
	topo := events.DefaultTopology()
	topo.Partitions = 2
	want := map[string][]string{
		"ingest": {"AGENTMEM_TURNS/AGENTMEM_ingest_p00", "AGENTMEM_SUMMARIES/AGENTMEM_ingest_summaries_p00",
			"AGENTMEM_TURNS/AGENTMEM_ingest_p01", "AGENTMEM_SUMMARIES/AGENTMEM_ingest_summaries_p01",
			"AGENTMEM_TURNS/AGENTMEM_ingest_malformed"},
		"retriever":  nil,
		"compressor": {"AGENTMEM_PRESSURE/AGENTMEM_compressor"},
		"extractor":  {"AGENTMEM_TURNS/AGENTMEM_extractor_ends", "AGENTMEM_SUMMARIES/AGENTMEM_extractor_summaries"},
		"embedder": {"AGENTMEM_TURNS/AGENTMEM_embedder_turns", "AGENTMEM_SUMMARIES/AGENTMEM_embedder_summaries",
			"AGENTMEM_FACTS/AGENTMEM_embedder_facts"},
	}
	all := stages.Defaults()
	var names []string
	for _, st := range all {
		names = append(names, st.Name)
		if err := st.Validate(); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, c := range st.ConsumersOn(topo) {
			if c.Config.Durable != c.Name() || c.Name() == "" {
				t.Fatalf("%s: consumer %+v has no durable name", st.Name, c)
			}
			got = append(got, c.Stream+"/"+c.Name())
		}
		if !slices.Equal(got, want[st.Name]) {
			t.Errorf("%s reads %v, want %v", st.Name, got, want[st.Name])
		}
	}
	if !slices.Equal(names, []string{"ingest", "retriever", "compressor", "extractor", "embedder"}) {
		t.Fatalf("stages %v", names)
	}
	for _, name := range names[:4] {
		if st, _ := stage.Find(all, name); st.Runs != nil {
			t.Errorf("%s does not always run", name)
		}
	}
}

// TestForgetWaitsOnTheEmbedder: forget waits on the embedding stage's consumers, and only them.
func TestForgetWaitsOnTheEmbedder(t *testing.T) {
	topo := events.DefaultTopology()
	var got []string
	for _, c := range stage.ForgetWaits(topo, stages.Defaults()...) {
		got = append(got, c.Stream+"/"+c.Name())
	}
	want := []string{"AGENTMEM_TURNS/AGENTMEM_embedder_turns", "AGENTMEM_SUMMARIES/AGENTMEM_embedder_summaries", "AGENTMEM_FACTS/AGENTMEM_embedder_facts"}
	if !slices.Equal(got, want) {
		t.Fatalf("forget waits on %v, want %v", got, want)
	}
}

// TestKeep: the lag filter of a stage picks its own consumers and no other.
func TestKeep(t *testing.T) {
	topo := events.DefaultTopology()
	ext, _ := stage.Find(stages.Defaults(), "extractor")
	keep := stage.Keep(topo, ext)
	for _, tc := range []struct {
		stream, consumer string
		want             bool
	}{
		{"AGENTMEM_TURNS", "AGENTMEM_extractor_ends", true},
		{"AGENTMEM_SUMMARIES", "AGENTMEM_extractor_summaries", true},
		{"AGENTMEM_SUMMARIES", "AGENTMEM_extractor_ends", false},
		{"AGENTMEM_TURNS", "AGENTMEM_embedder_turns", false},
	} {
		if got := keep(tc.stream, tc.consumer); got != tc.want {
			t.Errorf("keep(%s, %s) = %v", tc.stream, tc.consumer, got)
		}
	}
}

package usage_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/usage"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// TestForgetLeavesNoTrace: Forget removes the sessions' counters with their history, leaving no
// purge marker in the bucket's stream, and other sessions' counters alone.
func TestForgetLeavesNoTrace(t *testing.T) {
	env := brokertest.Start(t)
	topo := events.DefaultTopology()
	ctx := context.Background()
	if err := topo.Ensure(ctx, env.JS); err != nil {
		t.Fatal(err)
	}
	st, err := usage.Open(ctx, env.JS, topo)
	if err != nil {
		t.Fatal(err)
	}
	for _, sess := range []string{"s1", "s1", "s2", "s3"} {
		if err := st.Add(ctx, "acme", sess, memory.Usage{Calls: 1, InputTokens: 10}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Forget(ctx, "acme", []string{"s1", "s2", "never"}); err != nil {
		t.Fatal(err)
	}
	stream, err := env.JS.Stream(ctx, "KV_"+topo.UsageBucket())
	if err != nil {
		t.Fatal(err)
	}
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(">"))
	if err != nil {
		t.Fatal(err)
	}
	if len(info.State.Subjects) != 1 || info.State.Subjects["$KV."+topo.UsageBucket()+".acme.s3"] != 1 {
		t.Fatalf("the usage bucket's stream holds %v, want only acme.s3's counter", info.State.Subjects)
	}
	rep, err := st.Report(ctx, "acme")
	if err != nil {
		t.Fatal(err)
	}
	if rep.Total.Calls != 1 {
		t.Fatalf("report after Forget: %+v, want s3's one call", rep)
	}
}

package mcpserver_test

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/mcpserver"
	"github.com/agentmem/agentmem/internal/version"
	"github.com/agentmem/agentmem/pkg/events"
)

// A server configured without a version announces the commands' --version number.
func TestImplementationVersionIsTheBuilds(t *testing.T) {
	old := version.Version
	t.Cleanup(func() { version.Version = old })
	version.Version = "v1.2.3-test"
	env := brokertest.Start(t)
	js, err := jetstream.New(env.NC)
	if err != nil {
		t.Fatal(err)
	}
	s, err := mcpserver.New(mcpserver.Config{Tenant: "acme", User: "alice", Session: "s1"}, nil, env.NC, js, events.Topology{}, zerolog.Nop())
	if err != nil {
		t.Fatal(err)
	}
	info := connect(t, s).InitializeResult().ServerInfo
	if info.Name != mcpserver.DefaultName || info.Version != "v1.2.3-test" {
		t.Fatalf("server info %s %s, want %s v1.2.3-test", info.Name, info.Version, mcpserver.DefaultName)
	}
}

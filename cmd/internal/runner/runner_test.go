package runner_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/cmd/internal/runner"
	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/metrics/metricstest"
	"github.com/agentmem/agentmem/internal/stage"
	"github.com/agentmem/agentmem/internal/stages"
	"github.com/agentmem/agentmem/pkg/events"
)

// TestEveryStageRuns runs the command of every stage of the registry against a real server:
// each creates the consumers its stage declares (the embedder none without an embedder) and
// stops cleanly when its context ends.
func TestEveryStageRuns(t *testing.T) {
	topo := events.DefaultTopology()
	for _, st := range stages.Defaults() {
		if st.Command == nil {
			continue
		}
		t.Run(st.Name, func(t *testing.T) {
			env := brokertest.Start(t)
			addr := freePort(t)
			args := []string{"--nats", env.URL, "--log-level", "warn", "--health-listen", addr}
			if st.Command.Needs&stage.NeedsEmbedder != 0 {
				args = append(args, "--embed", "off")
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- runner.Run(ctx, st.Name, args) }()
			want := st.ConsumersOn(topo)
			if st.Name == "embedder" {
				want = nil // no embedder: nothing to consume
			}
			brokertest.CheckFor(t, 20*time.Second, 20*time.Millisecond, func() error {
				select {
				case err := <-done:
					t.Fatalf("%s stopped: %v", st.Name, err)
				default:
				}
				// The health endpoint is served once the stage is built.
				if _, err := metricstest.ScrapeErr("http://" + addr + "/metrics"); err != nil {
					return err
				}
				for _, c := range want {
					if _, err := env.JS.Consumer(ctx, c.Stream, c.Name()); err != nil {
						return fmt.Errorf("consumer %s on %s: %w", c.Name(), c.Stream, err)
					}
				}
				for _, svc := range st.Services {
					if _, err := env.NC.Request("$SRV.PING."+svc, nil, time.Second); err != nil {
						return fmt.Errorf("service %s: %w", svc, err)
					}
				}
				return nil
			})
			// The lag metrics are those of the stage's consumers.
			got := metricstest.Scrape(t, "http://"+addr+"/metrics")
			var series []string
			for _, m := range got["agentmem_consumer_pending_messages"].GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "consumer" {
						series = append(series, l.GetValue())
					}
				}
			}
			var names []string
			for _, c := range want {
				names = append(names, c.Name())
			}
			slices.Sort(series)
			slices.Sort(names)
			if !slices.Equal(series, names) {
				t.Fatalf("lag of consumers %v, want %v", series, names)
			}
			if st.Name == "embedder" {
				for _, c := range st.ConsumersOn(topo) {
					if _, err := env.JS.Consumer(ctx, c.Stream, c.Name()); !errors.Is(err, jetstream.ErrConsumerNotFound) {
						t.Fatalf("consumer %s without an embedder: %v", c.Name(), err)
					}
				}
			}
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("%s: %v", st.Name, err)
				}
			case <-time.After(20 * time.Second):
				t.Fatalf("%s did not stop", st.Name)
			}
		})
	}
}

// TestFlagsAreTheStagesOwn checks that a command binds only the flag groups its stage needs.
func TestFlagsAreTheStagesOwn(t *testing.T) {
	err := runner.Run(context.Background(), "compressor", []string{"--embed-model", "x"})
	if err == nil || !strings.Contains(err.Error(), "flag provided but not defined: -embed-model") {
		t.Fatalf("compressor --embed-model: %v", err)
	}
	if err := runner.Run(context.Background(), "nosuchstage", nil); err == nil {
		t.Fatal("a stage the registry does not have runs")
	}
}

func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

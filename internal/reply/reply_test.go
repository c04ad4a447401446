package reply_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/reply"
	"github.com/agentmem/agentmem/pkg/events"
)

// TestErrorAndInstances: an endpoint added as three instances serves requests at once, and an
// error answered with Error carries micro's headers (its description made header-safe)
// and the error body, and counts in the service's stats.
func TestErrorAndInstances(t *testing.T) {
	be := brokertest.Start(t)
	svc, err := micro.AddService(be.NC, micro.Config{Name: "reply-test", Version: "0.0.1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = svc.Stop() })
	release := make(chan struct{})
	entered := make(chan struct{}, 12)
	err = reply.AddEndpoint(svc, "echo", "test.echo", 3, micro.HandlerFunc(func(req micro.Request) {
		if string(req.Data()) == "wait" {
			entered <- struct{}{}
			<-release
		}
		if err := reply.Error(req, 400, "limit", "must be\nat most 200"); err != nil {
			t.Errorf("Error: %v", err)
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if err := be.NC.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := len(svc.Info().Endpoints); n != 3 {
		t.Fatalf("%d endpoint instances, want 3", n)
	}
	// The instances serve requests at once. The server hands each request to a random instance,
	// so of 12 waiting requests at least two reach different instances (all 12 reaching the
	// same one has a chance of 3^-11).
	nc := be.Connect(t)
	const waiting = 12
	answers := make(chan error, waiting)
	for range waiting {
		go func() {
			m, err := nc.Request("test.echo", []byte("wait"), 10*time.Second)
			if err == nil && m.Header.Get(micro.ErrorCodeHeader) != "400" {
				err = fmt.Errorf("code %q", m.Header.Get(micro.ErrorCodeHeader))
			}
			answers <- err
		}()
	}
	for i := range 2 {
		select {
		case <-entered:
		case <-time.After(10 * time.Second):
			t.Fatalf("%d of 12 requests in a handler at once, want 2", i)
		}
	}
	close(release)
	for range waiting {
		if err := <-answers; err != nil {
			t.Fatal(err)
		}
	}

	m, err := nc.Request("test.echo", nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Header.Get(micro.ErrorHeader); got != "limit: must be at most 200" {
		t.Fatalf("description %q", got)
	}
	var eb events.ErrorBody
	if err := json.Unmarshal(m.Data, &eb); err != nil || eb.Error != (events.ErrorDetail{Code: 400, Field: "limit", Message: "must be\nat most 200"}) {
		t.Fatalf("body %s (%v)", m.Data, err)
	}
	// micro counts a request once its handler returned, just after the answer went out.
	brokertest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		var reqs, errs int
		for _, e := range svc.Stats().Endpoints {
			reqs += e.NumRequests
			errs += e.NumErrors
			if e.NumErrors > 0 && !strings.Contains(e.LastError, "400") {
				return fmt.Errorf("last error %q", e.LastError)
			}
		}
		if reqs != waiting+1 || errs != waiting+1 {
			return fmt.Errorf("stats: %d requests, %d errors; want %d and %d", reqs, errs, waiting+1, waiting+1)
		}
		return nil
	})
}

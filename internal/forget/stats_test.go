package forget_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/extract"
	"github.com/agentmem/agentmem/pkg/events"
)

// TestForgetMicroStatsCountRequestsAndErrors: the forget endpoint answers inside its micro
// handler, so nats micro stats count each request, its processing time (a user's forget waits
// its grace period in the handler) and its errors.
func TestForgetMicroStatsCountRequestsAndErrors(t *testing.T) {
	e := start(t, 1, nil)
	nc := e.Broker.NC
	stats := func() (requests, errs int, took time.Duration) {
		subject, err := micro.ControlSubject(micro.StatsVerb, extract.ServiceName, "")
		if err != nil {
			t.Fatal(err)
		}
		m, err := nc.Request(subject, nil, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		var st micro.Stats
		if err := json.Unmarshal(m.Data, &st); err != nil {
			t.Fatal(err)
		}
		for _, ep := range st.Endpoints {
			if ep.Name == "forget" {
				requests += ep.NumRequests
				errs += ep.NumErrors
				took += ep.ProcessingTime
			}
		}
		return requests, errs, took
	}
	// The extractor registers its service when it runs: wait for it.
	answered := 0
	brokertest.CheckFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		_, err := nc.Request("memory.forget.acme", []byte(`{"user":"not a user"}`), time.Second)
		if errors.Is(err, nats.ErrNoResponders) {
			return err
		}
		answered++
		return nil
	})
	// micro counts a request once its handler returned, just after the answer went out.
	var req0, err0 int
	var took0 time.Duration
	brokertest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if req0, err0, took0 = stats(); req0 < answered {
			return fmt.Errorf("%d requests counted, want %d", req0, answered)
		}
		return nil
	})
	m, err := nc.Request("memory.forget.acme", []byte(`{"user":"not a user"}`), 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if code := m.Header.Get(micro.ErrorCodeHeader); code != "400" {
		t.Fatalf("invalid user: code %q, want 400", code)
	}
	body, _ := json.Marshal(events.ForgetRequest{User: "nobody"})
	m, err = nc.Request("memory.forget.acme", body, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if code := m.Header.Get(micro.ErrorCodeHeader); code != "" {
		t.Fatalf("forgetting an unknown user: code %q (%s)", code, m.Header.Get(micro.ErrorHeader))
	}
	var req1, err1 int
	var took1 time.Duration
	brokertest.CheckFor(t, 5*time.Second, 10*time.Millisecond, func() error {
		if req1, err1, took1 = stats(); req1-req0 < 2 {
			return fmt.Errorf("%d requests counted, want 2", req1-req0)
		}
		return nil
	})
	if req1-req0 != 2 || err1-err0 != 1 {
		t.Fatalf("stats counted %d requests and %d errors, want 2 and 1", req1-req0, err1-err0)
	}
	// A user's forget makes two passes 750ms apart, inside the handler.
	if took1-took0 < 700*time.Millisecond {
		t.Fatalf("processing time grew by %v, want the forget's duration (> 700ms)", took1-took0)
	}
}

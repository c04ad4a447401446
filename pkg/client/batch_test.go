package client_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/pkg/client"
)

// PublishAll stores a batch in order and reports each message's outcome: a message the stream
// refuses for good (too large) fails alone, the others are stored; one sent to a subject no
// stream takes fails once ctx ends, after being tried again on its own.
func TestPublishAllStoresInOrderAndReportsEachMessage(t *testing.T) {
	env := brokertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := env.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "B", Subjects: []string{"b.>"}, MaxMsgSize: 64}); err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(env.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	var msgs []*nats.Msg
	for i := range 200 {
		m := nats.NewMsg(fmt.Sprintf("b.s%d", i%7))
		m.Data = fmt.Appendf(nil, "%d", i)
		m.Header.Set(jetstream.MsgIDHeader, fmt.Sprint(i))
		msgs = append(msgs, m)
	}
	msgs[50].Data = []byte(strings.Repeat("x", 100)) // over MaxMsgSize: refused for good
	msgs[120].Subject = "nostream.x"                 // no stream answers
	msgs = append(msgs, msgs[10])                    // the same Nats-Msg-Id again: a duplicate
	short, cancelShort := context.WithTimeout(ctx, 6*time.Second)
	defer cancelShort()
	res := client.PublishAll(short, js, msgs, 2*time.Second) // generous: a loaded machine acknowledges slowly
	if len(res) != len(msgs) {
		t.Fatalf("%d results for %d messages", len(res), len(msgs))
	}
	var last uint64
	for i, r := range res {
		switch i {
		case 50:
			var apiErr *jetstream.APIError
			if !errors.As(r.Err, &apiErr) || apiErr.Code != 400 || r.Attempts != 1 {
				t.Fatalf("the oversized message: %+v (want a 400, sent once)", r)
			}
		case 120:
			if r.Err == nil || r.Attempts < 2 {
				t.Fatalf("the message no stream takes: %+v (want an error after several attempts)", r)
			}
		case len(msgs) - 1:
			if r.Err != nil || !r.Ack.Duplicate || r.Ack.Sequence != res[10].Ack.Sequence {
				t.Fatalf("the repeated message: %+v, want a duplicate of %+v", r, res[10].Ack)
			}
		default:
			if r.Err != nil || r.Ack.Duplicate || r.Ack.Sequence <= last {
				t.Fatalf("message %d: %+v after sequence %d", i, r, last)
			}
			last = r.Ack.Sequence
		}
	}
}

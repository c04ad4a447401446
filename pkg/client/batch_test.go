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

// PublishAtomic stores a batch as atomic batches: every message at the sequence it reports, in
// order and contiguous; a batch holding an id the stream stored before, or the same id twice, is
// published message by message instead (the stored ones come back as duplicates); a stream
// without atomic publish gets every message too. The caller's messages are left as they were.
func TestPublishAtomic(t *testing.T) {
	env := brokertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, sc := range []jetstream.StreamConfig{
		{Name: "A", Subjects: []string{"a.>"}, AllowAtomicPublish: true},
		{Name: "P", Subjects: []string{"p.>"}},
	} {
		if _, err := env.JS.CreateStream(ctx, sc); err != nil {
			t.Fatal(err)
		}
	}
	js, err := jetstream.New(env.Connect(t))
	if err != nil {
		t.Fatal(err)
	}
	batch := func(prefix string, from, n int) []*nats.Msg {
		var msgs []*nats.Msg
		for i := from; i < from+n; i++ {
			m := nats.NewMsg(fmt.Sprintf("%s.s%d", prefix, i%7))
			m.Data = fmt.Appendf(nil, "%d", i)
			m.Header.Set(jetstream.MsgIDHeader, fmt.Sprint(i))
			msgs = append(msgs, m)
		}
		return msgs
	}
	check := func(name, stream string, msgs []*nats.Msg, res []client.Published, dups map[int]bool) {
		t.Helper()
		if len(res) != len(msgs) {
			t.Fatalf("%s: %d results for %d messages", name, len(res), len(msgs))
		}
		s, err := js.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		for i, r := range res {
			if r.Err != nil || r.Ack == nil {
				t.Fatalf("%s: message %d: %+v", name, i, r)
			}
			if r.Ack.Duplicate != dups[i] {
				t.Fatalf("%s: message %d: duplicate %v, want %v", name, i, r.Ack.Duplicate, dups[i])
			}
			got, err := s.GetMsg(ctx, r.Ack.Sequence)
			if err != nil {
				t.Fatalf("%s: message %d at sequence %d: %v", name, i, r.Ack.Sequence, err)
			}
			if got.Header.Get(jetstream.MsgIDHeader) != msgs[i].Header.Get(jetstream.MsgIDHeader) || string(got.Data) != string(msgs[i].Data) {
				t.Fatalf("%s: sequence %d holds %q, not message %d", name, r.Ack.Sequence, got.Data, i)
			}
			if len(msgs[i].Header) != 1 {
				t.Fatalf("%s: message %d's headers were changed: %v", name, i, msgs[i].Header)
			}
		}
	}

	first := batch("a", 0, 150)
	res := client.PublishAtomic(ctx, js, first, 5*time.Second)
	check("atomic", "A", first, res, nil)
	for i := 1; i < len(res); i++ {
		if res[i].Ack.Sequence != res[i-1].Ack.Sequence+1 || res[i].Attempts != 1 {
			t.Fatalf("message %d: %+v after %+v: want the next sequence, sent once", i, res[i], res[i-1])
		}
	}

	// A retried batch with new messages: the batch is refused whole, then sent one by one.
	retry := append(batch("a", 140, 20), batch("a", 0, 1)...)
	res = client.PublishAtomic(ctx, js, retry, 5*time.Second)
	dups := map[int]bool{20: true}
	for i := range 10 {
		dups[i] = true
	}
	check("retried", "A", retry, res, dups)

	// The same id twice in one batch.
	twice := batch("a", 500, 5)
	twice = append(twice, twice[2])
	check("twice", "A", twice, client.PublishAtomic(ctx, js, twice, 5*time.Second), map[int]bool{5: true})

	// A stream without atomic publish.
	plain := batch("p", 0, 30)
	check("plain", "P", plain, client.PublishAtomic(ctx, js, plain, 5*time.Second), nil)

	// More than one atomic batch.
	big := batch("a", 1000, client.MaxAtomicBatch+7)
	check("big", "A", big, client.PublishAtomic(ctx, js, big, 10*time.Second), nil)
}

// PublishBatch sends its turns as one atomic batch (one disk sync on a server that syncs every
// write): stored in order, contiguous, each carrying the batch's id; sent again, every turn comes
// back as a duplicate (the stream refuses the batch whole, then takes the turns one by one).
func TestPublishBatchIsOneAtomicBatch(t *testing.T) {
	env := brokertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := env.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "TURNS", Subjects: []string{"memory.turns.>"},
		AllowAtomicPublish: true, Duplicates: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	mem, err := client.New(env.Connect(t), client.Options{Tenant: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	turns := make([]client.Turn, 12)
	for i := range turns {
		turns[i] = client.Turn{ID: fmt.Sprintf("t%d", i), Session: fmt.Sprintf("s%d", i%3), User: fmt.Sprintf("u%d", i%3),
			Role: "user", Content: fmt.Sprintf("turn %d", i)}
	}
	acks, err := mem.PublishBatch(ctx, turns)
	if err != nil {
		t.Fatal(err)
	}
	batch := ""
	for i, a := range acks {
		if a.Duplicate || (i > 0 && a.Sequence != acks[i-1].Sequence+1) {
			t.Fatalf("ack %d: %+v after %+v: want the next sequence", i, a, acks[max(i-1, 0)])
		}
		m, err := s.GetMsg(ctx, a.Sequence)
		if err != nil {
			t.Fatal(err)
		}
		id := m.Header.Get("Nats-Batch-Id")
		if id == "" || (batch != "" && id != batch) {
			t.Fatalf("turn %d stored with batch id %q (the first's %q): not one atomic batch", i, id, batch)
		}
		batch = id
	}
	again, err := mem.PublishBatch(ctx, turns)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range again {
		if !a.Duplicate || a.Sequence != acks[i].Sequence {
			t.Fatalf("resent turn %d: %+v, want a duplicate of %+v", i, a, acks[i])
		}
	}
}

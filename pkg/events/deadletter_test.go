package events

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func TestNewDeadLetterPlainMessage(t *testing.T) {
	h := nats.Header{"ce-id": {"a"}, "X": {"1", "2"}}
	msg := &nats.Msg{Subject: "3.memory.turns.acme.s1", Header: h, Data: []byte("0123456789")}
	before := time.Now().UTC()
	d := NewDeadLetter(msg, 4, "ce-time: not RFC 3339")
	if d.Subject != "memory.turns.acme.s1" || d.StoredSubject != "3.memory.turns.acme.s1" {
		t.Errorf("subjects = %q, %q", d.Subject, d.StoredSubject)
	}
	if string(d.Body) != "0123" || d.BodySize != 10 || !d.Truncated {
		t.Errorf("body = %q, size %d, truncated %v", d.Body, d.BodySize, d.Truncated)
	}
	if d.Reason != "ce-time: not RFC 3339" || d.Time.Before(before) || d.Time.Location() != time.UTC {
		t.Errorf("reason %q, time %v", d.Reason, d.Time)
	}
	if d.Stream != "" || d.Consumer != "" || d.StreamSeq != 0 || d.Delivered != 0 {
		t.Errorf("JetStream fields set for a plain message: %+v", d)
	}
	// The record owns its copies.
	h["X"][0] = "changed"
	msg.Data[0] = 'X'
	if d.Headers["X"][0] != "1" || d.Body[0] != '0' {
		t.Errorf("record aliases the message: %v %q", d.Headers, d.Body)
	}

	d = NewDeadLetter(&nats.Msg{Subject: "memory.turns.bad", Data: []byte("ab")}, 10, "r")
	if d.Subject != "memory.turns.bad" || d.StoredSubject != "" || string(d.Body) != "ab" || d.Truncated || d.BodySize != 2 {
		t.Errorf("unparsable subject record = %+v", d)
	}
	d = NewDeadLetter(&nats.Msg{Subject: "memory.turns.a.b", Data: []byte("ab")}, -1, "r")
	if len(d.Body) != 0 || !d.Truncated || d.StoredSubject != "" {
		t.Errorf("negative maxBody record = %+v", d)
	}
	d = NewDeadLetter(nil, 10, "nothing")
	if d.Reason != "nothing" || d.Time.IsZero() {
		t.Errorf("nil message record = %+v", d)
	}
	b, err := json.Marshal(NewDeadLetter(msg, 100, "r"))
	if err != nil {
		t.Fatal(err)
	}
	assertKeys(t, json.RawMessage(b), "subject", "stored_subject", "headers", "body", "body_size", "truncated", "delivered", "reason", "time")
}

func TestDeadLetterMarshalWithin(t *testing.T) {
	body := []byte(strings.Repeat("x", 10000))
	d := NewDeadLetter(&nats.Msg{Subject: "memory.turns.a.b", Header: nats.Header{"k": {"v"}}, Data: body}, len(body), "too big")
	if d.Truncated {
		t.Fatal("truncated before MarshalWithin")
	}
	for _, limit := range []int{20000, 2000, 500, 301} {
		b, err := d.MarshalWithin(limit)
		if err != nil {
			t.Fatalf("limit %d: %v", limit, err)
		}
		if len(b) > limit {
			t.Fatalf("limit %d: %d bytes", limit, len(b))
		}
		var back DeadLetter
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if back.BodySize != 10000 || back.Truncated != (len(back.Body) < 10000) || !strings.HasPrefix(string(body), string(back.Body)) {
			t.Errorf("limit %d: body %d bytes, size %d, truncated %v", limit, len(back.Body), back.BodySize, back.Truncated)
		}
		if limit < 20000 && len(b) < limit-8 {
			t.Errorf("limit %d: only %d bytes used, body cut too far", limit, len(b))
		}
	}
	if _, err := d.MarshalWithin(50); err == nil {
		t.Error("MarshalWithin(50) succeeded")
	}
}

// runJetStream starts an in-process JetStream server and connects to it.
func runJetStream(t *testing.T) *nats.Conn {
	t.Helper()
	opts := &server.Options{Host: "127.0.0.1", Port: -1, JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true}
	s, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	go s.Start()
	if !s.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	nc, err := nats.Connect(s.ClientURL())
	if err != nil {
		s.Shutdown()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		nc.Close()
		s.Shutdown()
		s.WaitForShutdown()
	})
	return nc
}

func TestNewDeadLetterJetStream(t *testing.T) {
	nc := runJetStream(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name:     "DLTEST_TURNS",
		Subjects: []string{"memory.turns.>"},
		SubjectTransform: &jetstream.SubjectTransformConfig{
			Source:      "memory.turns.*.*",
			Destination: "{{partition(4,1,2)}}.memory.turns.{{wildcard(1)}}.{{wildcard(2)}}",
		},
		Storage: jetstream.MemoryStorage,
	})
	if err != nil {
		t.Fatal(err)
	}
	ev := mustEvent(t, "turn-1", TypeTurn, "agent", fixedTime, Turn{Role: "user", Content: "hi", User: "u1"})
	msg, err := BinaryMsg("memory.turns.acme.s1", ev)
	if err != nil {
		t.Fatal(err)
	}
	msg.Header.Set(HeaderMsgID, MsgID("acme", "s1", ev.ID()))
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		t.Fatal(err)
	}

	cons, err := stream.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "dl", AckPolicy: jetstream.AckExplicitPolicy})
	if err != nil {
		t.Fatal(err)
	}
	t.Run("jetstream package", func(t *testing.T) {
		for want := uint64(1); want <= 2; want++ {
			batch, err := cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			var got jetstream.Msg
			for m := range batch.Messages() {
				got = m
			}
			if got == nil {
				t.Fatalf("no message: %v", batch.Error())
			}
			d := NewJetStreamDeadLetter(got, 1<<10, "bad")
			if d.Stream != "DLTEST_TURNS" || d.Consumer != "dl" || d.StreamSeq != 1 || d.Delivered != want {
				t.Errorf("delivery %d: record = %+v", want, d)
			}
			if d.Subject != "memory.turns.acme.s1" || !strings.HasSuffix(d.StoredSubject, ".memory.turns.acme.s1") {
				t.Errorf("subjects = %q, %q", d.Subject, d.StoredSubject)
			}
			if d.Headers[HeaderMsgID][0] != "acme.s1.turn-1" || string(d.Body) != string(msg.Data) {
				t.Errorf("headers %v, body %q", d.Headers, d.Body)
			}
			if err := got.Nak(); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("nats package", func(t *testing.T) {
		jsc, err := nc.JetStream()
		if err != nil {
			t.Fatal(err)
		}
		sub, err := jsc.PullSubscribe("", "dl", nats.Bind("DLTEST_TURNS", "dl"))
		if err != nil {
			t.Fatal(err)
		}
		msgs, err := sub.Fetch(1, nats.MaxWait(5*time.Second))
		if err != nil || len(msgs) != 1 {
			t.Fatalf("fetch: %d, %v", len(msgs), err)
		}
		d := NewDeadLetter(msgs[0], 1<<10, "bad")
		if d.Stream != "DLTEST_TURNS" || d.Consumer != "dl" || d.StreamSeq != 1 || d.Delivered != 3 {
			t.Errorf("record = %+v", d)
		}
		if d.Subject != "memory.turns.acme.s1" || d.StoredSubject == "" {
			t.Errorf("subjects = %q, %q", d.Subject, d.StoredSubject)
		}
		// Decoding the stored message still works: the codec ignores the
		// JetStream headers.
		if _, err := Decode(msgs[0]); err != nil {
			t.Errorf("Decode stored message: %v", err)
		}
		_ = msgs[0].Term()
	})
}

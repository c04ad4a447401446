package archive_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/internal/broker/brokertest"
)

// Scan reads a subject's messages in order across several batches, within [from, to], with
// empty bodies (a KV delete marker) included; Next finds the first at or after a sequence. All
// of it over one subscription of the connection, however many scans and readers.
func TestScanAndNext(t *testing.T) {
	env := brokertest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := env.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "A", Subjects: []string{"a.>"}, AllowDirect: true}); err != nil {
		t.Fatal(err)
	}
	for i := range 700 {
		data := fmt.Appendf(nil, "%d", i)
		if i == 600 {
			data = nil
		}
		if _, err := env.JS.Publish(ctx, fmt.Sprintf("a.%d", i%2), data); err != nil {
			t.Fatal(err)
		}
	}
	nc := env.Connect(t)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	var subs int
	scan := func(subject string, from, to uint64) []uint64 {
		var seqs []uint64
		err := archive.NewReader(js, "A").Scan(ctx, subject, from, to, func(m *jetstream.RawStreamMsg) error {
			seqs = append(seqs, m.Sequence)
			if m.Subject != fmt.Sprintf("a.%d", (m.Sequence-1)%2) {
				t.Fatalf("message %d on %s", m.Sequence, m.Subject)
			}
			if want := fmt.Sprint(m.Sequence - 1); m.Sequence != 601 && string(m.Data) != want {
				t.Fatalf("message %d holds %q, want %q", m.Sequence, m.Data, want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return seqs
	}
	if got := scan("a.>", 0, 0); len(got) != 700 || got[0] != 1 || got[699] != 700 {
		t.Fatalf("scan of everything: %d messages", len(got))
	}
	subs = nc.NumSubscriptions() // the shared answers subscription
	if got := scan("a.0", 0, 0); len(got) != 350 || got[1] != 3 {
		t.Fatalf("scan of a.0: %d messages, second %d", len(got), got[1])
	}
	if got := scan("a.1", 100, 110); fmt.Sprint(got) != "[100 102 104 106 108 110]" {
		t.Fatalf("scan of a.1 in [100, 110]: %v", got)
	}
	if got := scan("a.9", 0, 0); len(got) != 0 {
		t.Fatalf("scan of an empty subject: %v", got)
	}
	if n := nc.NumSubscriptions(); n != subs {
		t.Fatalf("%d subscriptions after the scans, %d after the first: want them shared", n, subs)
	}
	r := archive.NewReader(js, "A")
	m, err := r.Next(ctx, "a.1", 301)
	if err != nil || m == nil || m.Sequence != 302 {
		t.Fatalf("next a.1 from 301: %v, %v", m, err)
	}
	if m, err := r.Next(ctx, "a.1", 701); err != nil || m != nil {
		t.Fatalf("next after the end: %v, %v", m, err)
	}
}

package retrieve_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/broker/brokertest"
	"github.com/agentmem/agentmem/internal/rank"
	"github.com/agentmem/agentmem/internal/retrieve"
	"github.com/agentmem/agentmem/pkg/client"
	"github.com/agentmem/agentmem/pkg/events"
)

// BenchmarkWarmUserGraph measures what the graph costs a warm retrieve: a user with 2,000
// archived turns in 40 ended sessions that name people, places and their relations (so the
// user's graph holds entities and edges), asked a question that names an entity by a relation.
// Two retrievers on the same agentmem, one with the graph (the default) and one without
// (rank.Off), are warmed and then asked in alternation, one request at a time; each reports its
// p50 and p99 in µs, and p99-ratio is with ÷ without. The plain- figures are the same for a
// question that names no entity.
func BenchmarkWarmUserGraph(b *testing.B) {
	ctx := context.Background()
	nc, js := startAgentmem(b, retrieve.Config{})
	cl, err := client.New(nc, client.Options{Tenant: "acme"})
	if err != nil {
		b.Fatal(err)
	}
	people := []string{"Anna", "Tom", "Caroline", "Melanie", "David", "Sarah", "Lukas", "Mia"}
	places := []string{"Paris", "Berlin", "Lisbon", "Tokyo", "Madrid", "Oslo", "Vienna", "Rome"}
	relations := []string{"sister", "brother", "friend", "colleague", "cousin", "neighbour", "boss", "aunt"}
	const sessions, perSession = 40, 50
	for s := range sessions {
		sess := fmt.Sprintf("g%02d", s)
		turns := make([]client.Turn, 0, perSession)
		for i := range perSession {
			p, q, pl := people[(s+i)%len(people)], people[(s+i+3)%len(people)], places[(s*3+i)%len(places)]
			var text string
			switch i % 5 {
			case 0:
				text = fmt.Sprintf("My %s %s just moved to %s.", relations[(s+i)%len(relations)], p, pl)
			case 1:
				text = fmt.Sprintf("%s married %s last spring.", p, q)
			case 2:
				text = fmt.Sprintf("I had dinner with %s in %s, we talked about the postgres deploy.", q, pl)
			case 3:
				text = fmt.Sprintf("Turn %d of session %d: the budget for the trip and a rollback plan.", i, s)
			default:
				text = fmt.Sprintf("%s works at a bakery in %s and plays the piano.", q, pl)
			}
			turns = append(turns, client.Turn{Session: sess, User: "bench", Role: "user", Content: text,
				ID: fmt.Sprintf("%s-%03d", sess, i), Time: time.Date(2026, 10, 1+s%28, 9, i, 0, 0, time.UTC)})
		}
		if _, err := cl.PublishBatch(ctx, turns); err != nil {
			b.Fatal(err)
		}
		if _, err := cl.EndSession(ctx, sess, "bench"); err != nil {
			b.Fatal(err)
		}
	}
	req := events.RetrieveRequest{Query: "What does my sister's husband do for a living?", User: "bench", Sources: []string{"archive", "long"}}
	with, err := retrieve.New(ctx, retrieve.Config{}, nc, js, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	without, err := retrieve.New(ctx, retrieve.Config{Graph: rank.Off}, nc, js, zerolog.Nop())
	if err != nil {
		b.Fatal(err)
	}
	// Every session is archived and extracted, and the graph names the query's entities.
	brokertest.CheckFor(b, 300*time.Second, 200*time.Millisecond, func() error {
		r, rerr := with.Retrieve(ctx, "acme", req)
		if rerr != nil {
			return rerr
		}
		if len(r.Entities) == 0 {
			return errors.New("no entities used yet")
		}
		// Every worker is done (ingest, the archive, the extractor): no consumer has work left.
		for st := range js.ListStreams(ctx).Info() {
			stream, serr := js.Stream(ctx, st.Config.Name)
			if serr != nil {
				return serr
			}
			for info := range stream.ListConsumers(ctx).Info() {
				if info.NumPending+uint64(info.NumAckPending) > 0 {
					return fmt.Errorf("%s busy", info.Name)
				}
			}
		}
		return nil
	})
	// The same, for a question that names no entity: what most requests pay.
	plain := events.RetrieveRequest{Query: "what was the budget for the trip?", User: "bench", Sources: []string{"archive", "long"}}
	var on, off, plainOn, plainOff []time.Duration
	b.ResetTimer()
	for range b.N {
		for _, q := range []struct {
			svc *retrieve.Service
			req events.RetrieveRequest
			out *[]time.Duration
		}{{with, req, &on}, {without, req, &off}, {with, plain, &plainOn}, {without, plain, &plainOff}} {
			start := time.Now()
			if _, rerr := q.svc.Retrieve(ctx, "acme", q.req); rerr != nil {
				b.Fatal(rerr)
			}
			*q.out = append(*q.out, time.Since(start))
		}
	}
	b.StopTimer()
	q := func(d []time.Duration, p int) float64 {
		slices.Sort(d)
		return float64(d[(len(d)-1)*p/100].Microseconds())
	}
	b.ReportMetric(q(on, 50), "graph-p50-µs")
	b.ReportMetric(q(on, 99), "graph-p99-µs")
	b.ReportMetric(q(off, 50), "nograph-p50-µs")
	b.ReportMetric(q(off, 99), "nograph-p99-µs")
	b.ReportMetric(q(on, 99)/q(off, 99), "p99-ratio")
	b.ReportMetric(q(plainOn, 50), "plain-graph-p50-µs")
	b.ReportMetric(q(plainOff, 50), "plain-nograph-p50-µs")
	b.ReportMetric(q(plainOn, 99)/q(plainOff, 99), "plain-p99-ratio")
}

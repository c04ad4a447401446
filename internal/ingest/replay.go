package ingest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// Compressor is what a replay needs of the compressor (satisfied by *compress.Worker).
type Compressor interface {
	Compress(ctx context.Context, tenant string, p events.Pressure) (longterm.Summary, bool, error)
}

// Extractor is what a replay needs of the extractor (satisfied by *extract.Worker).
type Extractor interface {
	Extract(ctx context.Context, k session.Key, upTo uint64) error
}

// Replayer rebuilds a tenant's memory from the turns stream, synchronously and in stream order:
// every message goes through the same decisions as live ingest; a pressure event is compressed
// at once and its summary applied; a session end and a summary trigger the same extraction as
// live. Replaying into an empty set of buckets (a separate topology prefix whose TurnsSource is
// the live archive, or an empty system) gives the memory the live run built: the same entries,
// the same facts and, offline, the same summaries.
type Replayer struct {
	w    *Worker
	comp Compressor
	ext  Extractor
	// indexed remembers the sessions whose user index entry the replay wrote.
	indexed *partition
}

// NewReplayer replays with an ingest worker built with NoConsumers for the target topology.
func NewReplayer(w *Worker, comp Compressor, ext Extractor) *Replayer {
	return &Replayer{w: w, comp: comp, ext: ext, indexed: newPartition(-1, 1<<16)}
}

// ReplayStats says what a replay did.
type ReplayStats struct {
	Messages  uint64 `json:"messages"`
	Sessions  int    `json:"sessions"`
	Applied   uint64 `json:"applied"`
	Rejected  uint64 `json:"rejected"`
	Summaries int    `json:"summaries"`
	Took      string `json:"took"`
}

// Replay replays the tenant's messages from stream sequence from (1 when 0) that were stored at
// or after since (when not zero). progress, when not nil, is called as messages are read.
func (r *Replayer) Replay(ctx context.Context, tenant string, from uint64, since time.Time, progress func(done, total uint64)) (ReplayStats, error) {
	start := time.Now()
	var stats ReplayStats
	if err := events.ValidateToken("tenant", tenant); err != nil {
		return stats, err
	}
	subject := "*.memory.turns." + tenant + ".*"
	total, err := r.count(ctx, subject)
	if err != nil {
		return stats, err
	}
	states := map[session.Key]*session.State{}
	before := r.w.Stats()
	var done uint64
	err = r.w.reader.Scan(ctx, subject, from, 0, func(m *jetstream.RawStreamMsg) error {
		done++
		if progress != nil {
			progress(done, total)
		}
		if !since.IsZero() && m.Time.Before(since) {
			return nil
		}
		addr, err := events.ParseTurnSubject(m.Subject)
		if err != nil {
			return nil // live ingest dead-lettered it
		}
		k := session.Key{Tenant: addr.Tenant, Session: addr.Session}
		st := states[k]
		if st == nil {
			if st, err = r.w.store.Load(ctx, k, r.w.cfg.Budget.Conversation()); err != nil {
				return err
			}
			states[k] = st
		}
		if m.Sequence <= st.Header.LastSeq {
			return nil
		}
		st.PlaceIn(addr.Partition)
		stats.Messages++
		fx := &effects{}
		r.w.decide(st, message{subject: m.Subject, header: m.Header, data: m.Data, seq: m.Sequence, stored: m.Time, addr: addr}, fx)
		ended := fx.ends > 0 // a session end was applied (binary or structured mode)
		if len(fx.msgs) == 0 && !ended && st.Uncommitted() < 256 {
			return nil
		}
		if err := r.commit(ctx, st); err != nil {
			return err
		}
		for _, msg := range fx.msgs {
			n, err := r.compress(ctx, st, msg)
			if err != nil {
				return err
			}
			stats.Summaries += n
		}
		if ended {
			if err := r.ext.Extract(ctx, k, m.Sequence); err != nil {
				return fmt.Errorf("extracting %s: %w", k, err)
			}
		}
		return nil
	})
	if err != nil {
		return stats, err
	}
	for _, st := range states {
		if err := r.commit(ctx, st); err != nil {
			return stats, err
		}
	}
	after := r.w.Stats()
	stats.Sessions = len(states)
	stats.Applied = after.Applied - before.Applied
	stats.Rejected = after.Rejected - before.Rejected
	stats.Took = time.Since(start).Round(time.Millisecond).String()
	return stats, nil
}

func (r *Replayer) count(ctx context.Context, subject string) (uint64, error) {
	s, err := r.w.js.Stream(ctx, r.w.cfg.Topology.TurnsStream())
	if err != nil {
		return 0, fmt.Errorf("binding %q: %w", r.w.cfg.Topology.TurnsStream(), err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return 0, err
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n, nil
}

// commit writes the session like live ingest does (Worker.commit), the user's session index
// included.
func (r *Replayer) commit(ctx context.Context, st *session.State) error {
	if st.Uncommitted() == 0 && st.Revision() != 0 {
		// Header-only changes (a duplicate's watermark) are written with the next operation.
		return nil
	}
	if err := r.w.commit(ctx, r.indexed, st); err != nil {
		return fmt.Errorf("committing %s: %w", st.Key, err)
	}
	return nil
}

// compress handles one pressure event of the replay: summarise, apply, extract.
func (r *Replayer) compress(ctx context.Context, st *session.State, msg *nats.Msg) (int, error) {
	ev, err := events.Decode(msg)
	if err != nil {
		return 0, err
	}
	p, err := events.DecodeData[events.Pressure](ev)
	if err != nil {
		return 0, err
	}
	sum, stored, err := r.comp.Compress(ctx, st.Key.Tenant, p)
	if err != nil {
		return 0, fmt.Errorf("compressing %s (pressure %d): %w", st.Key, p.Number, err)
	}
	if !stored {
		return 0, errors.New("replay: session forgotten during the replay")
	}
	if fillPlaceholder(st, sum.ID, sum.Content, sum.Timestamp, sum.Provenance, sum.Summarizer, p.Number, sum.Usage) {
		if err := r.commit(ctx, st); err != nil {
			return 0, err
		}
	}
	if err := r.ext.Extract(ctx, st.Key, p.LastSeq); err != nil {
		return 0, fmt.Errorf("extracting %s: %w", st.Key, err)
	}
	return 1, nil
}

// summaryEntry is the SUMMARY entry a summary becomes in short-term memory.
func summaryEntry(id, content string, ts time.Time, provenance []string, summarizer string, pressure int, u events.Usage) memory.Entry {
	return memory.Entry{
		ID: id, Type: memory.Summary, Content: content, Timestamp: ts.UTC(), Provenance: provenance,
		Metadata: map[string]any{
			"status": "summarized", "summarizer": summarizer, "pressure": pressure,
			"usage": map[string]any{"calls": u.Calls, "input_tokens": u.InputTokens, "output_tokens": u.OutputTokens},
		},
	}
}

// ReplayTopology is the topology of a replay set named into: its own buckets, the live archive.
func ReplayTopology(live events.Topology, into string) events.Topology {
	t := live
	t.Prefix = strings.TrimSpace(into)
	t.TurnsSource = live.TurnsStream()
	return t
}

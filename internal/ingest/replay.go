package ingest

import (
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/agentmem/agentmem/internal/archive"
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

// EditApplier makes a recorded edit of a user's facts again (satisfied by *extract.Worker): a
// replay whose Extractor is one applies the edits (events.Edit) in the turns stream where they
// were made; with another it leaves them out.
type EditApplier interface {
	ApplyEdit(ctx context.Context, tenant string, e events.Edit) error
}

// User names a user of a tenant: ReplaySessions applies the user's edits.
type User struct{ Tenant, User string }

// SummaryPublisher publishes the event of a summary made for a pressure event (satisfied by
// *compress.Worker).
type SummaryPublisher interface {
	Publish(ctx context.Context, tenant string, p events.Pressure, s longterm.Summary) error
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
	// events, when not nil, publishes the summary events; with it the replay publishes the
	// pressure events and dead letters too (WithEvents).
	events SummaryPublisher
}

// WithEvents makes r publish what the live pipeline publishes besides what it stores: the
// pressure events and dead letters of ingest's decisions and, through pub, the summary events of
// the compressions (the extractor publishes fact events when built with extract.Config.Events).
// Ingest's announcements of applied session ends are left out: they trigger extractions, which
// the replay makes itself. Their ids are deterministic, so an event the live run had stored is
// stored once. memoryd's rebuild after an unclean stop (package recovery) replays so; the
// consumers of those events start after them.
func (r *Replayer) WithEvents(pub SummaryPublisher) *Replayer {
	r.events = pub
	return r
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
	// Edits counts the records of edits of users' facts read (EditApplier).
	Edits int    `json:"edits,omitempty"`
	Took  string `json:"took"`
}

// Replay replays the tenant's messages from stream sequence from (1 when 0) that were stored at
// or after since (when not zero), with the edits of its users' facts (EditApplier) in stream
// order among them. progress, when not nil, is called as turns are read.
func (r *Replayer) Replay(ctx context.Context, tenant string, from uint64, since time.Time, progress func(done, total uint64)) (ReplayStats, error) {
	start := time.Now()
	if err := events.ValidateToken("tenant", tenant); err != nil {
		return ReplayStats{}, err
	}
	subject := "*.memory.turns." + tenant + ".*"
	total, err := r.count(ctx, subject)
	if err != nil {
		return ReplayStats{}, err
	}
	run := r.newRun()
	subjects := []string{subject}
	if _, ok := r.ext.(EditApplier); ok {
		subjects = append(subjects, "memory."+events.KindEdits+"."+tenant+".*")
	}
	var done uint64
	err = r.merge(ctx, subjects, max(from, 1), 0, func(m *jetstream.RawStreamMsg) error {
		if !strings.HasPrefix(m.Subject, "memory.") {
			done++
			if progress != nil {
				progress(done, total)
			}
		}
		if !since.IsZero() && m.Time.Before(since) {
			return nil
		}
		return run.apply(ctx, m)
	})
	if err != nil {
		return run.stats, err
	}
	return run.finish(ctx, start)
}

// ReplaySessions replays the messages of the sessions keys (each wholly, from its first
// message) and the edits of users' facts (EditApplier) up to stream sequence to (0: the end of
// the stream), in stream order across them, into the target buckets, as Replay does. A session's
// state and a user's facts must be absent from them (or tombstones) for the replay to rebuild
// them: package recovery wipes what it rebuilds first.
func (r *Replayer) ReplaySessions(ctx context.Context, keys []session.Key, users []User, to uint64) (ReplayStats, error) {
	start := time.Now()
	run := r.newRun()
	subjects := make([]string, 0, len(keys)+len(users))
	for _, k := range keys {
		subjects = append(subjects, events.SessionFilter(k.Tenant, k.Session))
	}
	if _, ok := r.ext.(EditApplier); ok {
		for _, u := range users {
			if s, err := events.EditSubject(u.Tenant, u.User); err == nil {
				subjects = append(subjects, s)
			}
		}
	}
	if err := r.merge(ctx, subjects, 1, to, func(m *jetstream.RawStreamMsg) error { return run.apply(ctx, m) }); err != nil {
		return run.stats, err
	}
	return run.finish(ctx, start)
}

// merge calls fn with the messages of the turns stream on subjects from sequence from up to to
// (0: the end of the stream), in stream order across the subjects.
func (r *Replayer) merge(ctx context.Context, subjects []string, from, to uint64, fn func(m *jetstream.RawStreamMsg) error) error {
	// A heap of the subjects' cursors, the one whose next message comes first in the stream on
	// top.
	var h cursors
	for _, s := range subjects {
		c := &cursor{subject: s, next: from, more: true}
		if err := c.fill(ctx, r.w.reader); err != nil {
			return err
		}
		if len(c.buf) > 0 {
			h = append(h, c)
		}
	}
	heap.Init(&h)
	for h.Len() > 0 {
		c := h[0]
		m := c.buf[0]
		if to != 0 && m.Sequence > to {
			break
		}
		c.buf = c.buf[1:]
		if err := c.fill(ctx, r.w.reader); err != nil {
			return err
		}
		if len(c.buf) == 0 {
			heap.Pop(&h)
		} else {
			heap.Fix(&h, 0)
		}
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}

// cursors is a heap of cursors by the sequence of their next message.
type cursors []*cursor

func (h cursors) Len() int           { return len(h) }
func (h cursors) Less(i, j int) bool { return h[i].buf[0].Sequence < h[j].buf[0].Sequence }
func (h cursors) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *cursors) Push(x any)        { *h = append(*h, x.(*cursor)) }
func (h *cursors) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// cursor reads one subject of the turns stream a batch at a time.
type cursor struct {
	subject string
	next    uint64
	buf     []*jetstream.RawStreamMsg
	more    bool
}

// fill reads the next batch when the buffer is empty and the stream may hold more.
func (c *cursor) fill(ctx context.Context, rd *archive.Reader) error {
	if len(c.buf) > 0 || !c.more {
		return nil
	}
	msgs, more, err := rd.Batch(ctx, c.subject, c.next)
	if err != nil {
		return err
	}
	c.buf, c.more = msgs, more
	if len(msgs) > 0 {
		c.next = msgs[len(msgs)-1].Sequence + 1
	}
	return nil
}

// replayRun is one replay: the sessions it loaded and what it did.
type replayRun struct {
	r      *Replayer
	states map[session.Key]*session.State
	before Stats
	stats  ReplayStats
}

func (r *Replayer) newRun() *replayRun {
	return &replayRun{r: r, states: map[session.Key]*session.State{}, before: r.w.Stats()}
}

// apply decides one message of the turns stream, as live ingest does, and commits, compresses and
// extracts as its effects ask.
func (run *replayRun) apply(ctx context.Context, m *jetstream.RawStreamMsg) error {
	r := run.r
	if strings.HasPrefix(m.Subject, "memory."+events.KindEdits+".") {
		return run.edit(ctx, m)
	}
	addr, err := events.ParseTurnSubject(m.Subject)
	if err != nil {
		return nil // live ingest dead-lettered it
	}
	k := session.Key{Tenant: addr.Tenant, Session: addr.Session}
	st := run.states[k]
	if st == nil {
		if st, err = r.w.store.Load(ctx, k, r.w.cfg.Budget.Conversation()); err != nil {
			return err
		}
		run.states[k] = st
	}
	if m.Sequence <= st.Header.LastSeq {
		return nil
	}
	st.PlaceIn(addr.Partition)
	run.stats.Messages++
	fx := &effects{}
	r.w.decide(st, message{subject: m.Subject, header: m.Header, data: m.Data, seq: m.Sequence, stored: m.Time, addr: addr}, fx)
	ended := fx.ends > 0 // a session end was applied (binary or structured mode)
	if r.events != nil {
		// Live ingest publishes a batch's pressure events and dead letters before it commits.
		fx.ended = nil
		if err := r.w.publish(ctx, fx); err != nil {
			return err
		}
	}
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
		run.stats.Summaries += n
	}
	if ended {
		if err := r.ext.Extract(ctx, k, m.Sequence); err != nil {
			return fmt.Errorf("extracting %s: %w", k, err)
		}
	}
	return nil
}

// edit applies the record of an edit of a user's facts (events.Edit) as the forget service made
// it. An edit of a fact the replay does not have (an LLM's extraction differs from the live
// one's) or that it has as corrected already changes nothing.
func (run *replayRun) edit(ctx context.Context, m *jetstream.RawStreamMsg) error {
	ea, ok := run.r.ext.(EditApplier)
	if !ok {
		return nil
	}
	addr, err := events.ParseEventSubject(m.Subject)
	if err != nil {
		return nil
	}
	var e events.Edit
	if err := json.Unmarshal(m.Data, &e); err != nil || e.Validate() != nil || e.User != addr.Key {
		return nil // the forget service writes only valid edits
	}
	run.stats.Edits++
	err = ea.ApplyEdit(ctx, addr.Tenant, e)
	if errors.Is(err, longterm.ErrNotFound) || errors.Is(err, events.ErrInvalid) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("applying edit %d of %s/%s: %w", m.Sequence, addr.Tenant, e.User, err)
	}
	return nil
}

// finish commits what the run left uncommitted and completes its statistics.
func (run *replayRun) finish(ctx context.Context, start time.Time) (ReplayStats, error) {
	for _, st := range run.states {
		if err := run.r.commit(ctx, st); err != nil {
			return run.stats, err
		}
	}
	after := run.r.w.Stats()
	run.stats.Sessions = len(run.states)
	run.stats.Applied = after.Applied - run.before.Applied
	run.stats.Rejected = after.Rejected - run.before.Rejected
	run.stats.Took = time.Since(start).Round(time.Millisecond).String()
	return run.stats, nil
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
	if r.events != nil {
		if err := r.events.Publish(ctx, st.Key.Tenant, p, sum); err != nil {
			return 0, err
		}
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

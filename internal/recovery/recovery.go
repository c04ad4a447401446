// Package recovery keeps memoryd's derived memory consistent with the turns stream when it is
// persisted lazily (events.Topology.Lazy): the turns stream, the record, is synced before each
// acknowledgement, while the streams and buckets derived from it (session state, pressure,
// summary and fact events, long-term memory, usage, vectors, dead letters) and the positions of
// the consumers of the turns stream are written without a sync.
//
// Three things make that safe:
//
//   - Checkpoints. Every Config.Interval (Run), and at a clean stop (Stop), a checkpoint reads
//     how far every consumer of the turns stream got (its position) and the sequence Seq up to
//     which every consumer whose work a rebuild redoes (stage.Consumer.Rebuilt) has applied the
//     stream, notes the sessions with work still in flight downstream (pressure events not yet
//     compressed, summaries not yet applied or extracted, sessions waiting for a summary), waits
//     Config.Settle for nats-server to hand what it acknowledged to the operating system, syncs
//     every file and directory of the data directory that changed since the last checkpoint
//     (package datadir), and then stores itself in the synced recovery bucket. From then on
//     everything derived from messages up to Seq, and everything else the sessions and users
//     it does not name have, is on disk.
//   - The clean-stop mark. memoryd marks its data directory when it stops cleanly, with
//     everything synced (broker.ShutdownClean), and takes the mark away when it starts (package
//     datadir), so a start knows whether the last run ended uncleanly: a crash, a kill -9, a
//     power cut.
//   - The rebuild. After an unclean stop, Prepare rewinds what may have been written after the
//     last checkpoint and replays it from the turns stream before any stage runs: the sessions
//     with a message after Seq, those the checkpoint named, and the sessions of each of their
//     users and of each user with an edit of their facts after Seq (events.Edit) make the set;
//     each session's short-term state and each user's facts and session index are removed
//     (summaries stay: a replay finds them by their derived ids and asks no model again) and the
//     sessions, with their users' edits, are replayed in stream order up to the end of the stream
//     (ingest.Replayer.ReplaySessions; invariant 6 makes the replay the memory a live run builds).
//     The consumers whose work the rebuild did start after it; the others (the embedder's)
//     start from their checkpointed positions, on the derived streams too (Checkpoint.Derived).
//     A new checkpoint then records the rebuilt state.
//
// The consumers of the turns stream keep their state in memory (their positions are the
// checkpoints'), so that acknowledging a turn syncs nothing but the turn: Prepare creates them at
// their positions before the stages bind them.
package recovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/internal/datadir"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/stage"
	"github.com/agentmem/agentmem/pkg/events"
)

// Defaults of a Config.
const (
	// DefaultInterval is how often Run takes a checkpoint: what an unclean stop makes memoryd
	// rebuild is what was written since the last one, a few seconds of traffic.
	DefaultInterval = 5 * time.Second
	// DefaultSettle is how long a checkpoint waits before its sync: nats-server writes what it
	// acknowledged in the asynchronous persist mode to the operating system within milliseconds
	// (its flusher gathers writes for at most 8 ms), and a checkpoint must sync those writes.
	DefaultSettle = time.Second
)

// Keys of the recovery bucket.
const (
	// checkpointKey holds the last checkpoint.
	checkpointKey = "checkpoint"
	// stopKey holds the positions of the last clean stop, valid only when the directory was
	// marked as stopped cleanly after it (everything synced then).
	stopKey = "stop"
)

// Config configures recovery.
type Config struct {
	// Topology names the streams, buckets and consumers; Topology.Lazy must be set.
	Topology events.Topology
	// DataDir is the embedded server's data directory (memoryd's --data), which checkpoints sync.
	DataDir string
	// Consumers are the consumers of the stages that run. Those on the turns stream keep their
	// state in memory: Prepare creates them, at their positions.
	Consumers []stage.Consumer
	// Interval is the time between checkpoints (DefaultInterval).
	Interval time.Duration
	// Settle is how long a checkpoint waits before it syncs (DefaultSettle).
	Settle time.Duration
	// Awaiting, when not nil, lists the sessions that wait for a summary whose pressure event no
	// compressor holds any more (ingest's, which asks again after --repressure-after): a
	// checkpoint counts them as work in flight.
	Awaiting func() []session.Key
}

func (c Config) withDefaults() Config {
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.Settle < 0 {
		c.Settle = 0
	} else if c.Settle == 0 {
		c.Settle = DefaultSettle
	}
	return c
}

// Validate reports the first field of c that cannot work.
func (c Config) Validate() error {
	switch {
	case !c.Topology.Lazy:
		return errors.New("recovery: the topology does not persist lazily (Topology.Lazy)")
	case c.DataDir == "":
		return errors.New("recovery: the data directory is required")
	}
	return c.Topology.Validate()
}

// Checkpoint is what a checkpoint recorded.
type Checkpoint struct {
	// Seq is the turns stream's sequence up to which every consumer whose work a rebuild redoes
	// had applied every message, with everything that caused on disk.
	Seq uint64 `json:"seq"`
	// Positions are the consumers of the turns stream and the sequence up to which each had
	// acknowledged everything it reads.
	Positions map[string]uint64 `json:"positions"`
	// Sessions are the sessions ("<tenant>.<session>") with work in flight downstream of the
	// turns stream.
	Sessions []string `json:"sessions,omitempty"`
	// Derived are the consumers of the derived streams whose work a rebuild does not redo (the
	// embedder's), keyed "<stream>/<consumer>", and the sequence up to which each had
	// acknowledged everything it reads: after an unclean stop they deliver again from there.
	Derived map[string]uint64 `json:"derived,omitempty"`
	// Time is when the checkpoint began.
	Time time.Time `json:"time"`
}

// Recovery takes checkpoints and rebuilds after an unclean stop.
type Recovery struct {
	cfg    Config
	js     jetstream.JetStream
	kv     jetstream.KeyValue
	syncer *datadir.Syncer
	log    zerolog.Logger
	mu     sync.Mutex // one checkpoint at a time
}

// New binds the recovery bucket, which must exist (Topology.Ensure creates it with Lazy). It
// fails when cfg is not valid or the bucket cannot be bound.
func New(ctx context.Context, cfg Config, js jetstream.JetStream, log zerolog.Logger) (*Recovery, error) {
	cfg = cfg.withDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	kv, err := events.BindBucket(ctx, js, cfg.Topology.RecoveryBucket())
	if err != nil {
		return nil, err
	}
	return &Recovery{cfg: cfg, js: js, kv: kv, syncer: datadir.NewSyncer(cfg.DataDir),
		log: log.With().Str("component", "recovery").Logger()}, nil
}

// Last reads the last checkpoint; false when there is none (no checkpoint was ever taken on this
// data directory).
func (r *Recovery) Last(ctx context.Context) (Checkpoint, bool, error) {
	return r.read(ctx, checkpointKey)
}

func (r *Recovery) read(ctx context.Context, key string) (Checkpoint, bool, error) {
	e, err := r.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Checkpoint{}, false, nil
	}
	if err != nil {
		return Checkpoint{}, false, fmt.Errorf("recovery: reading %q: %w", key, err)
	}
	var cp Checkpoint
	if err := json.Unmarshal(e.Value(), &cp); err != nil {
		return Checkpoint{}, false, fmt.Errorf("recovery: %q does not decode: %w", key, err)
	}
	return cp, true, nil
}

// Rebuilder replays chosen sessions into the live buckets (an ingest.Replayer built for the live
// topology: daemon.NewReplayer).
type Rebuilder interface {
	ReplaySessions(ctx context.Context, keys []session.Key, users []ingest.User, to uint64) (ingest.ReplayStats, error)
}

// Report says what Prepare did.
type Report struct {
	// Clean: the last run stopped cleanly, nothing was rebuilt.
	Clean bool `json:"clean"`
	// First: no checkpoint existed (a new data directory, or one from before lazy persistence).
	First bool `json:"first,omitempty"`
	// From and To are the turns stream's sequences of the checkpoint rebuilt from and of the
	// stream's end the rebuild replayed up to.
	From uint64 `json:"from,omitempty"`
	To   uint64 `json:"to,omitempty"`
	// Sessions and Users count what was rebuilt.
	Sessions int                `json:"sessions,omitempty"`
	Users    int                `json:"users,omitempty"`
	Replay   ingest.ReplayStats `json:"replay"`
	Took     time.Duration      `json:"took"`
}

// Prepare readies the consumers and, after an unclean stop, rebuilds: call it once the topology
// exists and before any stage is built. clean says whether the last run stopped cleanly
// (broker.StartedClean). It creates the consumers of the turns stream (in memory) at their
// positions and, when it rebuilt or found no checkpoint, takes one.
func (r *Recovery) Prepare(ctx context.Context, clean bool, rb Rebuilder) (Report, error) {
	start := time.Now()
	cp, ok, err := r.Last(ctx)
	if err != nil {
		return Report{}, err
	}
	stop, stopped, err := r.read(ctx, stopKey)
	if err != nil {
		return Report{}, err
	}
	var rep Report
	var positions map[string]uint64
	settle := time.Duration(0)
	switch {
	case clean && stopped:
		rep.Clean = true
		positions = stop.Positions
	case !ok:
		// The first start with lazy persistence: whatever exists was synced as it was written.
		rep.First = true
		if positions, err = r.adopt(ctx); err != nil {
			return rep, err
		}
	default:
		if positions, err = r.rebuild(ctx, cp, rb, &rep); err != nil {
			return rep, err
		}
		settle = r.cfg.Settle
	}
	if err := r.createTurnsConsumers(ctx, positions); err != nil {
		return rep, err
	}
	if !rep.Clean {
		if _, err := r.checkpoint(ctx, settle); err != nil {
			return rep, err
		}
	}
	rep.Took = time.Since(start)
	return rep, nil
}

// turnsConsumers are the configured consumers on the turns stream.
func (r *Recovery) turnsConsumers() []stage.Consumer {
	var out []stage.Consumer
	for _, c := range r.cfg.Consumers {
		if c.Stream == r.cfg.Topology.TurnsStream() {
			out = append(out, c)
		}
	}
	return out
}

// adopt reads the positions of the consumers of the turns stream as they are (consumers kept
// on disk, by a build without lazy persistence) and removes them, to be created again in memory.
func (r *Recovery) adopt(ctx context.Context) (map[string]uint64, error) {
	last, err := lastSeq(ctx, r.js, r.cfg.Topology.TurnsStream())
	if err != nil {
		return nil, err
	}
	positions := map[string]uint64{}
	for _, c := range r.turnsConsumers() {
		f, found, err := floor(ctx, r.js, c.Stream, c.Name(), last)
		if err != nil {
			return nil, err
		}
		if found {
			positions[c.Name()] = f
		}
	}
	return positions, nil
}

// createTurnsConsumers creates the consumers of the turns stream in memory, each delivering from
// the message after its position (from the first without one), replacing one that exists.
func (r *Recovery) createTurnsConsumers(ctx context.Context, positions map[string]uint64) error {
	for _, c := range r.turnsConsumers() {
		if err := create(ctx, r.js, c, positions[c.Name()], true); err != nil {
			return err
		}
	}
	return nil
}

// create creates consumer c (removing one of its name first) delivering from the message after
// pos (from the first when pos is 0), its state in memory when inMemory.
func create(ctx context.Context, js jetstream.JetStream, c stage.Consumer, pos uint64, inMemory bool) error {
	if err := js.DeleteConsumer(ctx, c.Stream, c.Name()); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return fmt.Errorf("recovery: removing consumer %q to create it again: %w", c.Name(), err)
	}
	cc := c.Config
	cc.MemoryStorage = inMemory
	if pos > 0 {
		cc.DeliverPolicy, cc.OptStartSeq = jetstream.DeliverByStartSequencePolicy, pos+1
	}
	if _, err := js.CreateConsumer(ctx, c.Stream, cc); err != nil {
		return fmt.Errorf("recovery: creating consumer %q on %q: %w", c.Name(), c.Stream, err)
	}
	return nil
}

// Run takes a checkpoint every Config.Interval until ctx ends. A checkpoint that fails is logged
// and tried again at the next interval (the last one stored stays valid: a rebuild only grows).
func (r *Recovery) Run(ctx context.Context) error {
	t := time.NewTicker(r.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if _, err := r.Checkpoint(ctx); err != nil && ctx.Err() == nil {
			r.log.Warn().Err(err).Msg("checkpoint failed; trying again at the next one")
		}
	}
}

// Stop records the positions of the consumers of the turns stream for a clean stop: call it once
// every stage has drained, before the server shuts down (broker.ShutdownClean, which syncs
// everything and then marks the directory as stopped cleanly). The next start takes them only
// when it finds that mark.
func (r *Recovery) Stop(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	cp, err := r.positions(ctx)
	if err != nil {
		return err
	}
	return r.store(ctx, stopKey, cp)
}

// Sync makes every write acknowledged before it was called durable, without a checkpoint: it
// waits Config.Settle and syncs what changed under the data directory (stage.Shared.Sync: a
// user's forget calls it before it answers).
func (r *Recovery) Sync(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cfg.Settle > 0 {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(r.cfg.Settle):
		}
	}
	if err := r.syncer.Sync(); err != nil {
		return fmt.Errorf("recovery: %w", err)
	}
	return nil
}

// Checkpoint takes a checkpoint now (Run takes its own with it) and returns it.
func (r *Recovery) Checkpoint(ctx context.Context) (Checkpoint, error) {
	return r.checkpoint(ctx, r.cfg.Settle)
}

// checkpoint takes a checkpoint that waits settle before its sync.
func (r *Recovery) checkpoint(ctx context.Context, settle time.Duration) (Checkpoint, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cp, err := r.positions(ctx)
	if err != nil {
		return cp, err
	}
	if cp.Sessions, err = r.inFlight(ctx); err != nil {
		return cp, err
	}
	if settle > 0 {
		select {
		case <-ctx.Done():
			return cp, ctx.Err()
		case <-time.After(settle):
		}
	}
	began := time.Now()
	if err := r.syncer.Sync(); err != nil {
		return cp, fmt.Errorf("recovery: %w", err)
	}
	if err := r.store(ctx, checkpointKey, cp); err != nil {
		return cp, err
	}
	r.log.Debug().Uint64("seq", cp.Seq).Int("in_flight", len(cp.Sessions)).Int("synced", r.syncer.Synced).
		Int("unchanged", r.syncer.Skipped).Dur("sync", time.Since(began)).Msg("checkpoint")
	return cp, nil
}

// positions reads the positions of the consumers of the turns stream and the sequence up to which
// the rebuilt ones applied it.
func (r *Recovery) positions(ctx context.Context) (Checkpoint, error) {
	cp := Checkpoint{Time: time.Now().UTC(), Positions: map[string]uint64{}}
	turns := r.cfg.Topology.TurnsStream()
	last, err := lastSeq(ctx, r.js, turns)
	if err != nil {
		return cp, err
	}
	cp.Seq = last
	for _, c := range r.turnsConsumers() {
		f, found, err := floor(ctx, r.js, turns, c.Name(), last)
		if err != nil {
			return cp, err
		}
		if !found {
			// A consumer being created again (Prepare): it starts after its position, so
			// nothing up to it waits for it.
			continue
		}
		cp.Positions[c.Name()] = f
		if c.Rebuilt {
			cp.Seq = min(cp.Seq, f)
		}
	}
	for _, c := range r.derivedConsumers() {
		last, err := lastSeq(ctx, r.js, c.Stream)
		if err != nil {
			return cp, err
		}
		f, found, err := floor(ctx, r.js, c.Stream, c.Name(), last)
		if err != nil {
			return cp, err
		}
		if found {
			if cp.Derived == nil {
				cp.Derived = map[string]uint64{}
			}
			cp.Derived[derivedKey(c)] = f
		}
	}
	return cp, nil
}

// derivedConsumers are the configured consumers of the streams derived from the turns stream
// whose work a rebuild does not redo (the embedder's: it stores what a message asks for unless
// it is stored already, so a message delivered again costs a lookup).
func (r *Recovery) derivedConsumers() []stage.Consumer {
	var out []stage.Consumer
	for _, c := range r.cfg.Consumers {
		if !c.Rebuilt && c.Stream != r.cfg.Topology.TurnsStream() {
			out = append(out, c)
		}
	}
	return out
}

func derivedKey(c stage.Consumer) string { return c.Stream + "/" + c.Name() }

// store writes cp under key of the (synced) recovery bucket.
func (r *Recovery) store(ctx context.Context, key string, cp Checkpoint) error {
	data, err := json.Marshal(cp)
	if err != nil {
		return err
	}
	if _, err := r.kv.Put(ctx, key, data); err != nil {
		return fmt.Errorf("recovery: storing %q: %w", key, err)
	}
	return nil
}

// inFlight lists the sessions with work in flight downstream of the turns stream: a message
// of a stream some rebuilt consumer has not acknowledged (a pressure event, a summary), and
// the sessions Config.Awaiting names.
func (r *Recovery) inFlight(ctx context.Context) ([]string, error) {
	set := map[string]bool{}
	lows := map[string]uint64{}
	lasts := map[string]uint64{}
	for _, c := range r.cfg.Consumers {
		if !c.Rebuilt || c.Stream == r.cfg.Topology.TurnsStream() {
			continue
		}
		last, ok := lasts[c.Stream]
		if !ok {
			var err error
			if last, err = lastSeq(ctx, r.js, c.Stream); err != nil {
				return nil, err
			}
			lasts[c.Stream] = last
		}
		f, found, err := floor(ctx, r.js, c.Stream, c.Name(), last)
		if err != nil {
			return nil, err
		}
		if !found {
			f = 0
		}
		if low, ok := lows[c.Stream]; !ok || f < low {
			lows[c.Stream] = f
		}
	}
	for stream, low := range lows {
		if low >= lasts[stream] {
			continue
		}
		err := archive.NewReader(r.js, stream).Scan(ctx, ">", low+1, lasts[stream], func(m *jetstream.RawStreamMsg) error {
			if a, err := events.ParseEventSubject(m.Subject); err == nil && a.Kind != events.KindFacts {
				set[a.Tenant+"."+a.Key] = true
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("recovery: reading the work in flight in %q: %w", stream, err)
		}
	}
	if r.cfg.Awaiting != nil {
		for _, k := range r.cfg.Awaiting() {
			set[k.String()] = true
		}
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}

// rebuild rewinds and replays what may have been written after checkpoint cp, and positions
// the consumers of streams other than the turns stream whose work it did; it returns the
// positions of the consumers of the turns stream.
func (r *Recovery) rebuild(ctx context.Context, cp Checkpoint, rb Rebuilder, rep *Report) (map[string]uint64, error) {
	topo := r.cfg.Topology
	end, err := lastSeq(ctx, r.js, topo.TurnsStream())
	if err != nil {
		return nil, err
	}
	rep.From, rep.To = cp.Seq, end
	sessions, users, err := r.dirty(ctx, cp, end)
	if err != nil {
		return nil, err
	}
	rep.Sessions, rep.Users = len(sessions), len(users)
	r.log.Warn().Uint64("checkpoint_seq", cp.Seq).Time("checkpoint", cp.Time).Uint64("end_seq", end).
		Int("sessions", len(sessions)).Int("users", len(users)).
		Msg("the last run did not stop cleanly: rebuilding what it wrote after its last checkpoint from the turns stream")
	st, err := session.NewStore(ctx, r.js, topo)
	if err != nil {
		return nil, err
	}
	long, err := longterm.Open(ctx, r.js, topo)
	if err != nil {
		return nil, err
	}
	// The users' stored views (package retrieve) are read only while the sessions' headers
	// match them; the reset headers would not, and a header lost with the cut and written again
	// might: they all go (the next cold load of each user stores its view again).
	if _, err := archive.PurgeKV(ctx, r.js, topo.ViewBucket(), ">"); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("recovery: %w", err)
	}
	for _, k := range sessions {
		if _, err := st.Reset(ctx, k); err != nil {
			return nil, fmt.Errorf("recovery: %w", err)
		}
	}
	for _, u := range users {
		if _, err := long.Reset(ctx, u.tenant, u.user); err != nil {
			return nil, fmt.Errorf("recovery: %w", err)
		}
	}
	edits := make([]ingest.User, len(users))
	for i, u := range users {
		edits[i] = ingest.User{Tenant: u.tenant, User: u.user}
	}
	if rep.Replay, err = rb.ReplaySessions(ctx, sessions, edits, end); err != nil {
		return nil, fmt.Errorf("recovery: replaying %d sessions: %w", len(sessions), err)
	}
	// The consumers of the derived streams whose work the rebuild does not redo deliver again
	// from their checkpointed positions: what they stored after it may be lost while the
	// messages that asked for it, and their positions, survived.
	for _, c := range r.derivedConsumers() {
		pos, ok := cp.Derived[derivedKey(c)]
		if !ok {
			continue
		}
		last, err := lastSeq(ctx, r.js, c.Stream)
		if err != nil {
			return nil, err
		}
		if f, found, err := floor(ctx, r.js, c.Stream, c.Name(), last); err != nil {
			return nil, err
		} else if found {
			pos = min(pos, f)
		}
		if err := create(ctx, r.js, c, pos, false); err != nil {
			return nil, err
		}
	}
	// The consumers of the other streams whose work the rebuild did start after what those
	// streams hold: what they had in flight belongs to rebuilt sessions.
	for _, c := range r.cfg.Consumers {
		if !c.Rebuilt || c.Stream == topo.TurnsStream() {
			continue
		}
		last, err := lastSeq(ctx, r.js, c.Stream)
		if err != nil {
			return nil, err
		}
		if err := create(ctx, r.js, c, last, false); err != nil {
			return nil, err
		}
	}
	positions := map[string]uint64{}
	for _, c := range r.turnsConsumers() {
		if c.Rebuilt {
			positions[c.Name()] = end
		} else {
			positions[c.Name()] = min(cp.Positions[c.Name()], end)
		}
	}
	r.log.Warn().Int("sessions", len(sessions)).Int("users", len(users)).Uint64("messages", rep.Replay.Messages).
		Int("summaries", rep.Replay.Summaries).Str("took", rep.Replay.Took).Msg("rebuilt")
	return positions, nil
}

type userKey struct{ tenant, user string }

// dirty lists the sessions to rebuild after checkpoint cp, with the turns stream at end: those
// with a message after cp.Seq, those cp names, and every session of their users (the long-term
// index's, whose owner the header or the first turn naming a user says) and of the users with
// an edit of their facts after cp.Seq (events.Edit); and those users.
func (r *Recovery) dirty(ctx context.Context, cp Checkpoint, end uint64) ([]session.Key, []userKey, error) {
	topo := r.cfg.Topology
	set := map[session.Key]bool{}
	users := map[userKey]bool{}
	for _, s := range cp.Sessions {
		if tenant, sess, ok := strings.Cut(s, "."); ok {
			set[session.Key{Tenant: tenant, Session: sess}] = true
		}
	}
	if end > cp.Seq {
		err := archive.NewReader(r.js, topo.TurnsStream()).Scan(ctx, ">", cp.Seq+1, end, func(m *jetstream.RawStreamMsg) error {
			a, err := events.ParseEventSubject(m.Subject)
			switch {
			case err != nil:
			case a.Kind == events.KindTurns || a.Kind == events.KindEnded:
				set[session.Key{Tenant: a.Tenant, Session: a.Key}] = true
			case a.Kind == events.KindEdits:
				users[userKey{a.Tenant, a.Key}] = true
			}
			return nil
		})
		if err != nil {
			return nil, nil, fmt.Errorf("recovery: reading the turns after the checkpoint: %w", err)
		}
	}
	st, err := session.NewStore(ctx, r.js, topo)
	if err != nil {
		return nil, nil, err
	}
	long, err := longterm.Open(ctx, r.js, topo)
	if err != nil {
		return nil, nil, err
	}
	reader := archive.NewReader(r.js, topo.TurnsStream())
	for k := range set {
		u, err := owner(ctx, st, reader, k)
		if err != nil {
			return nil, nil, err
		}
		if u != "" {
			users[userKey{k.Tenant, u}] = true
		}
	}
	for u := range users {
		recs, err := long.User(ctx, u.tenant, u.user)
		if err != nil {
			return nil, nil, fmt.Errorf("recovery: reading the sessions of %s/%s: %w", u.tenant, u.user, err)
		}
		for _, ref := range recs.Sessions {
			k := session.Key{Tenant: u.tenant, Session: ref.Session}
			if set[k] {
				continue
			}
			if o, err := owner(ctx, st, reader, k); err != nil {
				return nil, nil, err
			} else if o == u.user || o == "" {
				set[k] = true
			}
		}
	}
	keys := make([]session.Key, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b session.Key) int { return strings.Compare(a.String(), b.String()) })
	out := make([]userKey, 0, len(users))
	for u := range users {
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b userKey) int { return strings.Compare(a.tenant+"."+a.user, b.tenant+"."+b.user) })
	return keys, out, nil
}

// errFound stops a scan.
var errFound = errors.New("recovery: found")

// owner is the user a session belongs to: its header's, else the first turn of the session that
// names a user (a session's first turn must); "" for a session no turn names a user of.
func owner(ctx context.Context, st *session.Store, reader *archive.Reader, k session.Key) (string, error) {
	h, _, err := st.Header(ctx, k)
	if err == nil && h.User != "" {
		return h.User, nil
	}
	if err != nil && !errors.Is(err, session.ErrNotFound) {
		return "", err
	}
	user := ""
	err = reader.Scan(ctx, events.SessionFilter(k.Tenant, k.Session), 1, 0, func(m *jetstream.RawStreamMsg) error {
		t, err := events.ReadStoredTurn(m)
		if err != nil || t.Turn.User == "" {
			return nil
		}
		user = t.Turn.User
		return errFound
	})
	if err != nil && !errors.Is(err, errFound) {
		return "", fmt.Errorf("recovery: reading the first turns of %s: %w", k, err)
	}
	return user, nil
}

// lastSeq is a stream's last sequence.
func lastSeq(ctx context.Context, js jetstream.JetStream, stream string) (uint64, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return 0, fmt.Errorf("recovery: reading stream %q: %w", stream, err)
	}
	return s.CachedInfo().State.LastSeq, nil
}

// floor is the sequence up to which consumer name has acknowledged every message it reads of
// stream, whose last sequence (read before) is last: its ack floor, or last when it has nothing
// pending or unacknowledged (a filtered consumer's ack floor stays at the last message it was
// delivered). found is false when the consumer does not exist.
func floor(ctx context.Context, js jetstream.JetStream, stream, name string, last uint64) (uint64, bool, error) {
	c, err := js.Consumer(ctx, stream, name)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("recovery: reading consumer %q of %q: %w", name, stream, err)
	}
	info := c.CachedInfo()
	if info.NumPending == 0 && info.NumAckPending == 0 {
		return max(last, info.AckFloor.Stream), true, nil
	}
	return info.AckFloor.Stream, true, nil
}

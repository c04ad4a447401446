// Package forget removes what agentmem keeps of a user, or one fact of a user: the endpoint
// "forget" on memory.forget.<tenant> (events.ForgetSubjects), which the process that runs it adds
// to its micro service (AddEndpoint; the extractor does).
//
// Forgetting a user is each store's part (Part): the session store tombstones the user's
// sessions and purges their chunks, the archive's streams lose the sessions' turns, summary,
// pressure and fact events and dead letters, the usage store its counters, the long-term store
// the user's facts, summaries and session index, the vector store the user's vectors. Forget makes
// two passes over the parts, the second after a grace period and after the consumers it is told
// to wait for (Config.Waits: today the embedding stage's) acknowledged what they had in flight,
// then announces the forget with a "forgotten" fact event, which retrievers use to drop their
// caches. It imports stores, never a stage.
package forget

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/archive"
	"github.com/agentmem/agentmem/internal/longterm"
	"github.com/agentmem/agentmem/internal/metrics"
	"github.com/agentmem/agentmem/internal/session"
	"github.com/agentmem/agentmem/internal/usage"
	"github.com/agentmem/agentmem/internal/vectors"
	"github.com/agentmem/agentmem/pkg/events"
	"github.com/agentmem/agentmem/pkg/memory"
)

// grace is how long Forget waits before its second pass, which removes what work in flight (a
// compression or extraction that started before the forget) wrote meanwhile.
const grace = 750 * time.Millisecond

// waitBound bounds how long after its first pass Forget waits for the consumers of Config.Waits
// to finish what they had in flight (awaitConsumers), so that the second pass removes what they
// stored too; with the passes it keeps a forget within pkg/client's default timeout (5 s).
const waitBound = 2500 * time.Millisecond

// Consumer names a durable consumer of a stream.
type Consumer struct {
	Stream, Name string
}

// Config configures forgetting.
type Config struct {
	// Topology names the streams and buckets.
	Topology events.Topology
	// Source is the CloudEvents source of the fact events forget publishes (default
	// "agentmem/forget"; the extractor gives its own, "agentmem/extractor").
	Source string
	// Tokenizer counts a corrected fact's tokens ("estimate").
	Tokenizer string
	// Waits are the consumers whose work in flight a user's forget waits for before its second
	// pass: those that store what the first pass cannot see yet (the embedding stage's). A
	// consumer that does not exist has nothing in flight.
	Waits []Consumer
	// Parts are forgotten after the stores' parts (a stage's own state).
	Parts []Part
	// Metrics counts refused requests and fact changes; nil counts nothing.
	Metrics *metrics.Metrics
	// NoEvents publishes no fact events (a replay's ApplyEdit into buckets of its own).
	NoEvents bool
	// Sync, when not nil, makes every write acknowledged so far durable (memoryd's lazy
	// persistence: package recovery): a user's forget calls it before it answers, so that what
	// it removed stays removed after a power cut.
	Sync func(ctx context.Context) error
}

// Stores are the stores forget reads and empties; each must be bound to Config.Topology.
type Stores struct {
	Long     *longterm.Store
	Sessions *session.Store
	Usage    *usage.Store
	Vectors  *vectors.Store
}

// Service forgets users and facts.
type Service struct {
	cfg      Config
	js       jetstream.JetStream
	long     *longterm.Store
	sessions *session.Store
	parts    []Part
	counter  memory.Counter
	log      zerolog.Logger
}

// New returns the forget service over st. It fails when a store is missing or the topology or
// the tokenizer is not valid.
func New(cfg Config, js jetstream.JetStream, st Stores, log zerolog.Logger) (*Service, error) {
	if cfg.Topology.Prefix == "" {
		cfg.Topology = events.DefaultTopology()
	}
	if err := cfg.Topology.Validate(); err != nil {
		return nil, err
	}
	if cfg.Source == "" {
		cfg.Source = "agentmem/forget"
	}
	if st.Long == nil || st.Sessions == nil || st.Usage == nil || st.Vectors == nil {
		return nil, errors.New("forget: every store is needed (long-term, session, usage, vectors)")
	}
	for _, c := range cfg.Waits {
		if c.Stream == "" || c.Name == "" {
			return nil, fmt.Errorf("forget: waits: consumer %q of stream %q: both names are needed", c.Name, c.Stream)
		}
	}
	counter, err := memory.NewCounter(cfg.Tokenizer)
	if err != nil {
		return nil, err
	}
	topo := cfg.Topology
	parts := []Part{
		sessionPart{st.Sessions},
		streamPart{js, topo},
		usagePart{st.Usage},
		longPart{st.Long},
		vectorPart{st.Vectors},
		viewPart{js, topo},
	}
	return &Service{
		cfg: cfg, js: js, long: st.Long, sessions: st.Sessions, parts: append(parts, cfg.Parts...),
		counter: counter, log: log,
	}, nil
}

// Forget removes everything of one user: every session's short-term state (replaced by a
// tombstone so that turns in flight are not applied again), archived turns, pressure, summary and
// fact events, dead letters, usage counters, facts, summaries, the session index and the user's
// vectors (purged, history included); it does so twice, the second time after the grace and
// after the consumers of Config.Waits finished what they had in flight (awaitConsumers), then
// makes it durable (Config.Sync) and announces it with a "forgotten" fact event. It returns
// counts of what it removed.
func (s *Service) Forget(ctx context.Context, tenant, user string) (map[string]int, error) {
	if err := events.ValidateToken("tenant", tenant); err != nil {
		return nil, err
	}
	if err := events.ValidateToken("user", user); err != nil {
		return nil, err
	}
	counts := map[string]int{}
	if err := s.pass(ctx, tenant, user, counts); err != nil {
		return counts, err
	}
	// What the streams held when the first pass was done: the waited-for consumers' work on any
	// of it may still be in flight.
	marks, err := s.streamMarks(ctx)
	if err != nil {
		return counts, err
	}
	deadline := time.Now().Add(waitBound)
	timer := time.NewTimer(grace)
	select {
	case <-ctx.Done():
		timer.Stop()
		return counts, ctx.Err()
	case <-timer.C:
	}
	if err := s.awaitConsumers(ctx, marks, deadline); err != nil {
		if ctx.Err() != nil {
			return counts, ctx.Err()
		}
		s.log.Warn().Err(err).Str("tenant", tenant).Str("user", user).
			Msg("forget: a consumer did not finish its work in flight in time; what it stores in the moment before it sees the forget outlives it")
	}
	if err := s.pass(ctx, tenant, user, counts); err != nil {
		return counts, err
	}
	if s.cfg.Sync != nil {
		if err := s.cfg.Sync(ctx); err != nil {
			return counts, fmt.Errorf("making the forget durable: %w", err)
		}
	}
	msg, err := events.NewMsg(ctx, tenant, user, "forgotten-"+strconv.FormatInt(time.Now().UnixNano(), 36), events.TypeFact, s.cfg.Source, time.Now(),
		events.FactEvent{Op: events.FactForgotten, Fact: events.Fact{ID: "user:" + user}})
	if err != nil {
		return counts, err
	}
	if _, err := s.js.PublishMsg(ctx, msg); err != nil {
		return counts, fmt.Errorf("announcing the forget: %w", err)
	}
	// The announcement is for live subscribers; it is not kept as memory of the user.
	if _, err := archive.Purge(ctx, s.js, s.cfg.Topology.FactStream(), msg.Subject); err != nil {
		return counts, err
	}
	s.log.Info().Str("tenant", tenant).Str("user", user).Interface("forgotten", counts).Msg("user forgotten")
	return counts, nil
}

// pass forgets the user once: the long-term index names the user's sessions (those another user
// owns left out), then every part forgets, in order.
func (s *Service) pass(ctx context.Context, tenant, user string, counts map[string]int) error {
	recs, err := s.long.User(ctx, tenant, user)
	if err != nil {
		return err
	}
	u := User{Tenant: tenant, User: user}
	for _, r := range recs.Sessions {
		h, _, err := s.sessions.Header(ctx, session.Key{Tenant: tenant, Session: r.Session})
		if err != nil && !errors.Is(err, session.ErrNotFound) {
			return err
		}
		if err == nil && h.User != "" && h.User != user {
			continue // the index named a session another user owns
		}
		u.Sessions = append(u.Sessions, r.Session)
	}
	for _, p := range s.parts {
		if err := p.Forget(ctx, u, counts); err != nil {
			return err
		}
	}
	return nil
}

// streamMarks returns the last sequence of each stream a waited-for consumer reads.
func (s *Service) streamMarks(ctx context.Context) (map[string]uint64, error) {
	marks := map[string]uint64{}
	for _, c := range s.cfg.Waits {
		if _, ok := marks[c.Stream]; ok {
			continue
		}
		last, err := streamLast(ctx, s.js, c.Stream)
		if err != nil {
			return nil, err
		}
		marks[c.Stream] = last
	}
	return marks, nil
}

// awaitConsumers waits until each consumer of Config.Waits has acknowledged every message it
// reads up to its stream's mark, or until deadline. The embedding stage, for one, acknowledges a
// message once its vector is stored, and a message it is delivered later finds the session a
// tombstone or the entry purged; but one it was embedding when the forget began (a slow or
// retried embedding call, or a turn decided from a session state it had read before) is stored
// whenever the call returns, and only a pass after that removes it. A consumer that does not
// exist (no embedder deployed) has nothing in flight.
func (s *Service) awaitConsumers(ctx context.Context, marks map[string]uint64, deadline time.Time) error {
	pause := 20 * time.Millisecond
	for _, c := range s.cfg.Waits {
		for {
			done, err := s.consumerDone(ctx, c.Stream, c.Name, marks[c.Stream])
			if err != nil {
				return err
			}
			if done {
				break
			}
			if !time.Now().Before(deadline) {
				return fmt.Errorf("consumer %s of %s has not acknowledged up to sequence %d", c.Name, c.Stream, marks[c.Stream])
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(min(pause, time.Until(deadline))):
			}
			pause = min(2*pause, 200*time.Millisecond)
		}
	}
	return nil
}

// consumerDone reports whether consumer name of stream has nothing unacknowledged at or below
// sequence mark.
func (s *Service) consumerDone(ctx context.Context, stream, name string, mark uint64) (bool, error) {
	// Binding the consumer reads its info (CachedInfo): one request per look.
	cons, err := s.js.Consumer(ctx, stream, name)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading consumer %s of %s: %w", name, stream, err)
	}
	info := cons.CachedInfo()
	// The ack floor is the last message below which everything is acknowledged; with nothing
	// unacknowledged, everything delivered is, and what was not delivered yet finds the forget.
	return info.AckFloor.Stream >= mark || (info.NumAckPending == 0 && (info.Delivered.Stream >= mark || info.NumPending == 0)), nil
}

// streamLast is the last sequence of a stream.
func streamLast(ctx context.Context, js jetstream.JetStream, name string) (uint64, error) {
	// Binding the stream reads its info; a second request would read the same.
	s, err := js.Stream(ctx, name)
	if err != nil {
		return 0, fmt.Errorf("reading %q: %w", name, err)
	}
	return s.CachedInfo().State.LastSeq, nil
}

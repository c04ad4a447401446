package events

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Subject spaces captured by agentmem's streams. Agents publish and subscribe on these; they are
// fixed by the v1 contract and do not change with the topology's name prefix.
const (
	TurnsSubjects      = "memory.turns.>"
	PressureSubjects   = "memory.pressure.>"
	SummarySubjects    = "memory.summaries.>"
	FactSubjects       = "memory.facts.>"
	DeadLetterSubjects = "memory.dlq.>"
	// EndedSubjects are agentmem's own announcements of applied session ends (TypeEndApplied),
	// kept in the turns stream; not part of the v1 contract.
	EndedSubjects = "memory.ended.>"
)

// Defaults of a Topology.
const (
	DefaultPrefix          = "AGENTMEM"
	DefaultPartitions      = 16
	DefaultDuplicateWindow = 10 * time.Minute
)

// Topology names and configures every stream and KV bucket agentmem uses, and gives the prefix
// the stages name their consumers by (each stage declares its consumers, package stage).
// Ensure creates the streams and buckets idempotently. Prefix separates complete sets
// (a replay can build its own buckets next to the live ones); the subjects of the v1 contract stay
// the same whatever the prefix.
type Topology struct {
	// Prefix starts every stream, consumer and bucket name ("AGENTMEM").
	Prefix string
	// Partitions is the number of partitions of the turns stream (16). It is fixed once the stream
	// exists: the stream's subject transform hashes (tenant, session) into this many partitions.
	Partitions int
	// Replicas is the replication factor of every stream and bucket (1; 3 on a cluster).
	Replicas int
	// DuplicateWindow is the turns stream's Nats-Msg-Id deduplication window (10 minutes).
	// Ingest ignores repeated turn ids after it too.
	DuplicateWindow time.Duration
	// ArchiveMaxAge bounds how long turns stay in the archive (0 keeps them for ever).
	ArchiveMaxAge time.Duration
	// ArchiveMaxBytes bounds the archive's size; the oldest turns go first (0: no bound).
	ArchiveMaxBytes int64
	// EventsMaxAge bounds how long pressure, summary and fact events are kept (0 keeps them for
	// ever; the memory they describe is in the buckets, the events are the change feed).
	EventsMaxAge time.Duration
	// DeadLetterMaxAge bounds how long dead letters are kept (0 keeps them for ever).
	DeadLetterMaxAge time.Duration
	// Storage is the storage of every stream and bucket (file).
	Storage jetstream.StorageType
	// TurnsSource, when set, names the turns stream to read instead of <Prefix>_TURNS: a replay
	// set reads the live archive and writes its own buckets.
	TurnsSource string
	// Lazy persists what is derived from the turns stream lazily: the pressure, summary, fact
	// and dead-letter streams and every bucket but the ingest members' are created in
	// nats-server's asynchronous persist mode (written to the operating system, never synced
	// before their acknowledgement), and a small synced recovery bucket (RecoveryBucket) holds
	// the checkpoints that bound what an unclean stop makes memoryd rebuild (package recovery).
	// The turns stream, the record, is persisted as the server is configured (synced before each
	// acknowledgement, with memoryd's default durability). It needs one replica and file
	// storage (nats-server's asynchronous mode supports nothing else). A stream or bucket created
	// without it keeps its persist mode: nats-server cannot change it.
	Lazy bool
}

var prefixRE = regexp.MustCompile(`^[A-Za-z0-9_-]{1,32}$`)

func maxBytes(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}

// DefaultTopology returns the topology memoryd uses unless told otherwise.
func DefaultTopology() Topology {
	return Topology{
		Prefix:          DefaultPrefix,
		Partitions:      DefaultPartitions,
		Replicas:        1,
		DuplicateWindow: DefaultDuplicateWindow,
		Storage:         jetstream.FileStorage,
	}
}

// Validate reports the first field of t that cannot work.
func (t Topology) Validate() error {
	switch {
	case !prefixRE.MatchString(t.Prefix):
		return fmt.Errorf("topology: prefix %q must match [A-Za-z0-9_-]{1,32}", t.Prefix)
	case t.Partitions < 1 || t.Partitions > 1024:
		return fmt.Errorf("topology: partitions %d must be within 1-1024", t.Partitions)
	case t.Replicas < 1 || t.Replicas > 5:
		return fmt.Errorf("topology: replicas %d must be within 1-5", t.Replicas)
	case t.DuplicateWindow <= 0:
		return fmt.Errorf("topology: duplicate window %s must be positive", t.DuplicateWindow)
	case t.ArchiveMaxAge < 0 || t.DeadLetterMaxAge < 0 || t.EventsMaxAge < 0:
		return errors.New("topology: max ages must not be negative")
	case t.Lazy && (t.Replicas != 1 || t.Storage != jetstream.FileStorage):
		return fmt.Errorf("topology: lazy persistence needs one replica and file storage (replicas %d, %s storage)", t.Replicas, t.Storage)
	}
	return nil
}

// TurnsStream names the stream that captures every turn: the archive.
func (t Topology) TurnsStream() string {
	if t.TurnsSource != "" {
		return t.TurnsSource
	}
	return t.Prefix + "_TURNS"
}

// PressureStream names the stream of agentmem.pressure.v1 events.
func (t Topology) PressureStream() string { return t.Prefix + "_PRESSURE" }

// SummaryStream names the stream of agentmem.summary.v1 events.
func (t Topology) SummaryStream() string { return t.Prefix + "_SUMMARIES" }

// FactStream names the stream of agentmem.fact.v1 events.
func (t Topology) FactStream() string { return t.Prefix + "_FACTS" }

// DeadLetterStream names the stream of dead letters.
func (t Topology) DeadLetterStream() string { return t.Prefix + "_DLQ" }

// SessionBucket names the KV bucket of session headers (key "<tenant>.<session>").
func (t Topology) SessionBucket() string { return t.Prefix + "_SESSIONS" }

// ChunkBucket names the KV bucket of append-only session chunks (key "<tenant>.<session>.<nuid>").
func (t Topology) ChunkBucket() string { return t.Prefix + "_CHUNKS" }

// LongTermBucket names the KV bucket of facts, summaries and session indexes (package longterm).
func (t Topology) LongTermBucket() string { return t.Prefix + "_LONGTERM" }

// UsageBucket names the KV bucket of LLM usage counters (key "<tenant>.<session>").
func (t Topology) UsageBucket() string { return t.Prefix + "_USAGE" }

// MemoBucket names the KV bucket of LLM answers kept while a compression is made (key
// "<tenant>.<session>.<summary hash>.<request hash>", package compress): a redelivered compression
// reuses them instead of asking the model again.
func (t Topology) MemoBucket() string { return t.Prefix + "_MEMO" }

// MemoTTL is how long an LLM answer stays in the memo bucket when its compression never finishes.
const MemoTTL = 24 * time.Hour

// RecoveryBucket names the KV bucket of recovery checkpoints (Lazy only; package recovery):
// synced, unlike the lazily persisted buckets whose rebuild it bounds.
func (t Topology) RecoveryBucket() string { return t.Prefix + "_RECOVERY" }

// VectorBucket names the KV bucket of embeddings: one vector per entry and embedding model, key
// "<tenant>.<user>.<model token>.<entry token>" (package embedder).
func (t Topology) VectorBucket() string { return t.Prefix + "_VECTORS" }

// ViewBucket names the KV bucket of users' stored views: one value per user, key
// "<tenant>.<user>", the archive part of the retriever's view of the user (the turns and the
// terms of their text) as it last loaded it, so that the next cold load reads one value instead
// of every session's turns (package retrieve, snapshot.go). A cache: a view that does not match
// the sessions' headers is not used, and a user's forget removes it.
func (t Topology) ViewBucket() string { return t.Prefix + "_VIEWS" }

// PartitionFilter is the stored-subject filter of partition p of the turns stream.
func (t Topology) PartitionFilter(p int) string { return fmt.Sprintf("%d.memory.turns.*.*", p) }

// SessionFilter is the stored subject of one session's turns, whatever its partition.
func SessionFilter(tenant, session string) string {
	return "*.memory.turns." + tenant + "." + session
}

// SummaryPartitionFilter is the stored-subject filter of partition p of the summaries stream.
func (t Topology) SummaryPartitionFilter(p int) string {
	return fmt.Sprintf("%d.memory.summaries.*.*", p)
}

// PartitionedSubject is the stored subject of a session's turns in partition p.
func PartitionedSubject(p int, tenant, session string) string {
	return fmt.Sprintf("%d.memory.turns.%s.%s", p, tenant, session)
}

// TurnsStreamConfig is the archive: every turn and session end, partitioned by (tenant, session)
// with a subject transform, "memory.turns.<t>.<s>" stored as "<p>.memory.turns.<t>.<s>". Subjects of
// any other shape are stored as published so that ingest can dead-letter them with a reason.
//
// Beside the turns it keeps agentmem's own announcements of applied session ends (EndedSubjects)
// and records of users' edits of their facts (EditSubjects), which a replay applies in order.
//
// Atomic batch publish is allowed (nats-server 2.12+): a batch of turns is stored all or nothing
// and, with the server syncing every write (memoryd's default durability), synced to disk once
// for the whole batch instead of once per turn. The HTTP gateway publishes its batches so.
func (t Topology) TurnsStreamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        t.TurnsStream(),
		Description: "agentmem turns (the archive), partitioned by tenant and session",
		Subjects:    []string{TurnsSubjects, EndedSubjects, EditSubjects},
		SubjectTransform: &jetstream.SubjectTransformConfig{
			Source:      "memory.turns.*.*",
			Destination: fmt.Sprintf("{{partition(%d,1,2)}}.memory.turns.{{wildcard(1)}}.{{wildcard(2)}}", t.Partitions),
		},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		MaxAge:      t.ArchiveMaxAge,
		MaxBytes:    maxBytes(t.ArchiveMaxBytes),
		Storage:     t.Storage,
		Replicas:    t.Replicas,
		Duplicates:  t.DuplicateWindow,
		AllowDirect: true,

		AllowAtomicPublish: true,
	}
}

// persist is the persist mode of a stream or bucket derived from the turns stream.
func (t Topology) persist() jetstream.PersistModeType {
	if t.Lazy {
		return jetstream.AsyncPersistMode
	}
	return jetstream.DefaultPersistMode
}

func (t Topology) eventStream(name, desc, subjects string, maxAge time.Duration) jetstream.StreamConfig {
	return jetstream.StreamConfig{
		PersistMode: t.persist(),
		Name:        name,
		Description: desc,
		Subjects:    []string{subjects},
		Retention:   jetstream.LimitsPolicy,
		MaxAge:      maxAge,
		Storage:     t.Storage,
		Replicas:    t.Replicas,
		Duplicates:  t.DuplicateWindow,
		AllowDirect: true,
	}
}

// SummaryStreamConfig keeps agentmem.summary.v1 events, partitioned like the turns stream so that
// the ingest process owning a session's turns applies its summaries too.
func (t Topology) SummaryStreamConfig() jetstream.StreamConfig {
	sc := t.eventStream(t.SummaryStream(), "agentmem.summary.v1 events, partitioned by tenant and session", SummarySubjects, t.EventsMaxAge)
	sc.SubjectTransform = &jetstream.SubjectTransformConfig{
		Source:      "memory.summaries.*.*",
		Destination: fmt.Sprintf("{{partition(%d,1,2)}}.memory.summaries.{{wildcard(1)}}.{{wildcard(2)}}", t.Partitions),
	}
	return sc
}

// StreamConfigs lists every stream of the topology, the turns stream first.
func (t Topology) StreamConfigs() []jetstream.StreamConfig {
	return []jetstream.StreamConfig{
		t.TurnsStreamConfig(),
		t.eventStream(t.PressureStream(), "agentmem.pressure.v1 events", PressureSubjects, t.EventsMaxAge),
		t.SummaryStreamConfig(),
		t.eventStream(t.FactStream(), "agentmem.fact.v1 events", FactSubjects, t.EventsMaxAge),
		t.eventStream(t.DeadLetterStream(), "dead letters: bad input and exhausted deliveries", DeadLetterSubjects, t.DeadLetterMaxAge),
	}
}

// BucketConfigs lists every KV bucket of the topology.
func (t Topology) BucketConfigs() []jetstream.KeyValueConfig {
	return []jetstream.KeyValueConfig{
		{
			Bucket:      t.SessionBucket(),
			Description: "agentmem session headers: counters, watermarks and the head chunk of each session",
			History:     1,
			Storage:     t.Storage,
			Replicas:    t.Replicas,
		},
		{
			Bucket:       t.ChunkBucket(),
			Description:  "agentmem append-only session chunks: the ordered decisions of ingest",
			History:      1,
			Storage:      t.Storage,
			Replicas:     t.Replicas,
			MaxValueSize: 1 << 20,
		},
		{
			Bucket:      t.LongTermBucket(),
			Description: "agentmem long-term memory: facts (with history), summaries and session indexes per user",
			History:     1,
			Storage:     t.Storage,
			Replicas:    t.Replicas,
		},
		{
			Bucket:      t.UsageBucket(),
			Description: "agentmem LLM usage per session: calls, input and output tokens",
			History:     1,
			Storage:     t.Storage,
			Replicas:    t.Replicas,
		},
		{
			Bucket:      t.MemoBucket(),
			Description: "agentmem LLM answers of compressions in progress, reused by a redelivered attempt",
			History:     1,
			TTL:         MemoTTL,
			Storage:     t.Storage,
			Replicas:    t.Replicas,
		},
		{
			Bucket:      t.VectorBucket(),
			Description: "agentmem embeddings: one vector per entry and model, under the entry's tenant and user",
			History:     1,
			Storage:     t.Storage,
			Replicas:    t.Replicas,
		},
		{
			Bucket:      t.ViewBucket(),
			Description: "agentmem users' stored views: the archive as the retriever last loaded it, read by its next cold load",
			History:     1,
			Storage:     t.Storage,
			Replicas:    t.Replicas,
		},
	}
}

// WorkerAckWait is how long a compressor or extractor message may go without an acknowledgement
// or a progress heartbeat before JetStream redelivers it (to another process if its worker died).
// Running handlers send InProgress every WorkerAckWait/3.
const WorkerAckWait = 10 * time.Second

// WorkerMaxDeliver is how often a pressure event or an extraction trigger is tried before it is
// dead-lettered.
const WorkerMaxDeliver = 8

// Ensure creates or updates every stream and bucket of t. It is idempotent and safe to run from
// several processes at once. Consumers are created by the workers that consume them
// (EnsureConsumers), so that no consumer exists without a worker behind it.
func (t Topology) Ensure(ctx context.Context, js jetstream.JetStream) error {
	if err := t.Validate(); err != nil {
		return err
	}
	for _, sc := range t.StreamConfigs() {
		if err := EnsureStream(ctx, js, sc); err != nil {
			return fmt.Errorf("creating stream %q: %w", sc.Name, err)
		}
	}
	return t.EnsureBuckets(ctx, js)
}

// EnsureBuckets creates or updates the KV buckets of t only (a replay set, which shares the live
// streams' subjects and so has no streams of its own). With Lazy the buckets are created in the
// asynchronous persist mode and the recovery bucket is created too.
func (t Topology) EnsureBuckets(ctx context.Context, js jetstream.JetStream) error {
	if err := t.Validate(); err != nil {
		return err
	}
	for _, kc := range t.BucketConfigs() {
		if _, err := EnsureBucketPersist(ctx, js, kc, t.persist()); err != nil {
			return fmt.Errorf("creating bucket %q: %w", kc.Bucket, err)
		}
	}
	if t.Lazy {
		rc := jetstream.KeyValueConfig{
			Bucket:      t.RecoveryBucket(),
			Description: "agentmem recovery checkpoints: what an unclean stop makes memoryd rebuild from the turns stream",
			History:     1,
			Storage:     t.Storage,
			Replicas:    t.Replicas,
		}
		if _, err := EnsureBucket(ctx, js, rc); err != nil {
			return fmt.Errorf("creating bucket %q: %w", rc.Bucket, err)
		}
	}
	// The embedder writes the vector packs of a batch as one atomic batch, ingest the sessions it
	// commits together (one disk sync each instead of one per write). A bucket persisted lazily
	// syncs nothing before its acknowledgements, and nats-server allows no atomic batch there.
	for _, b := range []string{t.VectorBucket(), t.SessionBucket(), t.ChunkBucket()} {
		if err := EnableAtomicPublish(ctx, js, "KV_"+b); err != nil {
			return fmt.Errorf("allowing atomic batches in bucket %q: %w", b, err)
		}
	}
	return nil
}

// EnsureConsumers creates the durable consumers on stream, or updates one when a field agentmem
// sets differs; safe for many processes at once (see EnsureStream).
func EnsureConsumers(ctx context.Context, js jetstream.JetStream, stream string, ccs ...jetstream.ConsumerConfig) error {
	for _, cc := range ccs {
		if err := ensureConsumer(ctx, js, stream, cc); err != nil {
			return fmt.Errorf("creating consumer %q on %q: %w", cc.Durable, stream, err)
		}
	}
	return nil
}

package events

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Provisioning that many processes may run at once.
//
// Every worker creates the topology it needs at start-up, so on a fresh deployment several
// processes create the same streams at the same moment. On a replicated (R3) cluster two
// CreateOrUpdateStream calls on a missing stream both hang until their deadline (the library
// tries an update first); a plain create does not: one creates, the others are told the stream
// exists or get it as created. So each stream and bucket is ensured as: look it up; create it
// when it is missing; update it only when a field agentmem sets differs; and try again, with a
// backoff, while the cluster cannot place it yet (no suitable peers, no leader, a timeout), until
// the context ends. The error then names the cause.

// ensureAttempt bounds one lookup, create or update.
const ensureAttempt = 2 * time.Second

// EnsureStream creates the stream of cfg, or updates it when a field agentmem sets differs;
// safe for many processes at once. It fails when ctx ends first or the server refuses the
// configuration.
func EnsureStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) error {
	return retry(ctx, func(ctx context.Context) error {
		s, err := js.Stream(ctx, cfg.Name)
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
			_, err = js.CreateStream(ctx, cfg)
			if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				return errTryAgain // created by another process meanwhile: look again
			}
			return err
		case err != nil:
			return err
		}
		if streamDiffers(s.CachedInfo().Config, cfg) {
			_, err = js.UpdateStream(ctx, cfg)
		}
		return err
	})
}

// MaxAtomicBatch is the most messages nats-server takes in one atomic batch (its default limit).
const MaxAtomicBatch = 1000

// MinAtomicBatch is the fewest writes agentmem sends as an atomic batch: nats-server stages a
// batch in a store of its own, which costs a few disk syncs when every write is synced, so fewer
// writes are cheaper sent one by one.
const MinAtomicBatch = 4

// EnableAtomicPublish allows atomic batch publish (nats-server 2.12+) in stream, a bucket's
// stream for instance (a KV bucket's configuration cannot say so); safe for many processes at
// once (the stream must exist, or be being created: not found is asked again until ctx ends). A
// server that does not know the setting keeps the stream as it was, and atomic batches
// sent to it fail (their publishers then write one message at a time). A stream in the
// asynchronous persist mode is left as it is: nats-server refuses atomic batches there, and
// they would save no disk sync.
func EnableAtomicPublish(ctx context.Context, js jetstream.JetStream, stream string) error {
	return retry(ctx, func(ctx context.Context) error {
		s, err := js.Stream(ctx, stream)
		if err == nil {
			cfg := s.CachedInfo().Config
			if cfg.AllowAtomicPublish || cfg.PersistMode == jetstream.AsyncPersistMode {
				return nil
			}
			cfg.AllowAtomicPublish = true
			_, err = js.UpdateStream(ctx, cfg)
		}
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			// On a cluster a stream another process just created may not be found for a moment
			// (TestEnsureRacesOnAFreshCluster): look again.
			return errTryAgain
		}
		return err
	})
}

// EnsureBucket creates the KV bucket of cfg, or updates it when a field agentmem sets differs;
// safe for many processes at once.
func EnsureBucket(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig) (jetstream.KeyValue, error) {
	var kv jetstream.KeyValue
	err := retry(ctx, func(ctx context.Context) error {
		var err error
		kv, err = js.KeyValue(ctx, cfg.Bucket)
		switch {
		case errors.Is(err, jetstream.ErrBucketNotFound):
			kv, err = js.CreateKeyValue(ctx, cfg)
			if errors.Is(err, jetstream.ErrBucketExists) || errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
				return errTryAgain
			}
			return err
		case err != nil:
			return err
		}
		st, err := kv.Status(ctx)
		if err != nil {
			return err
		}
		bs, ok := st.(*jetstream.KeyValueBucketStatus)
		if !ok || !bucketDiffers(bs.StreamInfo().Config, cfg) {
			return nil
		}
		if mode := bs.StreamInfo().Config.PersistMode; mode != jetstream.DefaultPersistMode {
			// The KV API would send the default persist mode, which nats-server refuses to change to.
			sc := bucketStream(cfg)
			sc.PersistMode = mode
			if _, err = js.UpdateStream(ctx, sc); err != nil {
				return err
			}
			kv, err = js.KeyValue(ctx, cfg.Bucket)
			return err
		}
		kv, err = js.UpdateKeyValue(ctx, cfg)
		return err
	})
	return kv, err
}

// EnsureBucketPersist is EnsureBucket with a persist mode: a bucket it creates in
// jetstream.AsyncPersistMode is written to the operating system and never synced before its
// acknowledgements (nats-server 2.12+; one replica and file storage only). The KV configuration
// has no persist mode, so the bucket's stream is created here as the KV API creates it, with the
// mode set. An existing bucket keeps its persist mode, which nats-server cannot change.
func EnsureBucketPersist(ctx context.Context, js jetstream.JetStream, cfg jetstream.KeyValueConfig, mode jetstream.PersistModeType) (jetstream.KeyValue, error) {
	if mode == jetstream.DefaultPersistMode {
		return EnsureBucket(ctx, js, cfg)
	}
	if err := retry(ctx, func(ctx context.Context) error {
		_, err := js.KeyValue(ctx, cfg.Bucket)
		if !errors.Is(err, jetstream.ErrBucketNotFound) {
			return err
		}
		sc := bucketStream(cfg)
		sc.PersistMode = mode
		_, err = js.CreateStream(ctx, sc)
		if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
			return errTryAgain
		}
		return err
	}); err != nil {
		return nil, err
	}
	return EnsureBucket(ctx, js, cfg)
}

// bucketStream is the stream configuration nats.go's CreateKeyValue gives a bucket of cfg
// (without mirrors, sources, republishing or limit markers, which agentmem's buckets do not use).
func bucketStream(cfg jetstream.KeyValueConfig) jetstream.StreamConfig {
	history := int64(max(cfg.History, 1))
	replicas := max(cfg.Replicas, 1)
	maxBytes, maxMsgSize := cfg.MaxBytes, cfg.MaxValueSize
	if maxBytes == 0 {
		maxBytes = -1
	}
	if maxMsgSize == 0 {
		maxMsgSize = -1
	}
	dup := 2 * time.Minute
	if cfg.TTL > 0 && cfg.TTL < dup {
		dup = cfg.TTL
	}
	var compression jetstream.StoreCompression
	if cfg.Compression {
		compression = jetstream.S2Compression
	}
	return jetstream.StreamConfig{
		Name:              "KV_" + cfg.Bucket,
		Description:       cfg.Description,
		Subjects:          []string{"$KV." + cfg.Bucket + ".>"},
		MaxMsgsPerSubject: history,
		MaxBytes:          maxBytes,
		MaxAge:            cfg.TTL,
		MaxMsgSize:        maxMsgSize,
		Storage:           cfg.Storage,
		Replicas:          replicas,
		Placement:         cfg.Placement,
		AllowRollup:       true,
		DenyDelete:        true,
		Duplicates:        dup,
		MaxMsgs:           -1,
		MaxConsumers:      -1,
		AllowDirect:       true,
		Compression:       compression,
		Discard:           jetstream.DiscardNew,
		Metadata:          cfg.Metadata,
	}
}

// BindBucket binds the KV bucket name, which must exist (Topology.Ensure creates every bucket
// at start-up; nothing else does). It fails, naming the bucket, when the bucket does not exist
// or the server does not answer.
func BindBucket(ctx context.Context, js jetstream.JetStream, name string) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("binding bucket %q: %w", name, err)
	}
	return kv, nil
}

// ensureConsumer is EnsureStream for a durable consumer: look it up, create it when missing,
// update it only when a field agentmem sets differs, and try again while the cluster cannot.
func ensureConsumer(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.ConsumerConfig) error {
	return retry(ctx, func(ctx context.Context) error {
		c, err := js.Consumer(ctx, stream, cfg.Durable)
		switch {
		case errors.Is(err, jetstream.ErrConsumerNotFound):
			_, err = js.CreateConsumer(ctx, stream, cfg)
			if errors.Is(err, jetstream.ErrConsumerExists) {
				return errTryAgain
			}
			return err
		case err != nil:
			return err
		}
		if consumerDiffers(c.CachedInfo().Config, cfg) {
			_, err = js.UpdateConsumer(ctx, stream, cfg)
		}
		return err
	})
}

var errTryAgain = errors.New("events: try again")

// retry runs op, bounded by ensureAttempt each time, until it succeeds, fails for good, or ctx
// ends; the last error is returned.
func retry(ctx context.Context, op func(context.Context) error) error {
	wait := 100 * time.Millisecond
	for {
		actx, cancel := context.WithTimeout(ctx, ensureAttempt)
		err := op(actx)
		cancel()
		if err == nil {
			return nil
		}
		if !errors.Is(err, errTryAgain) && !placementPending(err) {
			return err
		}
		select {
		case <-ctx.Done():
			if errors.Is(err, errTryAgain) {
				err = ctx.Err()
			}
			return fmt.Errorf("%w; last error: %w", ctx.Err(), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// errCodeClusterNoPeers is nats-server's "no suitable peers for placement" (JSClusterNoPeersErrF),
// which a cluster answers while its peers are still joining.
const errCodeClusterNoPeers jetstream.ErrorCode = 10005

// placementPending reports errors a cluster gives while it cannot serve the request yet, and
// those of a connection that has not reached it yet.
func placementPending(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		switch apiErr.ErrorCode {
		case errCodeClusterNoPeers, jetstream.JSErrCodeJetStreamNotEnabled:
			return true
		}
		return apiErr.Code == 503 || apiErr.Code == 500
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, jetstream.ErrServerShutdown) ||
		errors.Is(err, nats.ErrConnectionReconnecting) || errors.Is(err, nats.ErrNoServers) ||
		errors.Is(err, nats.ErrDisconnected) || errors.Is(err, nats.ErrNoResponders)
}

// streamDiffers reports whether a field agentmem sets (a zero value: the server's default)
// differs between the stream's config and want.
func streamDiffers(have, want jetstream.StreamConfig) bool {
	return want.Description != have.Description || !slices.Equal(want.Subjects, have.Subjects) ||
		(want.SubjectTransform == nil) != (have.SubjectTransform == nil) ||
		(want.SubjectTransform != nil && *want.SubjectTransform != *have.SubjectTransform) ||
		want.Retention != have.Retention || want.Discard != have.Discard || want.MaxAge != have.MaxAge ||
		(want.MaxBytes != 0 && want.MaxBytes != have.MaxBytes) || want.Storage != have.Storage ||
		(want.Replicas != 0 && want.Replicas != have.Replicas) ||
		(want.Duplicates != 0 && want.Duplicates != have.Duplicates) || want.AllowDirect != have.AllowDirect ||
		want.AllowAtomicPublish != have.AllowAtomicPublish
}

// consumerDiffers reports whether a field agentmem sets (a zero value: the server's default)
// differs between a consumer's config and want. Where a consumer starts matters only when it is
// created: one created at a sequence (memoryd's recovery positions the consumers it recreates,
// package recovery) is what a consumer that wants every message becomes, and is not changed.
func consumerDiffers(have, want jetstream.ConsumerConfig) bool {
	positioned := have.DeliverPolicy == jetstream.DeliverByStartSequencePolicy && want.DeliverPolicy == jetstream.DeliverAllPolicy
	return want.Description != have.Description || want.FilterSubject != have.FilterSubject ||
		!slices.Equal(want.FilterSubjects, have.FilterSubjects) || (want.DeliverPolicy != have.DeliverPolicy && !positioned) ||
		want.AckPolicy != have.AckPolicy || (want.AckWait != 0 && want.AckWait != have.AckWait) ||
		(want.MaxDeliver != 0 && want.MaxDeliver != have.MaxDeliver) ||
		(want.MaxAckPending != 0 && want.MaxAckPending != have.MaxAckPending) ||
		want.PriorityPolicy != have.PriorityPolicy || !slices.Equal(want.PriorityGroups, have.PriorityGroups) ||
		(want.PinnedTTL != 0 && want.PinnedTTL != have.PinnedTTL)
}

// bucketDiffers reports whether a field agentmem sets differs between a bucket's stream config
// and want.
func bucketDiffers(have jetstream.StreamConfig, want jetstream.KeyValueConfig) bool {
	history := int64(max(want.History, 1))
	return want.Description != have.Description || history != have.MaxMsgsPerSubject || want.TTL != have.MaxAge ||
		(want.MaxValueSize != 0 && want.MaxValueSize != have.MaxMsgSize) ||
		(want.Replicas != 0 && want.Replicas != have.Replicas) || want.Storage != have.Storage
}

package archive

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// Purge removes every message on subject (wildcards allowed) from stream and returns how many
// there were; with none it purges nothing. It fails when the stream cannot be bound, counted or
// purged.
func Purge(ctx context.Context, js jetstream.JetStream, stream, subject string) (uint64, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return 0, fmt.Errorf("binding %q: %w", stream, err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subject))
	if err != nil {
		return 0, fmt.Errorf("counting %s in %q: %w", subject, stream, err)
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	if n == 0 {
		return 0, nil
	}
	if err := s.Purge(ctx, jetstream.WithPurgeSubject(subject)); err != nil {
		return 0, fmt.Errorf("purging %s from %q: %w", subject, stream, err)
	}
	return n, nil
}

// PurgeKV removes the keys of a KV bucket that match pattern ("acme.s1.>"), history included,
// and returns how many messages that was. It fails as Purge does.
func PurgeKV(ctx context.Context, js jetstream.JetStream, bucket, pattern string) (uint64, error) {
	return Purge(ctx, js, "KV_"+bucket, "$KV."+bucket+"."+pattern)
}

// KVRemoved reports whether a message read from a KV bucket's stream (a Scan of it, a batched
// direct get) is a delete or purge marker rather than a value: its key has no value from there.
func KVRemoved(m *jetstream.RawStreamMsg) bool {
	op := m.Header.Get("KV-Operation")
	return op == "DEL" || op == "PURGE"
}

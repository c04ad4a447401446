// Package integrity is the read-side check of agentmem's KV buckets: every stored value names
// the tenant, session and/or user it belongs to, and a reader compares them with its key. A
// value that does not decode, or that names another owner than its key, is corrupt (a bug, or a
// write that should never have been allowed): the reader reports it (a Warn log and the
// agentmem_kv_corrupt_total counter) and treats the key as absent, so that nobody is answered
// with an error, or with another owner's memory, because of it.
package integrity

import (
	"errors"
	"fmt"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/metrics"
)

// Reasons a value is corrupt: the label values of agentmem_kv_corrupt_total.
const (
	// Undecodable: the value is not the record its key holds.
	Undecodable = "undecodable"
	// Tenant, Session, User: the value names another tenant, session or user than its key.
	Tenant  = "tenant"
	Session = "session"
	User    = "user"
	// ID: the value names another record id than its key.
	ID = "id"
	// Chain: a session's chain of chunks is broken (a chunk is missing, or not the session's).
	Chain = "chain"
)

// ErrCorrupt is matched (errors.Is) by every *Error.
var ErrCorrupt = errors.New("integrity: stored value does not belong to its key")

// Error is one corrupt value.
type Error struct {
	Bucket string
	Key    string
	// Reason is one of the reasons above.
	Reason string
	// Detail says what mismatched ("tenant \"alpha\", key of tenant \"beta\"").
	Detail string
	// Err is the decoding error of an undecodable value.
	Err error
}

func (e *Error) Error() string {
	msg := fmt.Sprintf("corrupt value of %s/%s (%s)", e.Bucket, e.Key, e.Reason)
	if e.Detail != "" {
		msg += ": " + e.Detail
	}
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Is makes every *Error match ErrCorrupt.
func (e *Error) Is(target error) bool { return target == ErrCorrupt }

// Unwrap returns the decoding error, if any.
func (e *Error) Unwrap() error { return e.Err }

// Undecoded is the corruption of a value of bucket/key that did not decode.
func Undecoded(bucket, key string, err error) *Error {
	return &Error{Bucket: bucket, Key: key, Reason: Undecodable, Err: err}
}

// Mismatch returns the corruption of a value of bucket/key whose field (Tenant, Session, User or
// ID) is got where the key says want, or nil when they are equal. An empty got is a mismatch too:
// call it only for fields the value must carry.
func Mismatch(bucket, key, field, got, want string) *Error {
	if got == want {
		return nil
	}
	return &Error{Bucket: bucket, Key: key, Reason: field, Detail: fmt.Sprintf("value names %s %q, key is of %s %q", field, got, field, want)}
}

// Reporter logs and counts corrupt values for one component. The zero Reporter (and a nil one)
// reports nothing: readers built without one still treat corrupt values as absent.
type Reporter struct {
	metrics *metrics.Metrics
	log     zerolog.Logger
	on      bool
}

// NewReporter returns a Reporter that logs at Warn on log, the reading component's logger (it
// carries the component field), and counts in m (nil counts nothing).
func NewReporter(m *metrics.Metrics, log zerolog.Logger) *Reporter {
	return &Reporter{metrics: m, log: log, on: true}
}

// Report logs and counts one corrupt value.
func (r *Reporter) Report(e *Error) {
	if r == nil || !r.on || e == nil {
		return
	}
	r.metrics.KVCorrupt(e.Bucket, e.Reason)
	ev := r.log.Warn().Str("bucket", e.Bucket).Str("key", e.Key).Str("reason", e.Reason)
	if e.Detail != "" {
		ev = ev.Str("mismatch", e.Detail)
	}
	if e.Err != nil {
		ev = ev.Err(e.Err)
	}
	ev.Msg("corrupt KV value treated as absent")
}

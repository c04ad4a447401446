package llm

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Retry defaults shared by every client of an OpenAI-compatible endpoint.
const (
	DefaultMaxAttempts = 5
	DefaultMinBackoff  = 500 * time.Millisecond
	DefaultMaxBackoff  = 30 * time.Second
)

// maxRetryAfter bounds what a Retry-After header can ask for before MaxBackoff caps it, so
// absurd values cannot overflow a time.Duration.
const maxRetryAfter = 24 * time.Hour

// RetryPolicy retries transient failures with exponential backoff and full jitter. A zero
// field takes its default (DefaultMaxAttempts, DefaultMinBackoff, DefaultMaxBackoff). It is a
// value and safe for concurrent use.
type RetryPolicy struct {
	// MaxAttempts is the number of attempts including the first.
	MaxAttempts int
	// MinBackoff is the backoff ceiling before the first retry; it doubles with every retry.
	MinBackoff time.Duration
	// MaxBackoff caps every wait, including one a server asked for with Retry-After.
	MaxBackoff time.Duration
	// OnRetry, when set, is called before each wait with the attempt that failed, the wait
	// and the attempt's error (for logging).
	OnRetry func(attempt int, wait time.Duration, err error)
}

// WithDefaults returns p with its zero fields set to the defaults.
func (p RetryPolicy) WithDefaults() RetryPolicy {
	if p.MaxAttempts == 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.MinBackoff == 0 {
		p.MinBackoff = DefaultMinBackoff
	}
	if p.MaxBackoff == 0 {
		p.MaxBackoff = DefaultMaxBackoff
	}
	return p
}

// Validate names the first field (after defaults) that cannot work: MaxAttempts below 1, a
// negative MinBackoff, or a MaxBackoff below MinBackoff.
func (p RetryPolicy) Validate() error {
	p = p.WithDefaults()
	switch {
	case p.MaxAttempts < 1:
		return fmt.Errorf("MaxAttempts must be at least 1, got %d", p.MaxAttempts)
	case p.MinBackoff < 0:
		return fmt.Errorf("MinBackoff must not be negative, got %s", p.MinBackoff)
	case p.MaxBackoff < p.MinBackoff:
		return fmt.Errorf("MaxBackoff (%s) must not be below MinBackoff (%s)", p.MaxBackoff, p.MinBackoff)
	}
	return nil
}

// Backoff returns the jittered wait after the given failed attempt (1 for the first): a
// uniformly random duration in [0, min(MaxBackoff, MinBackoff·2^(attempt-1))].
func (p RetryPolicy) Backoff(attempt int) time.Duration {
	p = p.WithDefaults()
	ceiling := p.MaxBackoff
	if attempt < 1 {
		attempt = 1
	}
	if shift := attempt - 1; shift < 62 && p.MinBackoff <= p.MaxBackoff>>shift {
		ceiling = p.MinBackoff << shift
	}
	if ceiling <= 0 {
		return 0
	}
	return rand.N(ceiling + 1)
}

// wait is how long to wait after a failed attempt: what the server asked for when it did,
// otherwise the jittered backoff, never more than MaxBackoff.
func (p RetryPolicy) wait(attempt int, retryAfter time.Duration) time.Duration {
	d := retryAfter
	if d <= 0 {
		d = p.Backoff(attempt)
	}
	return min(d, p.MaxBackoff)
}

// Do calls fn with attempt = 1, 2, … until it succeeds, fails permanently, runs out of
// attempts or ctx is done. fn reports whether its failure is transient and how long the server
// asked it to wait (0: no preference); a transient failure is retried after that wait or the
// jittered backoff, capped at MaxBackoff.
//
// Do returns nil on success; a permanent error exactly as fn returned it; after the last
// transient failure an error wrapping ErrUnavailable and that failure; and when ctx ends first
// an error wrapping ctx.Err() (and the last failure). It does not start an attempt once ctx is
// done.
func (p RetryPolicy) Do(ctx context.Context, fn func(attempt int) (retryAfter time.Duration, transient bool, err error)) error {
	p = p.WithDefaults()
	var last error
	for attempt := 1; ; attempt++ {
		if err := ctx.Err(); err != nil {
			if last == nil {
				return err
			}
			return fmt.Errorf("%w before attempt %d: %w", err, attempt, last)
		}
		retryAfter, transient, err := fn(attempt)
		if err == nil {
			return nil
		}
		if !transient {
			return err
		}
		last = err
		if attempt >= p.MaxAttempts {
			return fmt.Errorf("%w after %d attempts: %w", ErrUnavailable, attempt, err)
		}
		d := p.wait(attempt, retryAfter)
		if p.OnRetry != nil {
			p.OnRetry(attempt, d, err)
		}
		timer := time.NewTimer(d)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("%w while waiting to retry attempt %d: %w", ctx.Err(), attempt, err)
		case <-timer.C:
		}
	}
}

// retryAfter reads how long a response asks the client to wait before retrying: the
// "retry-after-ms" header (milliseconds), else "Retry-After" as seconds or an HTTP date
// relative to now. It returns 0 when there is no usable value.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil {
			return clampRetryAfter(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		return clampRetryAfter(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return clampRetryAfter(float64(t.Sub(now)))
	}
	return 0
}

// clampRetryAfter turns nanoseconds into a Duration in [0, maxRetryAfter]; NaN is 0.
func clampRetryAfter(ns float64) time.Duration {
	switch {
	case math.IsNaN(ns) || ns <= 0:
		return 0
	case ns >= float64(maxRetryAfter):
		return maxRetryAfter
	}
	return time.Duration(ns)
}

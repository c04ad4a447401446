package llm

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		headers map[string]string
		want    time.Duration
	}{
		{"none", nil, 0},
		{"seconds", map[string]string{"Retry-After": "2"}, 2 * time.Second},
		{"fractional seconds", map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond},
		{"milliseconds win", map[string]string{"Retry-After": "2", "retry-after-ms": "150"}, 150 * time.Millisecond},
		{"bad milliseconds fall back", map[string]string{"Retry-After": "2", "retry-after-ms": "soon"}, 2 * time.Second},
		{"HTTP date", map[string]string{"Retry-After": now.Add(90 * time.Second).Format(http.TimeFormat)}, 90 * time.Second},
		{"past HTTP date", map[string]string{"Retry-After": now.Add(-time.Minute).Format(http.TimeFormat)}, 0},
		{"negative", map[string]string{"Retry-After": "-3"}, 0},
		{"garbage", map[string]string{"Retry-After": "later"}, 0},
		{"huge", map[string]string{"Retry-After": "1e300"}, maxRetryAfter},
		{"NaN", map[string]string{"Retry-After": "NaN"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := http.Header{}
			for k, v := range tc.headers {
				h.Set(k, v)
			}
			if got := retryAfter(h, now); got != tc.want {
				t.Fatalf("retryAfter(%v) = %s, want %s", tc.headers, got, tc.want)
			}
		})
	}
}

func FuzzRetryAfter(f *testing.F) {
	for _, s := range []string{"1", "0.25", "-1", "Inf", "NaN", "Wed, 21 Oct 2015 07:28:00 GMT", "1e400", ""} {
		f.Add(s, s)
	}
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, seconds, ms string) {
		h := http.Header{}
		h.Set("Retry-After", seconds)
		h.Set("Retry-After-Ms", ms)
		if got := retryAfter(h, now); got < 0 || got > maxRetryAfter {
			t.Fatalf("retryAfter(%q, %q) = %s, outside [0, %s]", seconds, ms, got, maxRetryAfter)
		}
	})
}

// TestBackoffBounds checks the full-jitter invariant: every wait lies in
// [0, min(MaxBackoff, MinBackoff·2^(attempt-1))], for attempts far past overflow.
func TestBackoffBounds(t *testing.T) {
	p := RetryPolicy{MinBackoff: 10 * time.Millisecond, MaxBackoff: time.Second}
	var sawPositive bool
	for attempt := -1; attempt < 200; attempt++ {
		ceiling := p.MaxBackoff
		if attempt <= 1 {
			ceiling = p.MinBackoff
		} else if attempt < 10 {
			ceiling = min(p.MaxBackoff, p.MinBackoff<<(attempt-1))
		}
		for range 20 {
			d := p.Backoff(attempt)
			if d < 0 || d > ceiling {
				t.Fatalf("Backoff(%d) = %s, want within [0, %s]", attempt, d, ceiling)
			}
			sawPositive = sawPositive || d > 0
		}
	}
	if !sawPositive {
		t.Fatal("Backoff never waited")
	}
}

func TestDo(t *testing.T) {
	errTransient := errors.New("transient")
	errPermanent := errors.New("permanent")
	fast := RetryPolicy{MaxAttempts: 3, MinBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond}

	t.Run("success after retries", func(t *testing.T) {
		var retries []int
		p := fast
		p.OnRetry = func(attempt int, wait time.Duration, err error) {
			if wait > p.MaxBackoff || !errors.Is(err, errTransient) {
				t.Errorf("OnRetry(%d, %s, %v)", attempt, wait, err)
			}
			retries = append(retries, attempt)
		}
		err := p.Do(context.Background(), func(attempt int) (time.Duration, bool, error) {
			if attempt < 3 {
				return time.Hour, true, errTransient // Retry-After beyond MaxBackoff: capped
			}
			return 0, false, nil
		})
		if err != nil || len(retries) != 2 {
			t.Fatalf("Do = %v after retries %v, want nil after [1 2]", err, retries)
		}
	})

	t.Run("permanent error as is", func(t *testing.T) {
		calls := 0
		err := fast.Do(context.Background(), func(int) (time.Duration, bool, error) {
			calls++
			return 0, false, errPermanent
		})
		if err != errPermanent || calls != 1 {
			t.Fatalf("Do = %v after %d calls, want errPermanent after 1", err, calls)
		}
	})

	t.Run("exhausted", func(t *testing.T) {
		calls := 0
		err := fast.Do(context.Background(), func(int) (time.Duration, bool, error) {
			calls++
			return 0, true, errTransient
		})
		if !errors.Is(err, ErrUnavailable) || !errors.Is(err, errTransient) || calls != 3 {
			t.Fatalf("Do = %v after %d calls, want ErrUnavailable and the last error after 3", err, calls)
		}
	})

	t.Run("context done before the first attempt", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		err := fast.Do(ctx, func(int) (time.Duration, bool, error) {
			t.Error("fn called with a done context")
			return 0, false, nil
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Do = %v, want context.Canceled", err)
		}
	})

	t.Run("context ends during the wait", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		p := RetryPolicy{MaxAttempts: 5, MinBackoff: time.Hour, MaxBackoff: time.Hour}
		p.OnRetry = func(int, time.Duration, error) { cancel() }
		err := p.Do(ctx, func(int) (time.Duration, bool, error) { return 0, true, errTransient })
		if !errors.Is(err, context.Canceled) || !errors.Is(err, errTransient) {
			t.Fatalf("Do = %v, want context.Canceled and the last error", err)
		}
	})
}

func TestRetryPolicyValidate(t *testing.T) {
	if err := (RetryPolicy{}).Validate(); err != nil {
		t.Fatalf("zero policy: %v", err)
	}
	if err := (RetryPolicy{MaxAttempts: -2}).Validate(); err == nil {
		t.Fatal("negative MaxAttempts accepted")
	}
}

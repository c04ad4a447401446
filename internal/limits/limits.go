// Package limits holds the per-tenant limits: the largest turn, a turn rate and a retrieve rate,
// each a token bucket per tenant. Turn rates are measured on the time JetStream stored each turn,
// so replaying the stream takes the same decisions; retrieve rates on the wall clock. Limits are
// enforced per process: with N ingest processes a tenant's sessions spread over N buckets.
package limits

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limit is one tenant's limits; zero means no limit.
type Limit struct {
	MaxTurnBytes       int     `json:"max_turn_bytes,omitempty"`
	TurnsPerSecond     float64 `json:"turns_per_second,omitempty"`
	TurnBurst          int     `json:"turn_burst,omitempty"`
	RetrievesPerSecond float64 `json:"retrieves_per_second,omitempty"`
	RetrieveBurst      int     `json:"retrieve_burst,omitempty"`
}

// Config is the default limit and the tenants that differ from it.
type Config struct {
	Default Limit            `json:"default"`
	Tenants map[string]Limit `json:"tenants,omitempty"`
}

// Load reads a JSON limits file: {"default": {...}, "tenants": {"acme": {...}}}.
func Load(path string) (Config, error) {
	var c Config
	data, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("reading limits: %w", err)
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("reading limits %s: %w", path, err)
	}
	return c, c.Validate()
}

// Validate names the first bad value.
func (c Config) Validate() error {
	check := func(who string, l Limit) error {
		if l.MaxTurnBytes < 0 || l.TurnsPerSecond < 0 || l.TurnBurst < 0 || l.RetrievesPerSecond < 0 || l.RetrieveBurst < 0 {
			return fmt.Errorf("limits of %s: values must not be negative", who)
		}
		return nil
	}
	if err := check("the default", c.Default); err != nil {
		return err
	}
	for t, l := range c.Tenants {
		if err := check("tenant "+t, l); err != nil {
			return err
		}
	}
	return nil
}

// Limiter enforces a Config. The zero value (or nil) limits nothing.
type Limiter struct {
	cfg       Config
	mu        sync.Mutex
	turns     map[string]*rate.Limiter
	retrieves map[string]*rate.Limiter
}

// New returns a limiter for cfg.
func New(cfg Config) *Limiter {
	return &Limiter{cfg: cfg, turns: map[string]*rate.Limiter{}, retrieves: map[string]*rate.Limiter{}}
}

// For returns tenant's limits.
func (l *Limiter) For(tenant string) Limit {
	if l == nil {
		return Limit{}
	}
	if t, ok := l.cfg.Tenants[tenant]; ok {
		return t
	}
	return l.cfg.Default
}

func bucket(m map[string]*rate.Limiter, tenant string, perSecond float64, burst int) *rate.Limiter {
	b, ok := m[tenant]
	if !ok {
		b = rate.NewLimiter(rate.Limit(perSecond), max(burst, 1))
		m[tenant] = b
	}
	return b
}

// AllowTurn reports whether tenant may have one more turn stored at at.
func (l *Limiter) AllowTurn(tenant string, at time.Time) bool {
	lim := l.For(tenant)
	if lim.TurnsPerSecond <= 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return bucket(l.turns, tenant, lim.TurnsPerSecond, lim.TurnBurst).AllowN(at, 1)
}

// AllowRetrieve reports whether tenant may make one more retrieve request now.
func (l *Limiter) AllowRetrieve(tenant string, now time.Time) bool {
	lim := l.For(tenant)
	if lim.RetrievesPerSecond <= 0 {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return bucket(l.retrieves, tenant, lim.RetrievesPerSecond, lim.RetrieveBurst).AllowN(now, 1)
}

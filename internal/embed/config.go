package embed

import (
	"fmt"
	"time"

	"github.com/agentmem/agentmem/internal/llm"
)

// Defaults of Config.
const (
	DefaultBatchSize    = 64
	DefaultTimeout      = 30 * time.Second
	DefaultCacheEntries = 100_000
)

// Config configures an OpenAI-compatible embedding client: its endpoint (llm.Endpoint: base
// URL, API key, model, per-attempt Timeout (default 30s), retries, metrics) and how the client
// uses it. A Config without BaseURL and Model means "no embeddings configured" (see Enabled);
// zero fields otherwise take the documented defaults.
type Config struct {
	llm.Endpoint
	// Dimensions asks the model for vectors of this length (0: the model's default). Only
	// some models support it.
	Dimensions int
	// BatchSize bounds the texts sent in one request (default 64).
	BatchSize int
	// CacheEntries bounds the vectors kept in memory, least recently used out first
	// (default 100,000; negative disables the cache).
	CacheEntries int
}

func (c Config) withDefaults() Config {
	c.Endpoint = c.Endpoint.WithDefaults(DefaultTimeout)
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.CacheEntries == 0 {
		c.CacheEntries = DefaultCacheEntries
	}
	return c
}

// Validate names the first field that cannot work once defaults are applied. A Config with
// neither BaseURL nor Model (no embeddings) is valid; one with only one of them is not.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.BaseURL == "" && c.Model == "" {
		return nil
	}
	if err := c.Endpoint.Validate(); err != nil {
		return fmt.Errorf("embed: %w", err)
	}
	switch {
	case c.Dimensions < 0:
		return fmt.Errorf("embed: Dimensions must not be negative, got %d", c.Dimensions)
	case c.BatchSize < 1:
		return fmt.Errorf("embed: BatchSize must be at least 1, got %d", c.BatchSize)
	}
	return nil
}

// String describes the effective configuration (defaults applied) for start-up logs, with the
// API key masked.
func (c Config) String() string {
	if c.BaseURL == "" && c.Model == "" {
		return "disabled"
	}
	c = c.withDefaults()
	return fmt.Sprintf("%s dimensions=%d batch_size=%d cache_entries=%d", c.Endpoint, c.Dimensions, c.BatchSize, c.CacheEntries)
}

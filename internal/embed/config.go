package embed

import (
	"errors"
	"fmt"
	"time"

	"github.com/agentmem/agentmem/internal/llm"
	"github.com/agentmem/agentmem/internal/metrics"
)

// Defaults of Config.
const (
	DefaultBatchSize    = 64
	DefaultTimeout      = 30 * time.Second
	DefaultCacheEntries = 100_000
)

// Config configures an OpenAI-compatible embedding client. A Config without BaseURL and Model
// means "no embeddings configured" (see Enabled); zero fields otherwise take the documented
// defaults.
type Config struct {
	// BaseURL is the OpenAI-compatible API root, e.g. https://api.openai.com/v1 or
	// http://localhost:11434/v1 (Ollama). "" means no embedding model is configured.
	BaseURL string
	// APIKey is sent as a bearer token; "" sends none. String masks it and nothing in this
	// package logs it.
	APIKey string
	// Model is the embedding model, e.g. text-embedding-3-small or nomic-embed-text.
	Model string
	// Dimensions asks the model for vectors of this length (0: the model's default). Only
	// some models support it.
	Dimensions int
	// BatchSize bounds the texts sent in one request (default 64).
	BatchSize int
	// Timeout bounds each attempt (default 30s).
	Timeout time.Duration
	// MaxAttempts is the number of attempts per request including the first (default 5).
	MaxAttempts int
	// MinBackoff and MaxBackoff bound the exponential backoff with full jitter between
	// attempts (defaults 500ms and 30s); MaxBackoff also caps a server's Retry-After.
	MinBackoff, MaxBackoff time.Duration
	// CacheEntries bounds the vectors kept in memory, least recently used out first
	// (default 100,000; negative disables the cache).
	CacheEntries int
	// Metrics records requests, tokens and failed attempts by provider and model; nil records
	// nothing.
	Metrics *metrics.Metrics
}

func (c Config) withDefaults() Config {
	if c.BatchSize == 0 {
		c.BatchSize = DefaultBatchSize
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.CacheEntries == 0 {
		c.CacheEntries = DefaultCacheEntries
	}
	p := c.retryPolicy().WithDefaults()
	c.MaxAttempts, c.MinBackoff, c.MaxBackoff = p.MaxAttempts, p.MinBackoff, p.MaxBackoff
	return c
}

func (c Config) retryPolicy() llm.RetryPolicy {
	return llm.RetryPolicy{MaxAttempts: c.MaxAttempts, MinBackoff: c.MinBackoff, MaxBackoff: c.MaxBackoff}
}

// Enabled reports whether an embedding model is configured: BaseURL and Model are both set.
func (c Config) Enabled() bool { return c.BaseURL != "" && c.Model != "" }

// Validate names the first field that cannot work once defaults are applied. A Config with
// neither BaseURL nor Model (no embeddings) is valid; one with only one of them is not.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.BaseURL == "" && c.Model == "" {
		return nil
	}
	switch {
	case c.BaseURL == "":
		return errors.New("embed: BaseURL is required when Model is set")
	case c.Model == "":
		return errors.New("embed: Model is required when BaseURL is set")
	case c.Dimensions < 0:
		return fmt.Errorf("embed: Dimensions must not be negative, got %d", c.Dimensions)
	case c.BatchSize < 1:
		return fmt.Errorf("embed: BatchSize must be at least 1, got %d", c.BatchSize)
	case c.Timeout < 0:
		return fmt.Errorf("embed: Timeout must not be negative, got %s", c.Timeout)
	}
	if _, err := llm.ParseBaseURL(c.BaseURL); err != nil {
		return fmt.Errorf("embed: BaseURL: %w", err)
	}
	if err := c.retryPolicy().Validate(); err != nil {
		return fmt.Errorf("embed: %w", err)
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
	return fmt.Sprintf("base_url=%s model=%s api_key=%s dimensions=%d batch_size=%d timeout=%s max_attempts=%d backoff=%s..%s cache_entries=%d",
		llm.RedactURL(c.BaseURL), c.Model, llm.MaskSecret(c.APIKey), c.Dimensions, c.BatchSize, c.Timeout,
		c.MaxAttempts, c.MinBackoff, c.MaxBackoff, c.CacheEntries)
}

package llm

import (
	"github.com/agentmem/agentmem/internal/metrics"

	"errors"
	"fmt"
	"time"
)

// Defaults of Config.
const (
	DefaultTimeout        = 60 * time.Second
	DefaultMaxConcurrency = 4
	DefaultTemperature    = 0.2
)

// Config configures a chat Client. A Config without BaseURL and Model means "no LLM
// configured" (see Enabled); zero fields otherwise take the documented defaults.
type Config struct {
	// BaseURL is the OpenAI-compatible API root, e.g. https://api.openai.com/v1 or
	// http://localhost:11434/v1 (Ollama). "" means no LLM is configured.
	BaseURL string
	// APIKey is sent as a bearer token; "" sends none (local servers). It is a secret: String
	// masks it and nothing in this package logs it.
	APIKey string
	// Model is the model name sent with every request.
	Model string
	// Timeout bounds each attempt (default 60s).
	Timeout time.Duration
	// MaxConcurrency bounds the calls in flight at once per Client (default 4).
	MaxConcurrency int
	// MaxAttempts is the number of attempts per call including the first (default 5).
	MaxAttempts int
	// MinBackoff and MaxBackoff bound the exponential backoff with full jitter between
	// attempts (defaults 500ms and 30s); MaxBackoff also caps a server's Retry-After.
	MinBackoff, MaxBackoff time.Duration
	// Temperature is the sampling temperature (default 0.2; a request may override it). A
	// negative value sends none, leaving the server's default (for models that accept no
	// other).
	Temperature float64
	// Metrics records calls, tokens and failed attempts by provider and model; nil records
	// nothing.
	Metrics *metrics.Metrics
}

func (c Config) withDefaults() Config {
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxConcurrency == 0 {
		c.MaxConcurrency = DefaultMaxConcurrency
	}
	if c.Temperature == 0 {
		c.Temperature = DefaultTemperature
	}
	p := c.retryPolicy().WithDefaults()
	c.MaxAttempts, c.MinBackoff, c.MaxBackoff = p.MaxAttempts, p.MinBackoff, p.MaxBackoff
	return c
}

func (c Config) retryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: c.MaxAttempts, MinBackoff: c.MinBackoff, MaxBackoff: c.MaxBackoff}
}

// Enabled reports whether an LLM is configured: BaseURL and Model are both set.
func (c Config) Enabled() bool { return c.BaseURL != "" && c.Model != "" }

// Validate names the first field that cannot work once defaults are applied. A Config with
// neither BaseURL nor Model (no LLM) is valid; one with only one of them is not.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.BaseURL == "" && c.Model == "" {
		return nil
	}
	switch {
	case c.BaseURL == "":
		return errors.New("llm: BaseURL is required when Model is set")
	case c.Model == "":
		return errors.New("llm: Model is required when BaseURL is set")
	case c.Timeout < 0:
		return fmt.Errorf("llm: Timeout must not be negative, got %s", c.Timeout)
	case c.MaxConcurrency < 1:
		return fmt.Errorf("llm: MaxConcurrency must be at least 1, got %d", c.MaxConcurrency)
	case c.Temperature > 2:
		return fmt.Errorf("llm: Temperature must be at most 2, got %g", c.Temperature)
	}
	if _, err := ParseBaseURL(c.BaseURL); err != nil {
		return fmt.Errorf("llm: BaseURL: %w", err)
	}
	if err := c.retryPolicy().Validate(); err != nil {
		return fmt.Errorf("llm: %w", err)
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
	return fmt.Sprintf("base_url=%s model=%s api_key=%s timeout=%s max_concurrency=%d max_attempts=%d backoff=%s..%s temperature=%g",
		RedactURL(c.BaseURL), c.Model, MaskSecret(c.APIKey), c.Timeout, c.MaxConcurrency,
		c.MaxAttempts, c.MinBackoff, c.MaxBackoff, c.Temperature)
}

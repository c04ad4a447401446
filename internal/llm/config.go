package llm

import (
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/agentmem/agentmem/internal/metrics"
)

// Defaults of Config.
const (
	DefaultTimeout        = 60 * time.Second
	DefaultMaxConcurrency = 4
	DefaultTemperature    = 0.2
)

// Endpoint is where and how to call an OpenAI-compatible API: the part of the configuration
// that chat (Config) and embeddings (package embed's Config) share. An Endpoint without BaseURL
// and Model means "not configured" (see Enabled).
type Endpoint struct {
	// BaseURL is the OpenAI-compatible API root, e.g. https://api.openai.com/v1 or
	// http://localhost:11434/v1 (Ollama). "" means none is configured.
	BaseURL string
	// APIKey is sent as a bearer token; "" sends none (local servers). It is a secret: String
	// masks it and nothing in this package or package embed logs it.
	APIKey string
	// Model is the model name sent with every request.
	Model string
	// Timeout bounds each attempt (default: the client's, 60s for chat, 30s for embeddings).
	Timeout time.Duration
	// MaxAttempts is the number of attempts per call including the first (default 5).
	MaxAttempts int
	// MinBackoff and MaxBackoff bound the exponential backoff with full jitter between
	// attempts (defaults 500ms and 30s); MaxBackoff also caps a server's Retry-After.
	MinBackoff, MaxBackoff time.Duration
	// Metrics records calls, tokens and failed attempts by provider and model; nil records
	// nothing.
	Metrics *metrics.Metrics
}

// Enabled reports whether an endpoint is configured: BaseURL and Model are both set.
func (e Endpoint) Enabled() bool { return e.BaseURL != "" && e.Model != "" }

// WithDefaults returns e with its zero fields set to the defaults, timeout for Timeout.
func (e Endpoint) WithDefaults(timeout time.Duration) Endpoint {
	if e.Timeout == 0 {
		e.Timeout = timeout
	}
	p := e.RetryPolicy().WithDefaults()
	e.MaxAttempts, e.MinBackoff, e.MaxBackoff = p.MaxAttempts, p.MinBackoff, p.MaxBackoff
	return e
}

// RetryPolicy returns the retry policy of e's attempts.
func (e Endpoint) RetryPolicy() RetryPolicy {
	return RetryPolicy{MaxAttempts: e.MaxAttempts, MinBackoff: e.MinBackoff, MaxBackoff: e.MaxBackoff}
}

// Validate names the first field that cannot work. An Endpoint with neither BaseURL nor Model
// (none configured) is valid; one with only one of them is not, nor a negative Timeout, a base
// URL ParseBaseURL refuses or a retry policy RetryPolicy.Validate refuses.
func (e Endpoint) Validate() error {
	if e.BaseURL == "" && e.Model == "" {
		return nil
	}
	switch {
	case e.BaseURL == "":
		return fieldError("BaseURL", "is required when Model is set")
	case e.Model == "":
		return fieldError("Model", "is required when BaseURL is set")
	case e.Timeout < 0:
		return fieldError("Timeout", "must not be negative, got %s", e.Timeout)
	}
	if _, err := ParseBaseURL(e.BaseURL); err != nil {
		return fieldError("BaseURL", ": %w", err)
	}
	return e.RetryPolicy().Validate()
}

// fieldError is an error whose message starts with the field it names, for a caller to prefix
// with its package ("llm: ", "embed: ").
func fieldError(field, format string, args ...any) error {
	if !strings.HasPrefix(format, ":") {
		field += " "
	}
	return fmt.Errorf(field+format, args...)
}

// String describes e for start-up logs, with the API key masked and any password in the base
// URL redacted.
func (e Endpoint) String() string {
	return fmt.Sprintf("base_url=%s model=%s api_key=%s timeout=%s max_attempts=%d backoff=%s..%s",
		RedactURL(e.BaseURL), e.Model, MaskSecret(e.APIKey), e.Timeout, e.MaxAttempts, e.MinBackoff, e.MaxBackoff)
}

// Open checks e for a client named what ("llm", "embed") of a kind of model (noun: "LLM",
// "embedding model") and returns e's base URL parsed. It fails with "<what>: no <noun>
// configured" when e is not Enabled, with validate's error (the client's whole Validate) when
// that fails, and when the base URL does not parse.
func (e Endpoint) Open(what, noun string, validate func() error) (*url.URL, error) {
	if !e.Enabled() {
		return nil, fmt.Errorf("%s: no %s configured (BaseURL and Model are required)", what, noun)
	}
	if err := validate(); err != nil {
		return nil, err
	}
	base, err := ParseBaseURL(e.BaseURL)
	if err != nil {
		return nil, fmt.Errorf("%s: BaseURL: %w", what, err)
	}
	return base, nil
}

// Config configures a chat Client: its Endpoint and how the client uses it. Zero fields take
// the documented defaults.
type Config struct {
	Endpoint
	// MaxConcurrency bounds the calls in flight at once per Client (default 4).
	MaxConcurrency int
	// Temperature is the sampling temperature (default 0.2; a request may override it). A
	// negative value sends none, leaving the server's default (for models that accept no
	// other).
	Temperature float64
}

func (c Config) withDefaults() Config {
	c.Endpoint = c.Endpoint.WithDefaults(DefaultTimeout)
	if c.MaxConcurrency == 0 {
		c.MaxConcurrency = DefaultMaxConcurrency
	}
	if c.Temperature == 0 {
		c.Temperature = DefaultTemperature
	}
	return c
}

// Validate names the first field that cannot work once defaults are applied. A Config with
// neither BaseURL nor Model (no LLM) is valid; one with only one of them is not.
func (c Config) Validate() error {
	c = c.withDefaults()
	if c.BaseURL == "" && c.Model == "" {
		return nil
	}
	if err := c.Endpoint.Validate(); err != nil {
		return fmt.Errorf("llm: %w", err)
	}
	switch {
	case c.MaxConcurrency < 1:
		return fmt.Errorf("llm: MaxConcurrency must be at least 1, got %d", c.MaxConcurrency)
	case c.Temperature > 2:
		return fmt.Errorf("llm: Temperature must be at most 2, got %g", c.Temperature)
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
	return fmt.Sprintf("%s max_concurrency=%d temperature=%g", c.Endpoint, c.MaxConcurrency, c.Temperature)
}

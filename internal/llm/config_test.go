package llm_test

import (
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/llm"
)

func TestConfigValidate(t *testing.T) {
	ok := llm.Config{Endpoint: llm.Endpoint{BaseURL: "http://localhost:11434/v1", Model: "qwen2.5"}}
	for _, tc := range []struct {
		name  string
		edit  func(*llm.Config)
		field string // "" when valid
	}{
		{"defaults", func(*llm.Config) {}, ""},
		{"disabled", func(c *llm.Config) { *c = llm.Config{} }, ""},
		{"no model", func(c *llm.Config) { c.Model = "" }, "Model"},
		{"no base URL", func(c *llm.Config) { c.BaseURL = "" }, "BaseURL"},
		{"scheme", func(c *llm.Config) { c.BaseURL = "ftp://example.com/v1" }, "BaseURL"},
		{"relative URL", func(c *llm.Config) { c.BaseURL = "localhost:11434/v1" }, "BaseURL"},
		{"unparsable URL", func(c *llm.Config) { c.BaseURL = "http://[::1" }, "BaseURL"},
		{"negative timeout", func(c *llm.Config) { c.Timeout = -time.Second }, "Timeout"},
		{"negative concurrency", func(c *llm.Config) { c.MaxConcurrency = -1 }, "MaxConcurrency"},
		{"negative attempts", func(c *llm.Config) { c.MaxAttempts = -1 }, "MaxAttempts"},
		{"negative min backoff", func(c *llm.Config) { c.MinBackoff = -time.Second }, "MinBackoff"},
		{"max below min backoff", func(c *llm.Config) { c.MinBackoff, c.MaxBackoff = time.Minute, time.Second }, "MaxBackoff"},
		{"temperature", func(c *llm.Config) { c.Temperature = 2.5 }, "Temperature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.edit(&cfg)
			err := cfg.Validate()
			switch {
			case tc.field == "" && err != nil:
				t.Fatalf("Validate: %v", err)
			case tc.field != "" && (err == nil || !strings.Contains(err.Error(), tc.field)):
				t.Fatalf("Validate = %v, want an error naming %s", err, tc.field)
			}
		})
	}
}

func TestConfigEnabledAndNew(t *testing.T) {
	for _, cfg := range []llm.Config{
		{},
		{Endpoint: llm.Endpoint{BaseURL: "http://localhost:11434/v1"}},
		{Endpoint: llm.Endpoint{Model: "gpt-4o-mini"}},
	} {
		if cfg.Enabled() {
			t.Errorf("%+v: Enabled, want not", cfg)
		}
		if _, err := llm.New(cfg, zerolog.Nop()); err == nil {
			t.Errorf("%+v: New succeeded, want an error", cfg)
		}
	}
	if _, err := llm.New(llm.Config{Endpoint: llm.Endpoint{BaseURL: "mailto:x@example.com", Model: "m"}}, zerolog.Nop()); err == nil {
		t.Error("New accepted a mailto base URL")
	}
}

func TestConfigStringMasksKey(t *testing.T) {
	cfg := llm.Config{Endpoint: llm.Endpoint{BaseURL: "https://user:hunter2@api.openai.com/v1", APIKey: testKey, Model: "gpt-4o-mini"}}
	s := cfg.String()
	for _, secret := range []string{testKey, "sk-", "hunter2"} {
		if strings.Contains(s, secret) {
			t.Fatalf("String() = %q reveals %q", s, secret)
		}
	}
	for _, want := range []string{"api_key=****", "model=gpt-4o-mini", "api.openai.com/v1", "timeout=1m0s", "max_concurrency=4", "max_attempts=5"} {
		if !strings.Contains(s, want) {
			t.Errorf("String() = %q, want it to contain %q", s, want)
		}
	}
	cfg.APIKey = ""
	if s := cfg.String(); !strings.Contains(s, `api_key=""`) {
		t.Errorf("String() = %q, want api_key=\"\" without a key", s)
	}
	if s := (llm.Config{}).String(); s != "disabled" {
		t.Errorf("String() of the zero Config = %q, want disabled", s)
	}
}

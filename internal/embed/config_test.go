package embed_test

import (
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/embed"
	"github.com/agentmem/agentmem/internal/llm"
)

func TestConfigValidate(t *testing.T) {
	ok := embed.Config{Endpoint: llm.Endpoint{BaseURL: "https://api.openai.com/v1", Model: testModel}}
	for _, tc := range []struct {
		name  string
		edit  func(*embed.Config)
		field string // "" when valid
	}{
		{"defaults", func(*embed.Config) {}, ""},
		{"disabled", func(c *embed.Config) { *c = embed.Config{} }, ""},
		{"no model", func(c *embed.Config) { c.Model = "" }, "Model"},
		{"no base URL", func(c *embed.Config) { c.BaseURL = "" }, "BaseURL"},
		{"scheme", func(c *embed.Config) { c.BaseURL = "unix:///tmp/sock" }, "BaseURL"},
		{"dimensions", func(c *embed.Config) { c.Dimensions = -1 }, "Dimensions"},
		{"batch size", func(c *embed.Config) { c.BatchSize = -64 }, "BatchSize"},
		{"timeout", func(c *embed.Config) { c.Timeout = -time.Second }, "Timeout"},
		{"attempts", func(c *embed.Config) { c.MaxAttempts = -1 }, "MaxAttempts"},
		{"backoff", func(c *embed.Config) { c.MinBackoff, c.MaxBackoff = time.Second, time.Millisecond }, "MaxBackoff"},
		{"no cache", func(c *embed.Config) { c.CacheEntries = -1 }, ""},
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
	for _, cfg := range []embed.Config{{}, {Endpoint: llm.Endpoint{BaseURL: "http://localhost:11434/v1"}}, {Endpoint: llm.Endpoint{Model: testModel}}} {
		if cfg.Enabled() {
			t.Errorf("%+v: Enabled, want not", cfg)
		}
		if _, err := embed.NewOpenAI(cfg, zerolog.Nop()); err == nil {
			t.Errorf("%+v: NewOpenAI succeeded, want an error", cfg)
		}
	}
}

func TestConfigStringMasksKey(t *testing.T) {
	cfg := embed.Config{Endpoint: llm.Endpoint{BaseURL: "http://localhost:11434/v1", APIKey: testKey, Model: "nomic-embed-text"}}
	s := cfg.String()
	if strings.Contains(s, testKey) || strings.Contains(s, "sk-") {
		t.Fatalf("String() = %q reveals the key", s)
	}
	for _, want := range []string{"api_key=****", "model=nomic-embed-text", "batch_size=64", "timeout=30s", "cache_entries=100000"} {
		if !strings.Contains(s, want) {
			t.Errorf("String() = %q, want it to contain %q", s, want)
		}
	}
	cfg.APIKey = ""
	if s := cfg.String(); !strings.Contains(s, `api_key=""`) {
		t.Errorf("String() = %q, want api_key=\"\" without a key", s)
	}
}

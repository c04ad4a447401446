package settings

import (
	"flag"
	"strings"
	"testing"

	"github.com/rs/zerolog"

	"github.com/agentmem/agentmem/internal/embed/wordvec"
)

func TestEmbedder(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		want string // embedder name, "" for none, "error" for an error
	}{
		{"default is keywords only", nil, nil, ""},
		{"auto is keywords only without an endpoint", []string{"--embed", "auto"}, nil, ""},
		{"local", []string{"--embed", "local"}, nil, wordvec.Name},
		{"off", []string{"--embed", "off"}, nil, ""},
		{"off from the environment", nil, map[string]string{"AGENTMEM_EMBED": "off"}, ""},
		{"endpoint", []string{"--embed-base-url", "http://127.0.0.1:11434/v1", "--embed-model", "nomic-embed-text"}, nil, "openai-compatible:nomic-embed-text"},
		{"endpoint from the environment", nil, map[string]string{"AGENTMEM_EMBED_BASE_URL": "http://127.0.0.1:11434/v1", "AGENTMEM_EMBED_MODEL": "bge-m3"}, "openai-compatible:bge-m3"},
		{"local and an endpoint", []string{"--embed", "local", "--embed-base-url", "http://127.0.0.1:11434/v1", "--embed-model", "m"}, nil, "error"},
		{"off and an endpoint", []string{"--embed", "off", "--embed-model", "m"}, nil, "error"},
		{"endpoint without a model", []string{"--embed-base-url", "http://127.0.0.1:11434/v1"}, nil, "error"},
		{"unknown mode", []string{"--embed", "glove"}, nil, "error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			fs := flag.NewFlagSet("test", flag.ContinueOnError)
			c := BindEmbed(fs)
			if err := Parse(fs, tc.args); err != nil {
				t.Fatal(err)
			}
			e, err := Embedder(c, zerolog.Nop())
			switch {
			case tc.want == "error":
				if err == nil {
					t.Fatalf("no error, embedder %v", e)
				}
				if !strings.Contains(err.Error(), "embed") {
					t.Errorf("error %q does not name the flag", err)
				}
			case err != nil:
				t.Fatal(err)
			case tc.want == "":
				if e != nil {
					t.Fatalf("embedder %q, want none", e.Name())
				}
			case e == nil || e.Name() != tc.want:
				t.Fatalf("embedder %v, want %q", e, tc.want)
			}
		})
	}
}

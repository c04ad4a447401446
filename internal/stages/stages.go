// Package stages is the registry of agentmem's stages: the one place, besides each stage's own
// command, that names every stage package. memoryd runs All; each worker command runs one of
// them (by its name).
package stages

import (
	"github.com/agentmem/agentmem/internal/compress"
	"github.com/agentmem/agentmem/internal/embedder"
	"github.com/agentmem/agentmem/internal/extract"
	"github.com/agentmem/agentmem/internal/ingest"
	"github.com/agentmem/agentmem/internal/retrieve"
	"github.com/agentmem/agentmem/internal/stage"
)

// Configs holds the settings of the stages that have some (the zero value: each stage's
// defaults).
type Configs struct {
	Ingest   ingest.Config
	Compress compress.Config
	Extract  extract.Config
	Embed    embedder.Config
	Retrieve retrieve.Config
}

// All lists every stage with its settings, in the order a runner builds them.
func All(c Configs) []stage.Stage {
	return []stage.Stage{
		ingest.Stage(c.Ingest),
		retrieve.Stage(c.Retrieve),
		compress.Stage(c.Compress),
		extract.Stage(c.Extract),
		embedder.Stage(c.Embed),
	}
}

// Defaults lists every stage with its default settings: their names, consumers and commands.
func Defaults() []stage.Stage { return All(Configs{}) }

// Command compressor runs the compressor worker against an existing NATS server or cluster: it
// turns memory.pressure events into Map-Reduce summaries, with an OpenAI-compatible LLM when one
// is configured (--llm-base-url, --llm-model) and the extractive summariser otherwise. Any number
// of compressors share one durable consumer.
package main

import "github.com/agentmem/agentmem/cmd/internal/runner"

func main() { runner.Main("compressor") }

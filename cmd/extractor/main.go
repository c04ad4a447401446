// Command extractor runs the fact extractor against an existing NATS server or cluster: it turns
// session ends and summaries into durable facts in the long-term store, with an OpenAI-compatible
// LLM when one is configured and the offline rules otherwise. Any number of extractors share its
// durable consumers.
package main

import "github.com/agentmem/agentmem/cmd/internal/runner"

func main() { runner.Main("extractor") }

// Command ingest runs the ingest worker against an existing NATS server or cluster (memoryd
// runs the same worker in-process). It creates the streams, buckets and consumers it needs if
// they are missing.
package main

import "github.com/agentmem/agentmem/cmd/internal/runner"

func main() { runner.Main("ingest") }

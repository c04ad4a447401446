// Command retriever runs the retriever (the agentmem-retriever micro service on
// memory.retrieve.*) against an existing NATS server or cluster; any number may run, they share
// a queue group.
package main

import "github.com/agentmem/agentmem/cmd/internal/runner"

func main() { runner.Main("retriever") }

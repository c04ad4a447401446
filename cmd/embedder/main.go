// Command embedder runs the embedding stage against an existing NATS server or cluster: it embeds
// every applied turn, summary and fact once with the configured embedder (--embed-*) and stores
// the vectors in the vector bucket, where retrievers read them. Any number of embedders share its
// durable consumers. Without an embedder configured it does nothing (retrieval ranks by
// keywords) and only serves its health endpoint.
package main

import "github.com/agentmem/agentmem/cmd/internal/runner"

func main() { runner.Main("embedder") }

// Package chaos holds agentmem's multi-process fault test (build tag chaos, `make chaos`): a real
// 3-node NATS JetStream cluster of nats-server processes, two processes of each worker, an agent
// publishing turns throughout, and faults — kill -9 of the node leading the turns stream, kill -9
// of an ingest process — after which every acknowledged turn must be stored exactly once and
// applied, and the agent must have seen no error. It is not part of `make test`: it builds the
// binaries and runs for about a minute.
package chaos

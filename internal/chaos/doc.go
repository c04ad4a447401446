// Package chaos holds agentmem's multi-process fault test (build tag chaos, `make chaos`): a real
// 3-node NATS JetStream cluster of nats-server processes, two processes of each worker, an agent
// and a plain nats.go publisher publishing turns throughout, and faults — kill -9 of the node
// leading the turns stream, kill -9 of an ingest process — after which every acknowledged turn
// must be stored exactly once and applied, and neither publisher may have seen an error. It is
// not part of `make test`: it builds the binaries and runs for about a minute.
//
// Without the tag (so in `make test`) it checks the plain publisher's documented settings in one
// process: they ride through a staged crash of the turns stream's leader, and docs/protocol.md
// shows them as they are.
package chaos

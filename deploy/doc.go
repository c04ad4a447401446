// Package deploy holds what runs agentmem on a NATS JetStream cluster: the container image
// (Dockerfile) and a compose file with a three-node cluster and two replicas of every worker. It
// has no Go code of its own; its tests check both files statically, against the flags the
// commands really define, because no container engine runs where the tests do. A test also
// checks that the repository's LICENSE and every package's metadata name the same license.
package deploy

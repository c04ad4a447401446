// Package deploy holds what runs agentmem on a NATS JetStream cluster: the container image
// (Dockerfile), a compose file with a three-node cluster and two replicas of every worker, and
// cluster-local.sh, the same cluster as plain processes on one machine without Docker. It has no
// Go code of its own. Its tests check the Dockerfile and the compose file statically, against
// the flags the commands really define, because no container engine runs where the tests do;
// they check the script's commands the same way and run it end to end (a node killed with
// kill -9 on the way). A test also checks that the repository's LICENSE and every package's
// metadata name the same license.
package deploy

#!/usr/bin/env bash
# agentmem on a three-node NATS JetStream cluster without Docker: nats-server and the workers
# as plain processes on this machine's loopback, each stream and bucket with three replicas.
# docs/deployment.md ("A cluster without Docker") describes it.
#
#   deploy/cluster-local.sh            up, demo, down: the whole check, about 30 s once built
#   deploy/cluster-local.sh up         build, start the nodes and the workers, wait until ready
#   deploy/cluster-local.sh demo       publish and retrieve a turn; kill -9 the node leading the
#                                      turns stream, publish again (stored), see it applied,
#                                      restart the node
#   deploy/cluster-local.sh status     which processes run
#   deploy/cluster-local.sh down       stop every process up started, remove the state directory
#   deploy/cluster-local.sh commands   print the commands up and demo run, without running them
#
# Environment:
#   CLUSTER_DIR      state: data, logs, pids, binaries (default ${TMPDIR:-/tmp}/agentmem-cluster)
#   CLUSTER_PORT     first client port (default 4222): the nodes' client ports are CLUSTER_PORT+0..2,
#                    their route ports +2000..2002, their monitoring ports +4000..4002, the workers'
#                    health ports +5000..5004
#   CLUSTER_BIN      a directory with the binaries already built (default: build into CLUSTER_DIR/bin)
#   CLUSTER_TIMEOUT  seconds to wait for each step (default 90)
#   GO               the go command (default go)
# AGENTMEM_* variables of the environment reach the workers (an LLM for the compressor and the
# extractor: AGENTMEM_LLM_BASE_URL, AGENTMEM_LLM_MODEL, AGENTMEM_LLM_API_KEY).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=${CLUSTER_DIR:-${TMPDIR:-/tmp}/agentmem-cluster}
PORT=${CLUSTER_PORT:-4222}
BIN=${CLUSTER_BIN:-$DIR/bin}
TIMEOUT=${CLUSTER_TIMEOUT:-90}
GO=${GO:-go}

NODES=(n1 n2 n3)
WORKERS=(ingest retriever embedder compressor extractor)
MARKER=.agentmem-cluster-local

say() { printf '==> %s\n' "$*"; }
die() {
	printf 'cluster-local: %s\n' "$*" >&2
	exit 1
}

# A cluster that is up keeps the ports and binaries it was started with: demo, status and down
# read them from its state.
case ${1:-run} in
demo | status | down)
	if [[ -f $DIR/env ]]; then
		while IFS='=' read -r key value; do
			case $key in
			PORT) PORT=$value ;;
			BIN) BIN=$value ;;
			esac
		done <"$DIR/env"
	fi
	;;
esac

case $PORT in
'' | *[!0-9]*) die "CLUSTER_PORT=$PORT: want a port number" ;;
esac
((PORT >= 1024 && PORT + 5004 <= 65535)) || die "CLUSTER_PORT=$PORT: want 1024-60531 (the ports used go up to CLUSTER_PORT+5004)"
case $TIMEOUT in
'' | *[!0-9]* | 0) die "CLUSTER_TIMEOUT=$TIMEOUT: want a whole number of seconds" ;;
esac

client_port() { echo $((PORT + $1)); }  # node index 0..2
route_port() { echo $((PORT + 2000 + $1)); }
mon_port() { echo $((PORT + 4000 + $1)); }
health_port() { echo $((PORT + 5000 + $1)); } # worker index 0..4

URLS=$(for i in 0 1 2; do printf 'nats://127.0.0.1:%s,' "$(client_port "$i")"; done)
URLS=${URLS%,}

# node_cmd i sets CMD to the command of node i: its client, route and monitoring ports on
# loopback, JetStream on with its own store, routes to the other two.
node_cmd() {
	local i=$1 routes="" j
	for j in 0 1 2; do
		((j == i)) || routes+="nats://127.0.0.1:$(route_port "$j"),"
	done
	CMD=("$BIN/nats-server" --name "${NODES[i]}" --addr 127.0.0.1 --port "$(client_port "$i")"
		--http_port "$(mon_port "$i")" --jetstream --store_dir "$DIR/${NODES[i]}"
		--cluster_name agentmem --cluster "nats://127.0.0.1:$(route_port "$i")" --routes "${routes%,}")
}

# worker_cmd i sets CMD to the command of worker i: every node's URL, three replicas of every
# stream and bucket, /healthz and /readyz on its health port.
worker_cmd() {
	local i=$1
	CMD=("$BIN/${WORKERS[i]}" --nats "$URLS" --replicas 3 --health-listen "127.0.0.1:$(health_port "$i")")
}

# memctl_cmd SUBCOMMAND ARGS... sets CMD to a memctl call against every node.
memctl_cmd() {
	local sub=$1
	shift
	CMD=("$BIN/memctl" "$sub" --nats "$URLS" "$@")
}

# http_ok URL succeeds when URL answers 2xx.
http_ok() {
	if command -v curl >/dev/null; then
		curl -fsS -o /dev/null --max-time 2 "$1" 2>/dev/null
	else
		wget -q -O /dev/null -T 2 "$1" 2>/dev/null
	fi
}

http_get() {
	if command -v curl >/dev/null; then
		curl -fsS --max-time 2 "$1" 2>/dev/null
	else
		wget -q -O - -T 2 "$1" 2>/dev/null
	fi
}

# port_busy P succeeds when something listens on 127.0.0.1:P.
port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pid_of() { cat "$DIR/pids/$1.pid" 2>/dev/null || true; }

# ours NAME succeeds when the process recorded for NAME runs, and is the binary start started
# (a pid left from an earlier boot may belong to another process by now).
ours() {
	local pid argv0
	pid=$(pid_of "$1")
	[[ -n $pid ]] && kill -0 "$pid" 2>/dev/null || return 1
	[[ -r /proc/$pid/cmdline ]] || return 0
	IFS= read -r -d '' argv0 <"/proc/$pid/cmdline" || true
	[[ $argv0 == "$(cat "$DIR/pids/$1.cmd" 2>/dev/null)" ]]
}

# start NAME starts CMD in the background, its output in logs/NAME.log, its pid in pids/NAME.pid.
start() {
	local name=$1
	nohup "${CMD[@]}" >>"$DIR/logs/$name.log" 2>&1 </dev/null &
	echo $! >"$DIR/pids/$name.pid"
	disown $!
	printf '%s' "${CMD[0]}" >"$DIR/pids/$name.cmd"
}

# tail_log NAME prints the end of a process's log to stderr.
tail_log() {
	printf -- '--- %s (last 20 lines of %s)\n' "$1" "$DIR/logs/$1.log" >&2
	tail -n 20 "$DIR/logs/$1.log" >&2 || true
}

# wait_until WHAT CHECK... runs CHECK every 0.2 s until it succeeds or TIMEOUT passes; every
# process named in WATCH must keep running meanwhile.
WATCH=()
wait_until() {
	local what=$1 deadline=$((SECONDS + TIMEOUT)) name
	shift
	until "$@"; do
		for name in "${WATCH[@]}"; do
			if ! ours "$name"; then
				tail_log "$name"
				die "$name exited while waiting for $what"
			fi
		done
		((SECONDS < deadline)) || die "$what: not after ${TIMEOUT}s (logs in $DIR/logs)"
		sleep 0.2
	done
}

node_healthy() { http_ok "http://127.0.0.1:$(mon_port "$1")/healthz?js-enabled-only=true"; }
worker_ready() { http_ok "http://127.0.0.1:$(health_port "$1")/readyz"; }

build() {
	if [[ -n ${CLUSTER_BIN:-} ]]; then
		local b
		for b in nats-server "${WORKERS[@]}" memctl; do
			[[ -x $BIN/$b ]] || die "CLUSTER_BIN=$BIN has no $b: build it, or leave CLUSTER_BIN unset to build into $DIR/bin"
		done
		return
	fi
	say "building nats-server (go.mod's version) and the workers into $BIN"
	mkdir -p "$BIN"
	(cd "$ROOT" && "$GO" build -o "$BIN/" github.com/nats-io/nats-server/v2 \
		./cmd/ingest ./cmd/retriever ./cmd/embedder ./cmd/compressor ./cmd/extractor ./cmd/memctl)
}

# check_free fails unless nothing of this cluster runs and its ports are free.
check_free() {
	local i p name
	for name in "${NODES[@]}" "${WORKERS[@]}"; do
		! ours "$name" || die "$name already runs (pid $(pid_of "$name")): deploy/cluster-local.sh down first, or another CLUSTER_DIR"
	done
	for i in 0 1 2; do
		for p in "$(client_port "$i")" "$(route_port "$i")" "$(mon_port "$i")"; do
			! port_busy "$p" || die "port $p is in use: stop what holds it (memoryd?) or move every port with CLUSTER_PORT"
		done
	done
	for i in 0 1 2 3 4; do
		! port_busy "$(health_port "$i")" || die "port $(health_port "$i") is in use: move every port with CLUSTER_PORT"
	done
}

up() {
	local i
	check_free
	mkdir -p "$DIR/logs" "$DIR/pids"
	touch "$DIR/$MARKER"
	build
	printf 'PORT=%s\nBIN=%s\n' "$PORT" "$BIN" >"$DIR/env"

	say "starting nats-server ${NODES[*]} (JetStream, data in $DIR/n1..n3; clients on $URLS)"
	for i in 0 1 2; do
		node_cmd "$i"
		start "${NODES[i]}"
	done
	WATCH=("${NODES[@]}")
	for i in 0 1 2; do
		wait_until "${NODES[i]} healthy" node_healthy "$i"
	done

	say "starting ${WORKERS[*]} (--replicas 3)"
	for i in 0 1 2 3 4; do
		worker_cmd "$i"
		start "${WORKERS[i]}"
	done
	WATCH=("${NODES[@]}" "${WORKERS[@]}")
	for i in 0 1 2 3 4; do
		wait_until "${WORKERS[i]} ready" worker_ready "$i"
	done
	# Ready means connected; the turns stream exists once ingest has provisioned it, and the
	# retriever answers once its service is registered: an empty search shows both.
	memctl_cmd search --tenant acme "ready?"
	wait_until "a first retrieve" quiet "${CMD[@]}"
	say "up: memctl --nats $URLS; logs in $DIR/logs; deploy/cluster-local.sh down stops it"
}

quiet() { "$@" >/dev/null 2>&1; }

# turns_leader prints the name of the node leading the turns stream, as a live node's
# monitoring endpoint reports it.
turns_leader() {
	local i json
	for i in 0 1 2; do
		ours "${NODES[i]}" || continue
		json=$(http_get "http://127.0.0.1:$(mon_port "$i")/jsz?streams=true") || continue
		# "name":"AGENTMEM_TURNS", … "cluster":{"name":"agentmem","leader":"n2", …
		json=$(printf '%s' "$json" | tr -d ' \n')
		json=${json#*\"name\":\"AGENTMEM_TURNS\"}
		[[ $json == *'"leader":"'* ]] || continue
		json=${json#*\"leader\":\"}
		printf '%s\n' "${json%%\"*}"
		return 0
	done
	return 1
}

# found QUERY WORD succeeds when a search of the demo session returns an entry with WORD.
found() {
	memctl_cmd search --tenant acme --session "$SESSION" "$1"
	"${CMD[@]}" 2>/dev/null | grep -qF -- "$2"
}

demo() {
	[[ -f $DIR/env ]] || die "nothing is up in $DIR: deploy/cluster-local.sh up first"
	local i name leader pid
	WATCH=()
	for name in "${NODES[@]}" "${WORKERS[@]}"; do
		ours "$name" || die "$name does not run: deploy/cluster-local.sh up first"
	done
	SESSION=local-$(date +%s)-$$

	say "publish a turn and wait until ingest applied it"
	memctl_cmd publish --tenant acme --session "$SESSION" --user alice --wait "I love writing Go, it's my favourite language"
	"${CMD[@]}"
	say "retrieve it"
	memctl_cmd search --tenant acme --session "$SESSION" "what is my favourite programming language?"
	"${CMD[@]}" | tee "$DIR/search.out"
	grep -qF "favourite language" "$DIR/search.out" || die "the search did not return the turn just published"

	leader=$(turns_leader) || leader=n1
	for i in 0 1 2; do [[ ${NODES[i]} == "$leader" ]] && break; done
	((i < 3)) || die "the turns stream's leader is $leader, not a node of this cluster"
	pid=$(pid_of "$leader")
	say "kill -9 $leader (pid $pid), the node leading the turns stream"
	kill -9 "$pid"
	while kill -0 "$pid" 2>/dev/null; do sleep 0.1; done

	say "publish with $leader down: acknowledged once two of three nodes stored it (the client retries through the election)"
	memctl_cmd publish --tenant acme --session "$SESSION" --wait=false "I moved to Lisbon last year"
	"${CMD[@]}"
	say "wait until it is applied"
	WATCH=("${WORKERS[@]}")
	wait_until "the turn published with $leader down to be applied" found "did I move to Lisbon?" "Lisbon"
	memctl_cmd search --tenant acme --session "$SESSION" "did I move to Lisbon?"
	"${CMD[@]}"

	say "restart $leader on its data"
	node_cmd "$i"
	start "$leader"
	WATCH=("$leader")
	wait_until "$leader healthy again" node_healthy "$i"
	say "demo done: a turn published with a node down was stored and applied"
}

status() {
	local name
	for name in "${NODES[@]}" "${WORKERS[@]}"; do
		if ours "$name"; then
			printf '%-11s running (pid %s)\n' "$name" "$(pid_of "$name")"
		else
			printf '%-11s stopped\n' "$name"
		fi
	done
}

# stop stops every process up started, workers first (they drain), then the nodes, and sets
# STOPPED to how many there were.
stop() {
	local name pid pids=() deadline
	for name in "${WORKERS[@]}" "${NODES[@]}"; do
		if ours "$name"; then
			pid=$(pid_of "$name")
			kill -TERM "$pid" 2>/dev/null || true
			pids+=("$pid")
		fi
	done
	deadline=$((SECONDS + 15))
	for pid in "${pids[@]}"; do
		while kill -0 "$pid" 2>/dev/null && ((SECONDS < deadline)); do sleep 0.1; done
		if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
	done
	STOPPED=${#pids[@]}
}

down() {
	[[ -d $DIR ]] || return 0
	[[ -f $DIR/$MARKER ]] || die "$DIR was not made by this script (no $MARKER): not touching it"
	stop
	rm -rf "${DIR:?}/n1" "${DIR:?}/n2" "${DIR:?}/n3" "${DIR:?}/logs" "${DIR:?}/pids" "${DIR:?}/env" "${DIR:?}/search.out"
	[[ $BIN != "$DIR/bin" ]] || rm -rf "${DIR:?}/bin"
	rm -f "${DIR:?}/$MARKER"
	rmdir "$DIR" 2>/dev/null || true
	say "down: $STOPPED processes stopped, $DIR removed"
}

# finish is the exit trap of run: down after a run that passed; after a failure the processes
# stop and the state stays, logs included, for reading.
finish() {
	local rc=$?
	if ((rc == 0)); then
		down
	elif [[ -f $DIR/$MARKER ]]; then
		stop
		printf 'cluster-local: %s processes stopped; the logs stay in %s/logs (deploy/cluster-local.sh down removes them)\n' "$STOPPED" "$DIR" >&2
	fi
	exit "$rc"
}

# show prints CMD as one shell line, quoting only the words that need it.
show() {
	local w out=()
	for w in "${CMD[@]}" "$@"; do
		if [[ $w =~ ^[A-Za-z0-9_./:,=@+-]+$ ]]; then
			out+=("$w")
		else
			out+=("'${w//\'/\'\\\'\'}'")
		fi
	done
	printf '%s\n' "${out[*]}"
}

commands() {
	local i
	for i in 0 1 2; do
		node_cmd "$i"
		show
	done
	for i in 0 1 2 3 4; do
		worker_cmd "$i"
		show
	done
	SESSION=local-1
	for args in "publish --tenant acme --session $SESSION --user alice --wait" "publish --tenant acme --session $SESSION --wait=false" \
		"search --tenant acme --session $SESSION"; do
		# shellcheck disable=SC2086 # the words of args are meant to split
		memctl_cmd $args
		show "some text"
	done
}

case ${1:-run} in
up) up ;;
demo) demo ;;
status) status ;;
down) down ;;
commands) commands ;;
run)
	check_free # before the trap: a cluster already up is not this run's to stop
	trap finish EXIT
	up
	demo
	;;
-h | --help | help) sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//' ;;
*) die "unknown command ${1}: want up, demo, status, down, commands or run (the default)" ;;
esac

#!/usr/bin/env bash
# bench-compare: Strata's write path against etcd's, on this machine.
#
# Starts a 3-member etcd cluster on 127.0.20.1-3 (fsync on, as Strata) and a
# `strata dev` cluster on its own loopback subnet, runs `strata bench`
# against each (one 200-byte write per request at 1, 64 and 256 clients;
# Strata also batched, and REGIONAL once more in an open loop at half of the
# 256-client run's throughput, for the target "REGIONAL p99 under 10 ms at
# half of the maximum throughput"), and rewrites the "## bench-compare"
# section of BENCHMARKS.md from the JSON results. Every process it starts is stopped on
# exit; its temporary directory is removed unless a run failed.
#
# Environment (defaults in brackets):
#   BENCH_DURATION       length of each run [10s]
#   BENCH_CLIENTS        client counts of the one-write-per-request runs ["1 64 256"]
#   BENCH_BATCH          events per request of the batched Strata runs [1000]
#   BENCH_BATCH_CLIENTS  client counts of the batched runs ["1 16"]
#   BENCH_RATE_CLIENTS   workers of the open-loop REGIONAL run, at half of the
#                        req/s of the REGIONAL run with the most BENCH_CLIENTS [256]
#   BENCH_PAYLOAD        bytes per write [200]
#   BENCH_ONLY           all, etcd or strata [all]
#   BENCH_TLS            off, on or both: Strata without TLS, with `strata dev --tls`
#                        (TLS 1.3 API, mutual TLS between nodes, encrypted gossip;
#                        `strata bench` talks TLS through cluster.json), or both one
#                        after the other in this run, which renders the TLS rows
#                        beside the plain ones and their ratios [off]
#   BENCH_TLS_ORDER      plain-first or tls-first: which cluster runs first with
#                        BENCH_TLS=both (the second one's open loop takes the first
#                        one's rate); alternate it across runs to cancel drift [plain-first]
#   BENCH_REGION         Strata region written to in the regional runs [use1]
#   BENCH_STRATA_SUBNET  `strata dev --subnet`: regions on 127.0.N.x, 127.0.N+1.x, ... [40]
#   BENCH_ETCD_SUBNET    etcd members on 127.0.N.1-3 [20]
#   BENCH_READY_TIMEOUT  seconds to wait for a cluster to become ready [120]
#   BENCH_WAN_LATENCY    `strata dev --wan-latency` [0s: loopback, like etcd]
#   BENCH_OUT            file to rewrite [BENCHMARKS.md at the repository root]
#   STRATA_BIN           strata binary [built from this tree]
#   STRATA_DEV_FLAGS     extra flags for `strata dev`
#   GO                   go command [go]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
duration=${BENCH_DURATION:-10s}
clients=${BENCH_CLIENTS:-"1 64 256"}
batch=${BENCH_BATCH:-1000}
batch_clients=${BENCH_BATCH_CLIENTS:-"1 16"}
rate_clients=${BENCH_RATE_CLIENTS:-256}
payload=${BENCH_PAYLOAD:-200}
only=${BENCH_ONLY:-all}
region=${BENCH_REGION:-use1}
strata_subnet=${BENCH_STRATA_SUBNET:-40}
etcd_subnet=${BENCH_ETCD_SUBNET:-20}
ready_timeout=${BENCH_READY_TIMEOUT:-120}
wan_latency=${BENCH_WAN_LATENCY:-0s}
out=${BENCH_OUT:-$root/BENCHMARKS.md}
go=${GO:-go}

tls_mode=${BENCH_TLS:-off}
tls_order=${BENCH_TLS_ORDER:-plain-first}

case $only in all | etcd | strata) ;; *)
	echo "bench-compare: BENCH_ONLY=$only: want all, etcd or strata" >&2
	exit 2
	;;
esac
case $tls_mode in off | on | both) ;; *)
	echo "bench-compare: BENCH_TLS=$tls_mode: want off, on or both" >&2
	exit 2
	;;
esac
case $tls_order in plain-first | tls-first) ;; *)
	echo "bench-compare: BENCH_TLS_ORDER=$tls_order: want plain-first or tls-first" >&2
	exit 2
	;;
esac
# first_prefix: the results the open loop of the second cluster takes its
# rate from, with BENCH_TLS=both.
first_prefix=strata
[ "$tls_order" = tls-first ] && first_prefix=strata-tls

work=$(mktemp -d "${TMPDIR:-/tmp}/strata-bench-compare.XXXXXX")
mkdir -p "$work/results" "$work/etcd"
pids=()
failed=0

log() { echo "bench-compare: $*" >&2; }

# stop ends the processes this script started: SIGTERM, up to 10 s of
# grace, then SIGKILL. `strata dev` stops its nodes on SIGTERM and they die
# with it in any case.
stop() {
	local pid i alive
	for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
	for i in $(seq 100); do
		alive=0
		for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
		[ "$alive" = 0 ] && break
		sleep 0.1
	done
	for pid in "${pids[@]}"; do kill -KILL "$pid" 2>/dev/null || true; done
	pids=()
}

cleanup() {
	stop
	if [ "$failed" = 0 ]; then
		rm -rf "$work"
	else
		log "logs and results kept in $work"
	fi
}
trap cleanup EXIT
trap 'failed=1; exit 130' INT TERM

strata=${STRATA_BIN:-}
if [ -z "$strata" ]; then
	log "building strata"
	(cd "$root" && "$go" build -o "$work/bin/strata" ./cmd/strata)
	strata=$work/bin/strata
fi

# bench NAME ARGS...: one `strata bench` run, its JSON kept as NAME.json.
bench() {
	local name=$1
	shift
	log "run $name: $*"
	if "$strata" bench --no-progress -o json --duration "$duration" --payload "$payload" "$@" \
		>"$work/results/$name.json.part" 2>"$work/results/$name.log"; then
		mv "$work/results/$name.json.part" "$work/results/$name.json"
	else
		failed=1
		log "run $name failed: $(tail -n 3 "$work/results/$name.log")"
	fi
}

# req_per_s FILE: the requests_per_s of a `strata bench -o json` result.
req_per_s() {
	[ -s "$1" ] || return 1
	sed -n 's/^  "requests_per_s": \([0-9.eE+-]*\),\{0,1\}$/\1/p' "$1" | grep .
}

# bench_half_rate NAME_PREFIX RATE_PREFIX ARGS...: REGIONAL in an open
# loop at half of the req/s of the REGIONAL run RATE_PREFIX-regional-cN
# with the most clients N (the maximum throughput measured). The TLS runs
# of BENCH_TLS=both take the plain runs' rate, so the two open loops carry
# the same load.
bench_half_rate() {
	local prefix=$1 from=$2 most rps rate
	shift 2
	# shellcheck disable=SC2086 # $clients is a list of numbers
	most=$(printf '%s\n' $clients | sort -n | tail -n 1)
	if ! rps=$(req_per_s "$work/results/$from-regional-c$most.json"); then
		failed=1
		log "no req/s from $from-regional-c$most: no open-loop run"
		return
	fi
	rate=$(awk -v r="$rps" 'BEGIN { printf "%.0f", r / 2 }')
	if [ "$rate" -lt 1 ]; then
		failed=1
		log "$from-regional-c$most made $rps req/s: too few for an open-loop run"
		return
	fi
	bench "$prefix-regional-rate$rate" "$@" --tier regional --durability regional --clients "$rate_clients" --rate "$rate"
}

ensure_etcd() {
	command -v etcd >/dev/null && return
	log "etcd not found; installing Debian's etcd-server"
	local sudo=()
	[ "$(id -u)" = 0 ] || sudo=(sudo)
	"${sudo[@]}" apt-get install -y etcd-server ||
		{ "${sudo[@]}" apt-get update && "${sudo[@]}" apt-get install -y etcd-server; }
}

run_etcd() {
	ensure_etcd
	local i ip members="" addrs=""
	for i in 1 2 3; do
		ip=127.0.$etcd_subnet.$i
		members+="${members:+,}e$i=http://$ip:2380"
		addrs+="${addrs:+,}http://$ip:2379"
	done
	for i in 1 2 3; do
		ip=127.0.$etcd_subnet.$i
		etcd --name "e$i" --data-dir "$work/etcd/e$i" \
			--listen-client-urls "http://$ip:2379" --advertise-client-urls "http://$ip:2379" \
			--listen-peer-urls "http://$ip:2380" --initial-advertise-peer-urls "http://$ip:2380" \
			--initial-cluster "$members" --initial-cluster-state new \
			--initial-cluster-token "strata-bench-$$" --logger zap --log-level warn \
			>"$work/etcd/e$i.log" 2>&1 &
		pids+=($!)
	done
	log "etcd $(etcd_version) on $addrs"
	local wait=(--wait-ready "${ready_timeout}s") c
	for c in $clients; do
		bench "etcd-c$c" "${wait[@]}" --target etcd --addr "$addrs" --clients "$c"
		wait=()
	done
	stop
}

etcd_version() { etcd --version 2>/dev/null | awk '/^etcd Version:/ {print $3}'; }

# run_strata plain|tls: one `strata dev` cluster (with --tls for tls), every
# Strata row against it, then stop it. Results are strata-*.json, or
# strata-tls-*.json (their JSON says "tls": true).
run_strata() {
	local mode=$1 prefix=strata tls_flag=()
	if [ "$mode" = tls ]; then
		prefix=strata-tls tls_flag=(--tls)
	fi
	local rate_from=$prefix
	[ "$tls_mode" = both ] && rate_from=$first_prefix
	local data=$work/$prefix-dev
	# No workers: the bench measures the ledger's writes, and workers would
	# run the bench jobs' synthetic load on the same two cores.
	# shellcheck disable=SC2086 # STRATA_DEV_FLAGS is a list of flags
	"$strata" dev --data "$data" --subnet "$strata_subnet" --wan-latency "$wan_latency" --workers 0 \
		--ready-timeout "${ready_timeout}s" --log-level warn "${tls_flag[@]}" ${STRATA_DEV_FLAGS:-} \
		>"$work/$prefix-dev.log" 2>&1 &
	local dev=$!
	pids+=("$dev")
	local deadline=$((SECONDS + ready_timeout))
	while [ ! -s "$data/cluster.json" ]; do
		if ! kill -0 "$dev" 2>/dev/null; then
			failed=1
			log "strata dev ${tls_flag[*]} exited: $(tail -n 5 "$work/$prefix-dev.log")"
			return 1
		fi
		if [ "$SECONDS" -ge "$deadline" ]; then
			failed=1
			log "strata dev wrote no $data/cluster.json within ${ready_timeout}s"
			return 1
		fi
		sleep 0.2
	done
	log "strata dev ${tls_flag[*]} up ($data/cluster.json)"
	local cf=(--cluster-file "$data/cluster.json" --region "$region")
	local wait=(--wait-ready "${ready_timeout}s") c
	for c in $clients; do
		bench "$prefix-regional-c$c" "${cf[@]}" "${wait[@]}" --tier regional --durability regional --clients "$c"
		wait=()
	done
	bench_half_rate "$prefix" "$rate_from" "${cf[@]}"
	wait=(--wait-ready "${ready_timeout}s") # the gates, this time
	for c in $clients; do
		bench "$prefix-global-c$c" "${cf[@]}" "${wait[@]}" --tier global --durability global --clients "$c"
		wait=()
	done
	for c in $batch_clients; do
		bench "$prefix-regional-batch$batch-c$c" "${cf[@]}" --tier regional --durability regional --batch "$batch" --clients "$c"
	done
	stop
}

# tls_note: what the header says of the TLS rows.
tls_note() {
	case $tls_mode in
	on) echo "; every Strata row with \`strata dev --tls\` (TLS 1.3 API, mutual TLS between nodes and on Raft, encrypted gossip)" ;;
	both)
		local when="after the plain rows"
		[ "$tls_order" = tls-first ] && when="before the plain rows"
		echo "; rows marked TLS ran against \`strata dev --tls\` (TLS 1.3 API, mutual TLS between nodes and on Raft, encrypted gossip) in the same run, $when, on a cluster of their own"
		;;
	esac
}

if [ "$only" != strata ]; then run_etcd; fi
if [ "$only" != etcd ]; then
	case $tls_mode in
	off) run_strata plain || true ;;
	on) run_strata tls || true ;;
	both)
		if [ "$tls_order" = tls-first ]; then
			run_strata tls || true
			run_strata plain || true
		else
			run_strata plain || true
			run_strata tls || true
		fi
		;;
	esac
fi

if [ "$failed" != 0 ]; then
	log "a run failed; $out left unchanged"
	exit 1
fi
(cd "$root" && "$go" run ./test/bench/benchmd -in "$work/results" -out "$out" \
	-etcd-version "$( [ "$only" = strata ] || etcd_version)" \
	-strata "$( [ "$only" = etcd ] || echo "strata dev, 3 regions × (1 gate + 3 managers), one process per node, WAN latency $wan_latency; REGIONAL rows write to the 3 managers of $region, GLOBAL rows to the 3 gates$(tls_note)")")
log "updated $out"

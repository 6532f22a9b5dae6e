#!/usr/bin/env bash
# bench-progress: the progress data plane against the HTTP progress call,
# on this machine.
#
# Starts a `strata dev` cluster without reference workers (its regions on
# 127.0.N.x, 127.0.N+1.x, 127.0.N+2.x), then runs `strata bench progress`
# against the managers of one region: BENCH_RUNS times the same load over
# UDP frames and over HTTP progress calls, both as fast as possible; then
# once over UDP at half of the median UDP rate (the p99 target is "at half
# of the maximum rate") and once more there with 5 % loss, 5 % duplicates
# and reordering injected. It rewrites the "## bench-progress" section of
# BENCHMARKS.md from the JSON results and stops the cluster. Every process
# it starts is stopped on exit; its temporary directory is removed unless a
# run failed.
#
# Environment (defaults in brackets):
#   BENCH_DURATION       length of each run [10s]
#   BENCH_RUNS           runs of the UDP and HTTP rows [3]
#   BENCH_WORKERS        simulated workers [4]
#   BENCH_WORKFLOWS      workflows, shared by the workers [1000]
#   BENCH_REGION         region whose managers take the progress [use1]
#   BENCH_SUBNET         `strata dev --subnet` [100]
#   BENCH_READY_TIMEOUT  seconds to wait for the cluster to become ready [120]
#   BENCH_OUT            file to rewrite [BENCHMARKS.md at the repository root]
#   STRATA_BIN           strata binary [bin/strata, as `make build` makes it]
#   GO                   go command [go]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
duration=${BENCH_DURATION:-10s}
runs=${BENCH_RUNS:-3}
workers=${BENCH_WORKERS:-4}
workflows=${BENCH_WORKFLOWS:-1000}
region=${BENCH_REGION:-use1}
subnet=${BENCH_SUBNET:-100}
ready_timeout=${BENCH_READY_TIMEOUT:-120}
out=${BENCH_OUT:-$root/BENCHMARKS.md}
strata=${STRATA_BIN:-$root/bin/strata}
go=${GO:-go}

work=$(mktemp -d "${TMPDIR:-/tmp}/strata-bench-progress.XXXXXX")
mkdir -p "$work/results"
dev=""
failed=0

log() { echo "bench-progress: $*" >&2; }

# stop ends `strata dev` (it stops its nodes on SIGTERM; they die with it
# in any case): SIGTERM, up to 30 s of grace, then SIGKILL.
stop() {
	[ -n "$dev" ] || return 0
	kill -TERM "$dev" 2>/dev/null || true
	local i
	for i in $(seq 300); do
		kill -0 "$dev" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$dev" 2>/dev/null || true
	dev=""
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

if [ ! -x "$strata" ]; then
	log "no $strata: run make build first (or set STRATA_BIN)"
	exit 2
fi

data=$work/strata-dev
"$strata" dev --data "$data" --subnet "$subnet" --wan-latency 0s --workers 0 \
	--ready-timeout "${ready_timeout}s" --log-level warn >"$work/strata-dev.log" 2>&1 &
dev=$!
deadline=$((SECONDS + ready_timeout))
while ! grep -q '^Ctrl-C stops the cluster' "$work/strata-dev.log" 2>/dev/null; do
	if ! kill -0 "$dev" 2>/dev/null; then
		failed=1
		log "strata dev exited: $(tail -n 5 "$work/strata-dev.log")"
		exit 1
	fi
	if [ "$SECONDS" -ge "$deadline" ]; then
		failed=1
		log "strata dev not ready within ${ready_timeout}s"
		exit 1
	fi
	sleep 0.2
done
log "strata dev up ($data/cluster.json)"

# bench NAME ARGS...: one `strata bench progress` run, its JSON kept as
# NAME.json. A run whose ledger ends inexact exits 1 but still has its
# result: it is kept (the table shows it); a run without one fails.
bench() {
	local name=$1
	shift
	log "run $name: $*"
	"$strata" bench progress --no-progress -o json --cluster-file "$data/cluster.json" --region "$region" \
		--workers "$workers" --workflows "$workflows" --duration "$duration" "$@" \
		>"$work/results/$name.json.part" 2>"$work/results/$name.log" || true
	if grep -q '"exact"' "$work/results/$name.json.part"; then
		mv "$work/results/$name.json.part" "$work/results/$name.json"
		log "  $(sed -n 's/^  "\(updates_per_s\|exact\|loss_pct\)": \(.*\),$/\1=\2/p' "$work/results/$name.json" | tr '\n' ' ')"
	else
		failed=1
		log "run $name failed: $(tail -n 3 "$work/results/$name.log")"
	fi
}

# updates_per_s FILE: the updates_per_s of a result.
updates_per_s() {
	sed -n 's/^  "updates_per_s": \([0-9.eE+-]*\),$/\1/p' "$1"
}

for i in $(seq "$runs"); do
	bench "udp-$i"
	bench "http-$i" --http
done

half=$(for f in "$work"/results/udp-*.json; do updates_per_s "$f"; done | sort -g |
	awk '{ v[NR] = $1 } END { if (NR == 0) exit; m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2; printf "%.0f", m / 2 }')
if [ -n "$half" ] && [ "$half" -ge 1 ]; then
	bench "udp-half-1" --rate "$half"
	bench "udp-loss-1" --rate "$half" --loss 0.05 --dup 0.05 --reorder
else
	failed=1
	log "no UDP rate measured: no half-rate runs"
fi
stop

if [ "$failed" != 0 ]; then
	log "a run failed; $out left unchanged"
	exit 1
fi
cpu=$(grep -m1 'model name' /proc/cpuinfo 2>/dev/null | cut -d: -f2 | sed 's/^ *//' || true)
machine="${cpu:-unknown CPU}, $(nproc) cores, $(uname -sr), $("$go" env GOVERSION)"
load=$(awk 'NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ /^avg300=/) { sub("avg300=", "", $i); print "CPU pressure " $i " % (PSI some, avg300, measured at the end)" } }' /proc/pressure/cpu 2>/dev/null || true)
setup="strata dev, 3 regions × (1 gate + 3 managers), one process per node, no reference workers; $workers simulated workers × $workflows workflows of $region, $duration per run; frames go to the manager the registration names (the region's leader)."
(cd "$root" && "$go" run ./test/bench/progressmd -in "$work/results" -out "$out" -machine "$machine" -load "$load" -setup "$setup")
log "updated $out"

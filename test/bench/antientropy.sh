#!/usr/bin/env bash
# bench-antientropy: end-to-end regional ↔ global anti-entropy on a real
# `strata dev` cluster (issue 13, "End to end on `strata dev` with 1M jobs").
#
# Starts `strata dev` without reference workers and with fault injection
# (its regions on 127.0.N.x, 127.0.N+1.x, 127.0.N+2.x), then:
#
#  1. loads AE_JOBS jobs into one region: `strata bench --tier global
#     --batch 1000` sends JobCreated batches to the gates, the gates deliver
#     the jobs to the region, whose leader accepts them and forwards the
#     acceptances back. The load is done when the region's managers have
#     forwarded AE_JOBS events, the leader has nothing left to forward, and
#     an anti-entropy round finds the two ledgers equal. It reports the
#     rate into the global ledger and the end-to-end rate (jobs held by
#     the region and equal in both ledgers' views).
#  2. measures AE_ROUNDS idle rounds (`strata antientropy run`: nothing
#     differs).
#  3. AE_ROUNDS times, produces AE_DIFFS divergent jobs and repairs them:
#     the region's managers are told (PUT /v1/debug/faults,
#     forwarder_lose_jobs) to lose AE_DIFFS running jobs' events on their
#     way to the gates; the jobs are cancelled at a gate; the region
#     cancels their workflows and acknowledges the cancellation, and the
#     acknowledgements are lost, so the global ledger keeps the jobs
#     CANCELLING while the region holds them CANCELLED. Then one
#     `strata antientropy run` (timed), and the jobs are polled on the gate
#     until the global ledger shows them CANCELLED. The schedule's own
#     rounds (every 30 s on the region's leader) would find the divergence
#     too: the divergence is made just after one of them. An attempt is
#     reported and made again with new jobs when it was spoilt: the
#     region's forwarder lost fewer than AE_DIFFS events within 20 s (a
#     slow acknowledgement), the global ledger knew of one already, the
#     on-demand round found fewer than AE_DIFFS differences (a scheduled
#     round came first), or the gate did not show every repair within 60 s.
#  4. optionally (AE_RESTART=1) stops a follower manager of the region,
#     starts it again (`strata agent` with its agent.yaml) and reads from
#     its log how long building the anti-entropy tree from its ledger took.
#
# It prints a Markdown table (medians of the rounds not spoilt) and keeps
# every measurement as JSON lines in AE_OUT (default: a file in TMPDIR,
# named at the end). It needs curl and jq. Every process it starts is
# stopped on exit; its temporary directory is removed unless a step failed
# (AE_KEEP=1 keeps it).
#
# Environment (defaults in brackets):
#   AE_JOBS            jobs loaded into the region [100000]
#   AE_DIFFS           divergent jobs per repair round [10]
#   AE_ROUNDS          idle rounds and repair rounds measured [3]
#   AE_REGION          the region loaded [use1]
#   AE_SUBNET          `strata dev --subnet` [143: regions on 127.0.143-145.x]
#   AE_CLIENTS         `strata bench` clients [4]
#   AE_BATCH           JobCreated events per request [1000]
#   AE_PAYLOAD         bytes per JobCreated body [100]
#   AE_LOAD_TIMEOUT    seconds the load (until the region holds every job) may take [2400;
#                      1M jobs took 25 min on a busy 2-core machine]
#   AE_READY_TIMEOUT   seconds to wait for the cluster to become ready [180]
#   AE_RESTART         1: measure the tree rebuild of a restarted manager [1]
#   AE_OUT             file for the JSON lines [$work/results.ndjson]
#   AE_KEEP            1: keep the temporary directory [0]
#   STRATA_BIN         strata binary [bin/strata, as `make build` makes it]
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
jobs=${AE_JOBS:-100000}
diffs=${AE_DIFFS:-10}
rounds=${AE_ROUNDS:-3}
region=${AE_REGION:-use1}
subnet=${AE_SUBNET:-143}
clients=${AE_CLIENTS:-4}
batch=${AE_BATCH:-1000}
payload=${AE_PAYLOAD:-100}
load_timeout=${AE_LOAD_TIMEOUT:-2400}
ready_timeout=${AE_READY_TIMEOUT:-180}
restart=${AE_RESTART:-1}
keep=${AE_KEEP:-0}
strata=${STRATA_BIN:-$root/bin/strata}

for tool in curl jq; do
	command -v "$tool" >/dev/null || {
		echo "bench-antientropy: needs $tool" >&2
		exit 2
	}
done
if [ ! -x "$strata" ]; then
	echo "bench-antientropy: no $strata: run make build first (or set STRATA_BIN)" >&2
	exit 2
fi
if [ "$diffs" -lt 1 ] || [ "$diffs" -gt 1000 ] || [ "$jobs" -lt $((diffs * (rounds + 1))) ]; then
	echo "bench-antientropy: want 1 <= AE_DIFFS <= 1000 and AE_JOBS >= AE_DIFFS × (AE_ROUNDS + 1)" >&2
	exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/strata-bench-antientropy.XXXXXX")
# A private copy: a `make build` during the run changes nothing here.
cp "$strata" "$work/strata"
strata=$work/strata
out=${AE_OUT:-$work/results.ndjson}
: >"$out"
dev=""
agent="" # a manager this script restarted itself
failed=0

log() { echo "bench-antientropy: $(date -u +%H:%M:%S) $*" >&2; }
now_ms() { date +%s%3N; }

# stop_pid PID SECONDS: SIGTERM, up to SECONDS of grace, then SIGKILL.
stop_pid() {
	local pid=$1 i
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for i in $(seq $(($2 * 10))); do
		kill -0 "$pid" 2>/dev/null || return 0
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
}

cleanup() {
	stop_pid "$agent" 30
	stop_pid "$dev" 60
	if [ "$failed" = 0 ] && [ "$keep" != 1 ]; then
		[ -n "${AE_OUT:-}" ] || cp "$out" "${TMPDIR:-/tmp}/strata-bench-antientropy-$$.ndjson"
		rm -rf "$work"
	else
		log "logs and results kept in $work"
	fi
}
trap cleanup EXIT
trap 'failed=1; exit 130' INT TERM

fail() {
	failed=1
	log "FAILED: $*"
	exit 1
}

# --- the cluster ---------------------------------------------------------

data=$work/dev
log "strata dev on 127.0.$subnet-$((subnet + 2)).x, no workers, fault injection; data in $data"
"$strata" dev --data "$data" --subnet "$subnet" --wan-latency 0s --workers 0 --enable-fault-injection \
	--ready-timeout "${ready_timeout}s" --log-level info >"$work/dev.log" 2>&1 &
dev=$!
deadline=$((SECONDS + ready_timeout))
while ! grep -q '^Ctrl-C stops the cluster' "$work/dev.log" 2>/dev/null; do
	kill -0 "$dev" 2>/dev/null || fail "strata dev exited: $(tail -n 5 "$work/dev.log")"
	[ "$SECONDS" -lt "$deadline" ] || fail "strata dev not ready within ${ready_timeout}s"
	sleep 0.2
done
cf=$data/cluster.json
token=$(jq -r .token "$cf")
gate=http://$(jq -r --arg r "$region" '.nodes[] | select(.role == "gate" and .region == $r) | .api_addr' "$cf")
mapfile -t managers < <(jq -r --arg r "$region" '.nodes[] | select(.role == "manager" and .region == $r) | .node_id' "$cf")
[ "${#managers[@]}" -gt 0 ] || fail "no manager of $region in $cf"
auth=(-H "Authorization: Bearer $token")
export STRATA_ADDR=$gate STRATA_TOKEN=$token
log "up: gate $gate, managers ${managers[*]}"

api_of() { echo "http://$(jq -r --arg n "$1" '.nodes[] | select(.node_id == $n) | .api_addr' "$cf")"; }
curl_() { curl -sS --max-time 30 "${auth[@]}" "$@"; }

# metric NODE NAME: the sum of a metric's samples on a node (0 if absent).
metric() {
	{ curl_ "$(api_of "$1")/metrics" 2>/dev/null || true; } | awk -v m="$2" '$1 == m || index($1, m "{") == 1 { s += $2 } END { printf "%.0f\n", s }'
}

# leader: the region's leader manager, as its peers report it.
leader() {
	local n l
	for n in "${managers[@]}"; do
		l=$(curl_ "$(api_of "$n")/v1/cluster/raft" 2>/dev/null | jq -r '.groups[0].leader // empty' 2>/dev/null || true)
		if [ -n "$l" ]; then
			echo "$l"
			return 0
		fi
	done
	return 1
}

# ae_run FILE: one `strata antientropy run -o json` into FILE; prints its wall ms.
ae_run() {
	local t0 t1
	t0=$(now_ms)
	"$strata" antientropy run -o json >"$1" 2>"$1.err" || fail "antientropy run: $(cat "$1.err")"
	t1=$(now_ms)
	echo $((t1 - t0))
}

# pair FILE: the region's regional-global pair of a status.
pair() { jq -c --arg r "$region" '.pairs[] | select(.kind == "regional-global" and .region == $r)' "$1"; }

# rounds_done: regional rounds run so far by the region's managers.
rounds_done() {
	local n s=0
	for n in "${managers[@]}"; do s=$((s + $(metric "$n" 'strata_antientropy_rounds_total{kind="regional-global"}'))); done
	echo "$s"
}

# --- 1. load -------------------------------------------------------------

requests=$(((jobs + batch - 1) / batch))
log "loading $((requests * batch)) jobs into $region: $requests batches of $batch JobCreated, $clients clients"
load_start=$(now_ms)
"$strata" bench --no-progress -o json --cluster-file "$cf" --tier global --batch "$batch" --clients "$clients" \
	--requests "$requests" --duration "${load_timeout}s" --timeout 120s --region "$region" --payload "$payload" \
	>"$work/load.json" 2>"$work/load.log" || fail "load: $(tail -n 3 "$work/load.log")"
load_global_ms=$(($(now_ms) - load_start))
loaded=$(jq .events "$work/load.json")
log "global ledger took $loaded jobs in $((load_global_ms / 1000)) s ($(jq '.failed' "$work/load.json") requests failed)"

# The region holds every job once its managers have forwarded as many
# acceptances (a new leader may forward some again: the sum over the
# managers only bounds it), its leader has nothing left to forward (a
# former leader's gauge keeps its last value) and a round finds the two
# ledgers equal; rounds in between repair or deliver again what is in
# flight, at most MaxRepairsPerRound jobs each.
deadline=$(((load_start / 1000) + load_timeout))
last_log=0
while :; do
	fwd=0 lag=-1
	for n in "${managers[@]}"; do fwd=$((fwd + $(metric "$n" strata_forwarder_events_total))); done
	if ldr=$(leader); then lag=$(metric "$ldr" strata_forwarder_lag_events); fi
	if [ "$fwd" -ge "$loaded" ] && [ "$lag" = 0 ]; then
		ae_run "$work/settle.json" >/dev/null
		p=$(pair "$work/settle.json")
		[ "$(jq .roots_equal <<<"$p")" = true ] && [ "$(jq .differences <<<"$p")" = 0 ] && break
		log "  settling: $p"
	fi
	[ "$(date +%s)" -lt "$deadline" ] || fail "the region forwarded $fwd of $loaded acceptances within ${load_timeout}s (leader's lag $lag)"
	if [ $((SECONDS - last_log)) -ge 30 ]; then
		log "  region: $fwd of $loaded jobs accepted and forwarded (leader's lag $lag)"
		last_log=$SECONDS
	fi
	sleep 2
done
load_region_ms=$(($(now_ms) - load_start))
log "region holds $loaded jobs, equal to the global ledger's view, after $((load_region_ms / 1000)) s"
jq -nc --argjson jobs "$loaded" --argjson g "$load_global_ms" --argjson r "$load_region_ms" \
	'{step: "load", jobs: $jobs, global_ms: $g, region_ms: $r,
	  global_jobs_per_s: ($jobs / $g * 1000 | floor), region_jobs_per_s: ($jobs / $r * 1000 | floor)}' >>"$out"

# --- 2. idle rounds ------------------------------------------------------

for i in $(seq "$rounds"); do
	wall=$(ae_run "$work/idle-$i.json")
	p=$(pair "$work/idle-$i.json")
	log "idle round $i: wall ${wall} ms, $p"
	jq -c --argjson wall "$wall" '{step: "idle", wall_ms: $wall} + .' <<<"$p" >>"$out"
done

# --- 3. repair rounds ----------------------------------------------------

set_lost() { # set_lost JSON_ARRAY: every manager of the region loses these jobs' events
	local n
	for n in "${managers[@]}"; do
		curl_ -X PUT -d "{\"wan_latency\":\"0s\",\"peers\":[],\"forwarder_lose_jobs\":$1}" "$(api_of "$n")/v1/debug/faults" >/dev/null ||
			fail "faults on $n"
	done
}

# global_acked IDS...: how many of the jobs the global ledger (the gate)
# holds with the region's cancellation acknowledged. One curl for all.
global_acked() {
	local urls=() id
	for id in "$@"; do urls+=("$gate/v1/jobs/$id"); done
	{ curl_ "${urls[@]}" 2>/dev/null || true; } |
		jq -s --arg r "$region" '[.[] | select(.regions[$r].cancel_acked == true)] | length' 2>/dev/null || echo 0
}

# lost: events the region's forwarders have lost so far (their logs say
# so; job reads go to the gates, so the region's own view is not read).
lost() {
	local n
	for n in "${managers[@]}"; do
		grep -h 'the forwarder lost events' "$data/$n/agent.log" 2>/dev/null || true
	done | jq -s '[.[].events] | add // 0'
}

done_rounds=0
attempts=0
while [ "$done_rounds" -lt "$rounds" ]; do
	attempts=$((attempts + 1))
	[ "$attempts" -le $((rounds + 3)) ] || fail "too many attempts spoilt by scheduled rounds"
	mapfile -t ids < <(curl_ "$gate/v1/jobs?region=$region&status=RUNNING&limit=$diffs" | jq -r '.jobs[].job_id')
	[ "${#ids[@]}" = "$diffs" ] || fail "found ${#ids[@]} running jobs, want $diffs"
	set_lost "$(printf '%s\n' "${ids[@]}" | jq -R . | jq -sc .)"
	# Make the divergence just after a scheduled round, so that the next
	# one (30 s later) does not find it before the measured round does.
	lost_before=$(lost)
	before=$(rounds_done)
	# (A change of leader can leave a gap of up to two intervals; after
	# 75 s go on: a spoilt attempt is detected below.)
	deadline=$((SECONDS + 75))
	while [ "$(rounds_done)" = "$before" ]; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			log "  no scheduled round in 75 s; going on"
			break
		fi
		sleep 0.2
	done
	for id in "${ids[@]}"; do
		curl_ -X POST -d '{"reason":"bench-antientropy"}' "$gate/v1/jobs/$id/cancel" >/dev/null || fail "cancel $id"
	done
	# The region cancels the jobs' workflows and acknowledges; its
	# forwarder loses the acknowledgements.
	deadline=$((SECONDS + 20))
	while [ $(($(lost) - lost_before)) -lt "$diffs" ]; do
		[ "$SECONDS" -lt "$deadline" ] || break
		sleep 0.2
	done
	lost_events=$(($(lost) - lost_before))
	global_acked=$(global_acked "${ids[@]}")
	log "repair attempt $attempts: $lost_events events of $diffs jobs lost by $region's forwarder, $global_acked acknowledgements known to the global ledger"
	t0=$(now_ms)
	wall=$(ae_run "$work/repair-$attempts.json")
	p=$(pair "$work/repair-$attempts.json")
	deadline=$((SECONDS + 60))
	while [ "$(global_acked "${ids[@]}")" != "$diffs" ]; do
		[ "$SECONDS" -lt "$deadline" ] || break
		sleep 0.05
	done
	visible=$(($(now_ms) - t0))
	repaired_global=$(global_acked "${ids[@]}")
	set_lost '[]'
	log "  round: wall $wall ms, $p; the global ledger shows $repaired_global of $diffs acknowledged after $visible ms"
	ok=false
	if [ "$lost_events" -ge "$diffs" ] && [ "$global_acked" = 0 ] && [ "$(jq .differences <<<"$p")" -ge "$diffs" ] &&
		[ "$repaired_global" = "$diffs" ]; then
		ok=true
		done_rounds=$((done_rounds + 1))
	else
		log "  attempt spoilt (a scheduled round, a slow acknowledgement or a missed repair): made again"
	fi
	jq -c --argjson wall "$wall" --argjson vis "$visible" --argjson k "$diffs" --argjson lost "$lost_events" \
		--argjson ga "$global_acked" --argjson rg "$repaired_global" --argjson ok "$ok" \
		'{step: "repair", ok: $ok, diffs: $k, lost_events: $lost, global_acked_before: $ga,
		  wall_ms: $wall, visible_ms: $vis, global_acked_after: $rg} + .' <<<"$p" >>"$out"
done

# --- 4. tree rebuild at start --------------------------------------------

if [ "$restart" = 1 ]; then
	ldr=$(leader) || fail "no leader in $region"
	for n in "${managers[@]}"; do [ "$n" != "$ldr" ] && victim=$n && break; done
	pid=$(jq -r --arg n "$victim" '.nodes[] | select(.node_id == $n) | .pid' "$cf")
	log "restarting $victim (pid $pid) to time its tree rebuild"
	stop_pid "$pid" 60
	vlog=$data/$victim/agent.log # as strata dev does, its output is appended there
	seen=$(grep -c 'anti-entropy tree built' "$vlog" || true)
	t0=$(now_ms)
	# As strata dev starts it: no STRATA_ variables, which would override agent.yaml.
	env -i PATH="$PATH" HOME="${HOME:-/}" "$strata" agent --config "$data/$victim/agent.yaml" >>"$vlog" 2>&1 &
	agent=$!
	deadline=$((SECONDS + 600))
	until [ "$(grep -c 'anti-entropy tree built' "$vlog" || true)" -gt "$seen" ]; do
		kill -0 "$agent" 2>/dev/null || fail "$victim exited: $(tail -n 5 "$vlog")"
		[ "$SECONDS" -lt "$deadline" ] || fail "$victim built no tree within 600 s"
		sleep 0.2
	done
	line=$(grep 'anti-entropy tree built' "$vlog" | tail -n 1)
	vapi=$(api_of "$victim")
	deadline=$((SECONDS + 600))
	until curl -sf --max-time 5 "$vapi/readyz" >/dev/null 2>&1; do
		[ "$SECONDS" -lt "$deadline" ] || break
		sleep 0.2
	done
	ready=$(($(now_ms) - t0))
	log "  $line; ready after $ready ms"
	jq -c --arg node "$victim" --argjson ready "$ready" \
		'{step: "rebuild", node: $node, applied: .applied, took_ms: (.took / 1e6 | floor), ready_ms: $ready}' <<<"$line" >>"$out"
fi

# --- the table -----------------------------------------------------------

median() { sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) { print "-"; exit } print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
m() { jq -r "select(.step == \"$1\" and .ok != false) | $2" "$out" | median; }
cpu=$(awk 'NR == 1 { for (i = 1; i <= NF; i++) if ($i ~ /^avg300=/) { sub("avg300=", "", $i); print $i } }' /proc/pressure/cpu 2>/dev/null || echo "?")
echo
echo "| jobs | load: global ledger | load: region holds all | K | round (use1) | CLI wall | found / repaired | bytes | global shows repaired | idle round | idle bytes | tree rebuild at start |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
printf '| %s | %s jobs/s | %s jobs/s | %s | %s ms | %s ms | %s / %s | %s | %s ms | %s ms | %s | %s |\n' \
	"$loaded" "$(m load .global_jobs_per_s)" "$(m load .region_jobs_per_s)" "$diffs" \
	"$(m repair .duration_ms)" "$(m repair .wall_ms)" "$(m repair .differences)" "$(m repair .repaired)" \
	"$(m repair .bytes)" "$(m repair .visible_ms)" "$(m idle .duration_ms)" "$(m idle .bytes)" \
	"$(if [ "$restart" = 1 ]; then echo "$(m rebuild .took_ms) ms"; else echo -; fi)"
echo
echo "medians of $rounds rounds; $(jq -s '[.[] | select(.step == "repair" and .ok == false)] | length' "$out") repair attempts spoilt; CPU pressure ${cpu} % (PSI some avg300, at the end); results: ${AE_OUT:-${TMPDIR:-/tmp}/strata-bench-antientropy-$$.ndjson}"

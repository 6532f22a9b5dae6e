#!/usr/bin/env bash
# The TLS compose cluster's life cycle, called by the Makefile:
#
#   compose.sh gen     write .secrets: CA, node certificates, strata.yml, tokens
#   compose.sh up      gen, docker-compose up -d, wait until every node is ready
#   compose.sh down    remove containers, networks, volumes and .secrets
#   compose.sh wait    wait (bounded) until every node answers /readyz over TLS
#   compose.sh env     print the variables a client needs (source it)
#
# Knobs: STRATA (the host's strata binary, default bin/strata),
# STRATA_COMPOSE_NET (the /16 of the networks, default 10.231),
# COMPOSE_READY_TIMEOUT (seconds, default 240), STRATA_IMAGE.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
secrets="$here/.secrets"
STRATA=${STRATA:-$root/bin/strata}
NET=${STRATA_COMPOSE_NET:-10.231}
READY_TIMEOUT=${COMPOSE_READY_TIMEOUT:-240}
export COMPOSE_PROJECT_NAME=${COMPOSE_PROJECT_NAME:-strata-compose}
export STRATA_COMPOSE_NET=$NET

regions=(use1 euw1 apse1)

# nodes prints "id role region region-ip wan-ip" for the 12 nodes.
nodes() {
  local i=1 r
  for r in "${regions[@]}"; do
    echo "$r-gate1 gate $r $NET.$i.10 $NET.0.$((10 + i))"
    for m in 1 2 3; do echo "$r-mgr$m manager $r $NET.$i.$((10 + m)) -"; done
    i=$((i + 1))
  done
}

dc() { docker-compose -f "$here/docker-compose.yml" "$@"; }

# randhex N: N random bytes as hex.
randhex() { od -An -tx1 -N"$1" /dev/urandom | tr -d ' \n'; }

gen() {
  if [ -f "$secrets/strata.yml" ]; then
    echo "compose: reusing $secrets"
    return
  fi
  [ -x "$STRATA" ] || { echo "compose: $STRATA not found: run make build" >&2; exit 1; }
  rm -rf "$secrets"
  mkdir -p "$secrets"
  "$STRATA" tls ca create -o "$secrets" >/dev/null
  local id role region ip wan hosts
  while read -r id role region ip wan; do
    hosts=(--host "$ip" --host "$id")
    [ "$wan" != - ] && hosts+=(--host "$wan")
    "$STRATA" tls cert create --role "$role" --region "$region" --node "$id" "${hosts[@]}" \
      --ca "$secrets" -o "$secrets" >/dev/null
  done < <(nodes)
  local op worker cluster gossip
  op=$(randhex 24) worker=$(randhex 24) cluster=$(randhex 24)
  gossip=$("$STRATA" keyring generate)
  printf %s "$op" > "$secrets/operator.token"
  printf %s "$worker" > "$secrets/worker.token"
  # The nodes hold the tokens' digests only.
  cat > "$secrets/strata.yml" <<EOF
# Written by deploy/compose/compose.sh gen; removed by make compose-down.
cluster_token: "$cluster"
gossip_key: "$gossip"
tokens:
  - token: "sha256:$(printf %s "$op" | sha256sum | cut -d' ' -f1)"
    tenant: "*"
    scopes: [operator]
  - token: "sha256:$(printf %s "$worker" | sha256sum | cut -d' ' -f1)"
    tenant: "*"
    scopes: [worker]
    worker: "*"
EOF
  # The containers run as 65532 and read their key and config: keys stay
  # 0600, owned by that user (as root), else readable by all (a
  # throw-away dev cluster's scratch directory).
  chmod 0600 "$secrets"/*-key.pem "$secrets/strata.yml"
  if [ "$(id -u)" = 0 ]; then
    chown 65532:65532 "$secrets"/*.pem "$secrets/strata.yml"
  else
    chmod 0644 "$secrets"/*-key.pem "$secrets/strata.yml"
  fi
  rm -f "$secrets/ca-key.pem" # nothing signs again: a new up makes a new CA
  echo "compose: wrote $secrets (CA, 12 node certificates, strata.yml, operator.token, worker.token)"
}

# wait_ready polls every node's /readyz over TLS until all answer 200,
# failing after READY_TIMEOUT seconds with the state of each.
wait_ready() {
  local deadline=$((SECONDS + READY_TIMEOUT)) id role region ip wan pending
  while :; do
    pending=()
    while read -r id role region ip wan; do
      curl -fsS -o /dev/null --max-time 3 --cacert "$secrets/ca.pem" "https://$ip:7100/readyz" 2>/dev/null ||
        pending+=("$id")
    done < <(nodes)
    if [ ${#pending[@]} -eq 0 ]; then
      echo "compose: all 12 nodes ready after ${SECONDS}s"
      return 0
    fi
    if [ $SECONDS -ge $deadline ]; then
      echo "compose: not ready after ${READY_TIMEOUT}s: ${pending[*]}" >&2
      dc ps >&2 || true
      for id in "${pending[@]}"; do
        echo "--- last log lines of $id" >&2
        dc logs --no-color --tail 15 "$id" >&2 || true
      done
      return 1
    fi
    sleep 2
  done
}

# client_env prints what a client of the cluster needs.
client_env() {
  local addrs=() id role region ip wan
  while read -r id role region ip wan; do
    [ "$role" = gate ] && addrs+=("https://$ip:7100")
  done < <(nodes)
  echo "export STRATA_ADDR=$(IFS=,; echo "${addrs[*]}")"
  echo "export STRATA_CA_FILE=$secrets/ca.pem"
  echo "export STRATA_TOKEN=$(cat "$secrets/operator.token")"
}

worker_token() { cat "$secrets/worker.token" 2>/dev/null || true; }

case "${1:-}" in
gen) gen ;;
up)
  gen
  export STRATA_COMPOSE_WORKER_TOKEN
  STRATA_COMPOSE_WORKER_TOKEN=$(worker_token)
  timeout 300 docker-compose -f "$here/docker-compose.yml" up -d --remove-orphans
  wait_ready
  echo "compose: a client: eval \"\$($0 env)\"; $STRATA job submit ..."
  ;;
wait) wait_ready ;;
env) client_env ;;
down)
  timeout 300 docker-compose -f "$here/docker-compose.yml" down -v --remove-orphans --timeout 10
  rm -rf "$secrets"
  ;;
*)
  echo "usage: $0 gen|up|wait|env|down" >&2
  exit 2
  ;;
esac

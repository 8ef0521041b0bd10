#!/usr/bin/env bash
# Builds cairn (installing what is missing), starts one node on loopback with its data under
# var/node1, shows it working with curl and with the cairn CLI, then keeps it running until
# Ctrl-C (or exits at once with --demo-only, stopping the node with SIGTERM).
#
#   scripts/run-node.sh [--demo-only]
#
# The node listens on 127.0.0.1:9925 (operations API) and 127.0.0.1:9933 (peers); override with
# CAIRN_OPS_PORT / CAIRN_PEER_PORT. User admin, password $CAIRN_ADMIN_PASSWORD (default
# "cairn-demo").
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
build="${CAIRN_BUILD_DIR:-$root/build}"
data="$root/var/node1"
ops_port="${CAIRN_OPS_PORT:-9925}"
peer_port="${CAIRN_PEER_PORT:-9933}"
export CAIRN_ADMIN_USER=admin
export CAIRN_ADMIN_PASSWORD="${CAIRN_ADMIN_PASSWORD:-cairn-demo}"
export CAIRN_NODE="127.0.0.1:$ops_port"
mkdir -p "$data"

"$build/node/cairnd" --name node1 --data-dir "$data" \
  --ops-listen "127.0.0.1:$ops_port" --peer-listen "127.0.0.1:$peer_port" \
  2>>"$data/cairnd.log" &
pid=$!
stop() {
  kill -TERM "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  echo "node1 stopped (log: $data/cairnd.log)"
}
trap stop EXIT
for _ in $(seq 200); do
  if grep -q "\"pid\":$pid" "$data/ready.json" 2>/dev/null; then break; fi
  if ! kill -0 "$pid" 2>/dev/null; then
    echo "cairnd exited; the end of its log:" >&2
    tail -5 "$data/cairnd.log" >&2
    exit 1
  fi
  sleep 0.05
done
echo "node1 is serving: $(cat "$data/ready.json")"

run() { echo "\$ $*"; "$@"; echo; }
table="orders_$(date +%s)"
run curl -sS -u "admin:$CAIRN_ADMIN_PASSWORD" "http://$CAIRN_NODE/" -d \
  "{\"operation\":\"create_table\",\"database\":\"demo\",\"table\":\"$table\",\"primary_key\":\"id\"}"
run curl -sS -u "admin:$CAIRN_ADMIN_PASSWORD" "http://$CAIRN_NODE/" -d \
  "{\"operation\":\"insert\",\"database\":\"demo\",\"table\":\"$table\",\"records\":[{\"id\":1,\"item\":\"rope\",\"qty\":2},{\"id\":2,\"item\":\"lamp\",\"qty\":1}]}"
run curl -sS -u "admin:$CAIRN_ADMIN_PASSWORD" "http://$CAIRN_NODE/" -d \
  "{\"operation\":\"search_by_value\",\"database\":\"demo\",\"table\":\"$table\",\"attribute\":\"item\",\"value\":\"rope\",\"get_attributes\":[\"*\"]}"
run "$build/node/cairn" put "demo.$table" '{"id": 3, "item": "map", "qty": 5}'
run "$build/node/cairn" get "demo.$table" 1 3
run "$build/node/cairn" describe "demo.$table"
run "$build/node/cairn" status

if [ "${1:-}" = "--demo-only" ]; then exit 0; fi
echo "node1 keeps running (pid $pid); try: $build/node/cairn describe   -- Ctrl-C stops it"
wait "$pid"

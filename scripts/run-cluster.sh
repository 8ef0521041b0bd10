#!/usr/bin/env bash
# Builds cairn (installing what is missing), starts a three-node cluster on loopback with its
# data under var/cluster, shows a table created on one node appear on every node and a drop
# answered by each peer, then keeps the cluster running until Ctrl-C (--demo-only stops it).
#
#   scripts/run-cluster.sh [--demo-only]
#
# Nodes n1, n2, n3: operations API on 127.0.0.1:9925, 9926, 9927; peers on 9933, 9934, 9935.
# Admin user admin, password $CAIRN_ADMIN_PASSWORD (default "cairn-demo"); the cluster secret
# is generated once into var/cluster/secret.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
build="${CAIRN_BUILD_DIR:-$root/build}"
base="$root/var/cluster"
mkdir -p "$base"
export CAIRN_ADMIN_USER=admin
export CAIRN_ADMIN_PASSWORD="${CAIRN_ADMIN_PASSWORD:-cairn-demo}"
[ -s "$base/secret" ] || (umask 077 && head -c 24 /dev/urandom | base64 > "$base/secret")

pids=()
stop() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  echo "cluster stopped (logs: $base/n*.log)"
}
trap stop EXIT

for i in 1 2 3; do
  peers=()
  for j in 1 2 3; do
    [ "$i" = "$j" ] || peers+=(--peer "n$j=127.0.0.1:$((9932 + j))")
  done
  "$build/node/cairnd" --name "n$i" --data-dir "$base/n$i" \
    --ops-listen "127.0.0.1:$((9924 + i))" --peer-listen "127.0.0.1:$((9932 + i))" \
    --cluster-secret-file "$base/secret" "${peers[@]}" 2>>"$base/n$i.log" &
  pids+=($!)
done
for i in 1 2 3; do
  for _ in $(seq 200); do
    grep -q "\"pid\":${pids[$((i - 1))]}" "$base/n$i/ready.json" 2>/dev/null && break
    if ! kill -0 "${pids[$((i - 1))]}" 2>/dev/null; then
      echo "n$i exited; the end of its log:" >&2
      tail -5 "$base/n$i.log" >&2
      exit 1
    fi
    sleep 0.05
  done
done
echo "n1, n2, n3 are serving"

cairn() { "$build/node/cairn" "$@"; }
table="orders_$(date +%s)"
echo "\$ cairn --node 127.0.0.1:9925 op '{\"operation\":\"create_table\",\"database\":\"demo\",\"table\":\"$table\",\"primary_key\":\"id\"}'"
cairn --node 127.0.0.1:9925 op "{\"operation\":\"create_table\",\"database\":\"demo\",\"table\":\"$table\",\"primary_key\":\"id\"}"
for port in 9926 9927; do
  for _ in $(seq 100); do
    cairn --node "127.0.0.1:$port" describe "demo.$table" >/dev/null 2>&1 && break
    sleep 0.05
  done
  echo "\$ cairn --node 127.0.0.1:$port describe demo.$table   # created on n1"
  cairn --node "127.0.0.1:$port" describe "demo.$table" | grep -E '"(name|created_time|generation_id)"'
done
echo "\$ cairn --node 127.0.0.1:9925 put demo.$table '{\"id\": 1, \"item\": \"rope\"}'   # a write on n1"
cairn --node 127.0.0.1:9925 put "demo.$table" '{"id": 1, "item": "rope"}'
echo "\$ cairn --node 127.0.0.1:9927 put demo.$table '{\"id\": 2, \"item\": \"lamp\"}'   # a write on n3"
cairn --node 127.0.0.1:9927 put "demo.$table" '{"id": 2, "item": "lamp"}'
for port in 9925 9926 9927; do
  for _ in $(seq 100); do
    [ "$(cairn --node "127.0.0.1:$port" get "demo.$table" 1 2 2>/dev/null | grep -c '"id"')" = 2 ] && break
    sleep 0.05
  done
  echo "\$ cairn --node 127.0.0.1:$port get demo.$table 1 2   # both records, on every node"
  cairn --node "127.0.0.1:$port" get "demo.$table" 1 2
done
echo "\$ cairn --node 127.0.0.1:9925 status"
cairn --node 127.0.0.1:9925 status
echo "\$ cairn --node 127.0.0.1:9926 op '{\"operation\":\"drop_table\",\"database\":\"demo\",\"table\":\"$table\"}'"
cairn --node 127.0.0.1:9926 op "{\"operation\":\"drop_table\",\"database\":\"demo\",\"table\":\"$table\"}"

if [ "${1:-}" = "--demo-only" ]; then exit 0; fi
echo "the cluster keeps running; try: $build/node/cairn --node 127.0.0.1:9927 status   -- Ctrl-C stops it"
wait

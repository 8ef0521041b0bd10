#!/usr/bin/env bash
# The node benchmark (cluster-tests/bench/node_bench): one cairnd driven over HTTP with
# 100-record insert batches and single-record upserts, 1, 8 and 32 clients. A table on stdout,
# JSON in build/bench/node_bench.json. Extra arguments go to node_bench (--seconds, --clients).
#
#   scripts/bench-node.sh
#   scripts/bench-node.sh --seconds 10 --clients 32
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh" >/dev/null
build="${CAIRN_BUILD_DIR:-$root/build}"
mkdir -p "$build/bench"
echo "load before run: $(cat /proc/loadavg)"
"$build/cluster-tests/bench/node_bench" --json "$build/bench/node_bench.json" "$@"
echo "JSON: $build/bench/node_bench.json"

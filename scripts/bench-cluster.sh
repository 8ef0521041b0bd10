#!/usr/bin/env bash
# The cluster benchmark (cluster-tests/bench/cluster_bench): three cairnd processes linked both
# ways. Schema convergence (10 databases created at once on every node, until all agree;
# p50/p99/max over rounds) and each node's RSS idle and after writing records. A table on
# stdout, JSON in build/bench/cluster_bench.json. Extra arguments go to cluster_bench.
#
#   scripts/bench-cluster.sh
#   scripts/bench-cluster.sh --repeats 50 --records 500000
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh" >/dev/null
build="${CAIRN_BUILD_DIR:-$root/build}"
mkdir -p "$build/bench"
echo "load before run: $(cat /proc/loadavg)"
"$build/cluster-tests/bench/cluster_bench" --json "$build/bench/cluster_bench.json" "$@"
echo "JSON: $build/bench/cluster_bench.json"

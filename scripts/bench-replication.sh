#!/usr/bin/env bash
# The replication benchmark (cluster-tests/bench/replication_bench): three cairnd processes
# linked both ways, writes on n1. Replicated records/s, time to visibility on a peer (p50/p99)
# under 1k writes/s, and catch-up of 100k records after a restart. A table on stdout, JSON in
# build/bench/replication_bench.json. Extra arguments go to replication_bench.
#
#   scripts/bench-replication.sh
#   scripts/bench-replication.sh --records 500000 --catchup 200000
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh" >/dev/null
build="${CAIRN_BUILD_DIR:-$root/build}"
mkdir -p "$build/bench"
echo "load before run: $(cat /proc/loadavg)"
"$build/cluster-tests/bench/replication_bench" --json "$build/bench/replication_bench.json" "$@"
echo "JSON: $build/bench/replication_bench.json"

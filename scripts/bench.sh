#!/usr/bin/env bash
# Runs the unit benchmarks: a readable table on stdout, JSON beside the binary. Records the
# machine's load first, since other work on the 2 cores skews every figure.
#
#   scripts/bench.sh                          # all
#   scripts/bench.sh --benchmark_filter=Insert
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh" >/dev/null
build="${CAIRN_BUILD_DIR:-$root/build}"
out="$build/bench/record_bench.json"
echo "load before run: $(cat /proc/loadavg)"
"$build/bench/record_bench" --benchmark_repetitions="${REPS:-3}" \
  --benchmark_report_aggregates_only=true \
  --benchmark_out="$out" --benchmark_out_format=json "$@"
echo "JSON: $out"

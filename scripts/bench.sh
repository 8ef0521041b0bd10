#!/usr/bin/env bash
# Runs every benchmark, each beside this machine's ceilings measured in the same run
# (cluster-tests/bench/ceiling_bench), and writes bench-results.json with the table of every
# figure against its aim (cluster-tests/bench/bench_report). Figures are for this machine
# with all nodes and the load generator sharing it; the machine's load is recorded before
# each benchmark and a busy machine is flagged. See README "Performance".
#
#   scripts/bench.sh              # everything, about 11 minutes; results in build/bench/results/
#   scripts/bench.sh --plot       # also draws the plots into docs/perf/ (gnuplot)
#   scripts/bench.sh --quick      # tiny sizes: checks the suite end to end (ctest bench_smoke)
#   CAIRN_BENCH_OUT=DIR scripts/bench.sh
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
plot=0
quick=0
for arg in "$@"; do
  case "$arg" in
    --plot) plot=1 ;;
    --quick) quick=1 ;;
    *) echo "usage: scripts/bench.sh [--plot] [--quick]" >&2; exit 2 ;;
  esac
done

# The smoke test runs inside a build that is already there.
if [ "${CAIRN_BENCH_NO_SETUP:-0}" != 1 ]; then "$root/scripts/setup.sh" >/dev/null; fi
build="${CAIRN_BUILD_DIR:-$root/build}"
bin="$build/cluster-tests/bench"
out="${CAIRN_BENCH_OUT:-$build/bench/results}"
mkdir -p "$out"
rm -f "$out"/*.json "$out"/*.dat "$out"/*.md

if [ "$quick" = 1 ]; then
  ceiling=(--seconds 0.3)
  node=(--seconds 0.3)
  replication=(--records 3000 --seconds 1 --catchup 2000)
  replication5=(--records 3000 --seconds 1 --catchup 2000)
  handover=(--cut-seconds 1 --window 1)
  copy=(--records 5000)
  cluster=(--repeats 2 --records 2000)
  drop=(--rounds 2)
  verify=(--records 3000 --seconds 1)
  strip=(--records 3000 --seconds 1)
  search=(--records 3000 --runs 1)
  schema=(--tables 100 --bucket 50 --sample 5)
  role=(--rounds 4)
  hostile=(--records 3000 --seconds 1 --rounds 1)
  subscription=(--seconds 0.5 --subscribers 10 --latency-seconds 1)
  placement=(--records 1000 --probes 10)
else
  ceiling=() node=() replication=() handover=() copy=() cluster=() drop=() verify=() strip=() search=()
  role=() hostile=() subscription=() placement=()
  replication5=(--records 100000)
  schema=(--tables 2000 --bucket 500)
fi

echo "load before the run: $(cat /proc/loadavg)"
# One benchmark: its table on stdout (its one-line JSON goes to $out/<name>.json instead).
run() {
  run_as "$1" "$@"
}
# The same, its JSON in $out/<as>.json: for a second run of one benchmark.
run_as() {
  local as=$1 name=$2
  shift 2
  echo
  echo "== ${name}_bench $*"
  "$bin/${name}_bench" --json "$out/$as.json" "$@" | grep -v '^{'
}
run ceiling "${ceiling[@]}"
run node "${node[@]}"
# Issue 40: the same rows as a user whose role grants each attribute (the cost of SPEC U4).
run_as node_role node --role attribute --clients 1,32 "${node[@]}"
run replication --series "$out" "${replication[@]}"
# Issue 23: the five-node mesh's figure beside the three nodes' (all five share this machine).
run_as replication5 replication --nodes 5 "${replication5[@]}"
run handover "${handover[@]}"
run copy --series "$out" "${copy[@]}"
run cluster "${cluster[@]}"
run drop --series "$out" "${drop[@]}"
run verify "${verify[@]}"
run strip "${strip[@]}"
run search "${search[@]}"
run schema "${schema[@]}"
# Issue 41: other clients' upserts under slow readers and worst-case searches.
run hostile "${hostile[@]}"
run role "${role[@]}"
# Issue 43: change subscriptions under a write load (SPEC W5) and write-to-event latency.
run subscription "${subscription[@]}"
# Issue 44: 6 databases on 3 of 6 nodes each against every node; forwards and confirmations.
run placement "${placement[@]}"
if [ "$quick" = 0 ] && [ -x "$build/bench/record_bench" ]; then
  echo
  echo "== record_bench (unit benchmarks of the write path)"
  "$build/bench/record_bench" --benchmark_out="$out/record_bench.json" \
    --benchmark_out_format=json
fi
if [ "$quick" = 0 ] && [ -x "$build/bench/access_bench" ]; then
  echo
  echo "== access_bench (unit benchmarks: a role enforced on the write path, issue 40)"
  "$build/bench/access_bench" --benchmark_repetitions=5 --benchmark_report_aggregates_only=true \
    --benchmark_out="$out/access_bench.json" --benchmark_out_format=json
fi
if [ "$quick" = 0 ] && [ -x "$build/bench/send_bench" ]; then
  echo
  echo "== send_bench (unit benchmark of a link's sending side)"
  "$build/bench/send_bench" --benchmark_out="$out/send_bench.json" --benchmark_out_format=json
fi

echo
"$bin/bench_report" "$out"

if [ "$plot" = 1 ]; then
  if ! command -v gnuplot >/dev/null; then
    sudo=""
    if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends gnuplot-nox
  fi
  mkdir -p "$root/docs/perf"
  gnuplot -e "data='$out'; pngs='$root/docs/perf'" "$root/cluster-tests/bench/plots.gp"
  cp "$out/bench-results.json" "$out/bench-results.md" "$root/docs/perf/"
  echo "plots and results: $root/docs/perf/"
fi

#!/usr/bin/env bash
# The buggified random schedule on fresh seeds, for as long as asked (issue 19's --long):
# each run is one cluster, one seed, CAIRN_SCHEDULE_STEPS steps, then heal and the model
# check (cluster-tests/scenarios/random_schedule_test.cc). Prints one line per seed, keeps the
# log of every failure, and ends with the probes: the fault points that fired in no run are
# windows these seeds never opened.
#
#   cluster-tests/soak.sh                     # 10 minutes
#   cluster-tests/soak.sh --minutes 60 --steps 400
#   cluster-tests/soak.sh --seeds 200         # a number of seeds instead of a time
#   CAIRND=/path/to/cairnd CAIRN_NODE_ARGS="--sync-writes" cluster-tests/soak.sh
#
# CAIRND runs another cairnd (your build); CAIRN_NODE_ARGS adds flags to every node;
# CAIRN_SCHEDULE another schedule binary (copies of both let a long soak go on while the tree
# is rebuilt: a rebuilt cairnd mid-run fails a restart with exit 127). Exits 1
# if any seed failed; each failure's log (with its replay line) is under build/soak/.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)

minutes=10
seeds=0
steps="${CAIRN_SCHEDULE_STEPS:-200}"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --minutes) minutes=$2; shift ;;
    --seeds) seeds=$2; shift ;;
    --steps) steps=$2; shift ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
  shift
done

schedule="${CAIRN_SCHEDULE:-$root/build/cluster-tests/random_schedule_test}"
[[ -x "$schedule" ]] || { echo "build the tests first (scripts/test.sh)" >&2; exit 2; }
out="$root/build/soak"
mkdir -p "$out"
rm -f "$out"/run-*.log

start=$(date +%s)
deadline=$((start + minutes * 60))
runs=0
failed=0
while :; do
  if [[ $seeds -gt 0 ]]; then
    [[ $runs -ge $seeds ]] && break
  else
    [[ $(date +%s) -ge $deadline ]] && break
  fi
  runs=$((runs + 1))
  log="$out/run.log"
  t0=$(date +%s)
  if CAIRN_FRESH_SEEDS=1 CAIRN_SCHEDULE_STEPS="$steps" \
    "$schedule" --gtest_filter='Seeds/RandomScheduleTest.HealsAndConverges/0' >"$log" 2>&1; then
    result=ok
  else
    result=FAILED
    failed=$((failed + 1))
  fi
  seed=$(grep -m1 -o 'random schedule: seed [0-9]*' "$log" | awk '{print $4}' || true)
  nodes=$(grep -m1 -o '[0-9] nodes' "$log" | cut -d' ' -f1 || true)
  echo "run $runs: seed ${seed:-?}, ${nodes:-?} nodes, $(($(date +%s) - t0)) s: $result"
  if [[ $result == FAILED ]]; then
    cp "$log" "$out/failed-${seed:-run$runs}.log"
    grep -m1 '^replay:' "$log" || true
  fi
  cp "$log" "$out/run-$runs.log"
done

echo "== soak: $runs seed(s) of $steps steps in $(( ($(date +%s) - start) / 60 )) min, $failed failed"
"$root/cluster-tests/probes.sh" "$out"/run-*.log
rm -f "$out"/run-*.log
[[ $failed -eq 0 ]]

#!/usr/bin/env bash
# The mutation check (issue 19): does the buggified random schedule catch the defects we know?
# Each cluster-tests/mutants/*.patch re-introduces one fixed defect. For each, this script
# builds cairnd with the patch in a scratch worktree and runs the random schedule against it
# (CAIRND=...) on fresh seeds until one fails, up to a limit. It reports per mutant the seeds
# and minutes it took to be caught and what failed, or that it survived. A mutant whose patch
# header says `Catcher: TEST ARGS` is one the schedule cannot see (the header says why): the
# script runs that unit test against it instead, and says so. Seeds alternate between the
# full schedule and a compact one (3 nodes, no buggified crashes: restarts reset links).
#
#   cluster-tests/mutations.sh                  # every mutant, up to 20 seeds each
#   cluster-tests/mutations.sh -n 40 d86-no-echo # one mutant, up to 40 seeds
#
# Needs a configured build/ (scripts/test.sh makes one) for the schedule binary; mutants are
# built in $TMPDIR with the same compiler cache. A mutant that survives its seeds is a
# window the schedule does not open yet: grow the schedule, not the limit.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=$(pwd)

max_seeds=20
if [[ "${1:-}" == "-n" ]]; then
  max_seeds=$2
  shift 2
fi
mutants=("$@")
if [[ ${#mutants[@]} -eq 0 ]]; then
  for p in cluster-tests/mutants/*.patch; do mutants+=("$(basename "$p" .patch)"); done
fi

schedule="$root/build/cluster-tests/random_schedule_test"
[[ -x "$schedule" ]] || { echo "build the tests first (scripts/test.sh)" >&2; exit 2; }
scratch=$(mktemp -d "${TMPDIR:-/tmp}/cairn-mutants-XXXXXX")
trap 'git -C "$root" worktree remove --force "$scratch/src" >/dev/null 2>&1 || true; rm -rf "$scratch"' EXIT
git -C "$root" worktree add -q --detach "$scratch/src" HEAD

report=()
for m in "${mutants[@]}"; do
  patch="$root/cluster-tests/mutants/$m.patch"
  [[ -f "$patch" ]] || { echo "no mutant $m" >&2; exit 2; }
  git -C "$scratch/src" checkout -q -- .
  git -C "$scratch/src" apply "$patch"
  # A mutant the schedule cannot see says so in its header, and names the test that sees it.
  catcher=$(sed -n 's/^Catcher: //p' "$patch")
  if [[ -n "$catcher" ]]; then
    read -r test_bin test_args <<<"$catcher"
    echo "== mutant $m: schedule-blind; building $test_bin"
    (
      cd "$scratch/src"
      export CCACHE_BASEDIR="$scratch/src" CCACHE_NOHASHDIR=1
      [[ -f build/build.ninja ]] || cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCAIRN_BUILD_BENCH=OFF >/dev/null
      ninja -C build "tests/$test_bin" >/dev/null
    )
    if "$scratch/src/build/tests/$test_bin" $test_args >"$scratch/$m.log" 2>&1; then
      line="$m: schedule-blind, and $test_bin did not catch it: SURVIVED"
    else
      line="$m: schedule-blind (see its header); caught by $test_bin $test_args"
    fi
    echo "$line"
    report+=("$line")
    continue
  fi
  echo "== mutant $m: building cairnd"
  (
    cd "$scratch/src"
    export CCACHE_BASEDIR="$scratch/src" CCACHE_NOHASHDIR=1
    [[ -f build/build.ninja ]] || cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCAIRN_BUILD_BENCH=OFF >/dev/null
    ninja -C build node/cairnd >/dev/null
  )
  start=$(date +%s)
  caught=""
  for ((i = 1; i <= max_seeds; ++i)); do
    log="$scratch/$m-$i.log"
    # Every other seed runs the compact profile: 3 nodes, no buggified crashes. A crash and
    # its restart reset every link of the node, which hides a link left stuck (r5).
    profile=()
    ((i % 2 == 0)) && profile=(CAIRN_SCHEDULE_NODES=3 CAIRN_BUGGIFY_CRASHES=0)
    if ! env "${profile[@]}" CAIRND="$scratch/src/build/node/cairnd" CAIRN_FRESH_SEEDS=1 \
      "$schedule" --gtest_filter='*/0' >"$log" 2>&1; then
      seed=$(grep -m1 -o 'CAIRN_TEST_SEED=[0-9]*' "$log" | cut -d= -f2)
      # What failed: the first assertion's message (a model rule, convergence, an answer).
      why=$({ grep -m1 -A4 ': Failure$' "$log" || echo "- no assertion failed: a crash?"; } |
        tail -n +2 | tr '\n' ' ' | cut -c1-240)
      caught="caught at seed $i of $max_seeds (CAIRN_TEST_SEED=$seed): $why"
      cp "$log" "$root/build/mutant-$m.log"
      break
    fi
  done
  minutes=$(awk -v s=$(($(date +%s) - start)) 'BEGIN { printf "%.1f", s / 60 }')
  line="$m: ${caught:-SURVIVED $max_seeds seeds}, $minutes min"
  echo "$line"
  report+=("$line")
done
echo "== mutation check"
printf '%s\n' "${report[@]}"
for line in "${report[@]}"; do [[ "$line" == *SURVIVED* ]] && exit 1; done
exit 0

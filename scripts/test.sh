#!/usr/bin/env bash
# Builds cairn and runs every test through ctest. Installs what is missing first.
#
#   scripts/test.sh              # gcc RelWithDebInfo build in build/, all tests
#   scripts/test.sh --sanitize   # clang + ASan/UBSan + -Wthread-safety in build-asan/, all tests
#   scripts/test.sh --long       # also: random cluster schedules of 600 steps, fresh seeds,
#                                #   then 10 more minutes of fresh seeds (cluster-tests/soak.sh)
#   scripts/test.sh --long=60    # ... for 60 minutes
#   scripts/test.sh -L unit      # extra arguments go to ctest (-L cluster: the scenarios)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
sanitize=0
soak_minutes=0
while [ $# -gt 0 ]; do
  case "$1" in
    --sanitize) sanitize=1 ;;
    --long | --long=*)
      # cluster-tests/scenarios/random_schedule_test.cc: longer schedules, new seeds each run
      # (each test prints its seed; CAIRN_TEST_SEED=<seed> replays it); then the soak.
      export CAIRN_SCHEDULE_STEPS="${CAIRN_SCHEDULE_STEPS:-600}"
      export CAIRN_FRESH_SEEDS=1
      soak_minutes=10
      [[ "$1" == --long=* ]] && soak_minutes="${1#--long=}"
      ;;
    *) break ;;
  esac
  shift
done

"$root/scripts/setup.sh" --no-build

export CCACHE_BASEDIR="$root"
export CCACHE_NOHASHDIR=1
jobs=$(nproc)

if [ "$sanitize" = 1 ]; then
  build="${CAIRN_BUILD_DIR:-$root/build-asan}"
  if [ ! -f "$build/build.ninja" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
      -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
      -DCAIRN_SANITIZE=ON -DCAIRN_BUILD_BENCH=OFF
  fi
  # The random schedules run half as long under the sanitizers (each step costs 2-3x there):
  # the gcc pass runs them whole, and this pass is for memory and undefined behaviour, which
  # every kind of step still reaches. Keeps the CI run under 40 minutes.
  export CAIRN_SCHEDULE_STEPS="${CAIRN_SCHEDULE_STEPS:-100}"
  export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0"
  export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
else
  build="${CAIRN_BUILD_DIR:-$root/build}"
  if [ ! -f "$build/build.ninja" ]; then
    cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
      -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
  fi
fi

cmake --build "$build" -j "$jobs"
rc=0
ctest --test-dir "$build" --output-on-failure -j "$jobs" "$@" || rc=$?
if [ "$rc" != 0 ]; then
  # Why each test failed, once more at the end, where a run's tail shows it.
  "$root/scripts/failure_digest.sh" "$build/Testing/Temporary/LastTest.log" | head -400
  exit "$rc"
fi
# What the random schedule's seeds opened: ctest keeps passing tests' output in its log.
if [ -f "$build/Testing/Temporary/LastTest.log" ]; then
  "$root/cluster-tests/probes.sh" "$build/Testing/Temporary/LastTest.log"
fi
if [ "$soak_minutes" -gt 0 ] && [ "$sanitize" = 0 ]; then
  "$root/cluster-tests/soak.sh" --minutes "$soak_minutes" --steps "$CAIRN_SCHEDULE_STEPS"
fi

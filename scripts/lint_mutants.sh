#!/usr/bin/env bash
# Every mutant still applies to the tree (issue 42): each cluster-tests/mutants/*.patch
# re-introduces one fixed defect for cluster-tests/mutations.sh, so a split or a rename that
# moves the code a mutant changes must move the mutant with it. Run by ctest (lint.mutants).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
fail=0
n=0
for p in cluster-tests/mutants/*.patch; do
  n=$((n + 1))
  if ! out=$(git apply --check "$p" 2>&1); then
    echo "lint_mutants: $p no longer applies; make it again against the moved code:"
    echo "$out" | sed 's/^/  /'
    fail=1
  fi
done
if [ "$fail" = 0 ]; then echo "lint_mutants: ok ($n mutants apply)"; fi
exit "$fail"

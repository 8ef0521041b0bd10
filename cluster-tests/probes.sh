#!/usr/bin/env bash
# Sums the random schedule's probes over one or more logs (test output, ctest's LastTest.log)
# and prints the fault points that fired in none of the runs in them: the windows those seeds
# never opened (issue 19's code probes). Used by soak.sh and scripts/test.sh.
#
#   cluster-tests/probes.sh build/Testing/Temporary/LastTest.log
set -euo pipefail
runs=0
for log in "$@"; do
  runs=$((runs + $(grep -c '^probes (point' "$log" || true)))
done
if [[ $runs -eq 0 ]]; then
  echo "probes: no random schedule reported any"
  exit 0
fi
# Probe lines: "  point: nodes active, hits, fired, errors".
cat "$@" | sed -n '/^probes (point/,/^never fired/p' | { grep '^  ' || true; } |
  awk -F'[:,]' -v runs="$runs" '
    { gsub(/ /, "", $1); seen[$1] = 1; if ($4 + 0 > 0) fired[$1] += 1 }
    END {
      blind = ""
      for (p in seen) if (!(p in fired)) blind = blind " " p
      printf "probes over %d run(s): fired in no run:%s\n", runs, (blind == "" ? " none" : blind)
    }'

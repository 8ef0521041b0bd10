#!/usr/bin/env bash
# Prints what each failed test in a ctest log said when it failed: gtest's failure lines with
# a few lines after each, sanitizer reports, nodes that exited, cluster reports' headers. A
# long run's failing output sits in the middle of ctest's; scripts/test.sh prints this digest
# last, where a CI excerpt that keeps only the tail of the run still shows why it failed.
#
#   scripts/failure_digest.sh build/Testing/Temporary/LastTest.log
set -euo pipefail
log=${1:?usage: scripts/failure_digest.sh LastTest.log}
[ -f "$log" ] || exit 0
awk '
  # ctest: "N/M Testing: <name>" opens a test, "Test Passed." (or Failed, ...) closes it.
  /^[0-9]+\/[0-9]+ Testing: / { name = $0; sub(/^[^:]*: /, "", name); n = 0; after = 0; next }
  /^Test Passed\.$/ { name = ""; n = 0; next }
  /^Test [A-Za-z ]+\.$/ {
    if (name != "") {
      printf "==== failed: %s (%s)\n", name, $0
      for (i = 0; i < n; ++i) print "  " kept[i]
      if (n == 0) print "  (no failure line found; see the full log)"
    }
    name = ""; n = 0; next
  }
  name == "" { next }
  /: Failure$|^Expected|^Value of|^ *Which is|Failure:|ERROR: AddressSanitizer|runtime error:|^==== cluster report|^---- n[0-9]|timed out/ {
    after = 6
  }
  after > 0 && n < 80 { kept[n++] = $0; --after }
' "$log"

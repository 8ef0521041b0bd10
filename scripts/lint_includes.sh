#!/usr/bin/env bash
# Include rules (README.md "Layout", ../shared/STYLE.md 2.1):
#  1. dependencies point one way: node -> replication -> catalog -> storage -> common;
#  2. catalog/ and storage/ (and common/) never include gRPC;
#  3. <component>/internal/ headers are included only from that component and its tests.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
fail=0
bad() { echo "lint_includes: $*"; fail=1; }

# 2. no gRPC below replication/
if grep -rnE '#include [<"]grpc' common storage catalog 2>/dev/null; then
  bad "gRPC included in common/, storage/ or catalog/"
fi
# 1. one-way dependencies
check_layer() {  # dir, forbidden include prefixes...
  local dir=$1; shift
  for p in "$@"; do
    if [ -d "$dir" ] && grep -rn "#include \"$p/" "$dir" 2>/dev/null; then
      bad "$dir/ must not include $p/"
    fi
  done
}
check_layer common storage catalog replication node
check_layer storage catalog replication node
check_layer catalog replication node
check_layer replication node
# 3. internal headers stay home
for comp in common storage catalog replication node; do
  grep -rln "#include \"$comp/internal/" --include='*.cc' --include='*.h' . 2>/dev/null |
    grep -vE "^\./($comp|tests/$comp)/" | while read -r f; do
      echo "lint_includes: $f includes $comp/internal/"
      echo fail
    done | grep -q fail && fail=1
done
[ $fail = 0 ] && echo "lint_includes: ok"
exit $fail

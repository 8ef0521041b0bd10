#!/usr/bin/env bash
# The docs lint (scripts/lint_docs.py, issue 42 point 7) passes on a tree whose references hold
# and fails, naming the reference, on each kind of broken one planted in it.
set -uo pipefail
lint="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/scripts/lint_docs.py"
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT
fail=0

plant() {  # a fresh tree whose README.md says "$1"
  rm -rf "${tree:?}"/*
  mkdir -p "$tree/docs/design" "$tree/catalog" "$tree/bench"
  echo "# core" > "$tree/docs/design/0001-single-node-core.md"
  echo "// catalog" > "$tree/catalog/catalog_drop.cc"
  echo "// a program" > "$tree/bench/send_bench.cc"
  printf '# tree\n\n%s\n' "$1" > "$tree/README.md"
}
expect() {  # expect <exit code> <text the output must hold> <README line>
  plant "$3"
  out=$(python3 "$lint" --root "$tree" 2>&1)
  rc=$?
  if [ "$rc" != "$1" ] || ! grep -qF -- "$2" <<<"$out"; then
    echo "FAIL: README saying [$3]: want exit $1 and [$2], got exit $rc:"
    echo "$out"
    fail=1
  fi
}

expect 0 "lint_docs: ok" 'See `catalog/catalog_drop.cc`, `catalog_drop.cc:12`, `bench/send_bench` and docs/design/0001-single-node-core.md (0001-single-node-core).'
expect 0 "lint_docs: ok" 'Outside the tree: `../shared/SPEC.md`, `ready.json`, `SPEC.md`, `catalog/record_store_*.cc`.'
expect 1 '`catalog/record_store_maintenance.cc` does not exist' 'Purges: `catalog/record_store_maintenance.cc`.'  # lint_docs: planted
expect 1 '`record_store_maintenance.cc` names no file' 'Purges: `record_store_maintenance.cc`.'  # lint_docs: planted
expect 1 '`docs/design/0007-front-doors.md` does not exist' 'Front doors: docs/design/0007-front-doors.md.'  # lint_docs: planted
expect 1 '0001-front-doors names note 0001, which is 0001-single-node-core.md' 'See 0001-front-doors.'  # lint_docs: planted
expect 1 'design note 0002 does not exist' 'See 0002-node-program.'  # lint_docs: planted
planted='// See `catalog/catalog_peer.cc`.'
plant ""
echo "$planted" >> "$tree/catalog/catalog_drop.cc"
out=$(python3 "$lint" --root "$tree" 2>&1)
if ! grep -qF 'catalog/catalog_drop.cc:2: `catalog/catalog_peer.cc` does not exist' <<<"$out"; then
  echo "FAIL: a broken path in a source comment was not reported"
  fail=1
fi
[ $fail = 0 ] && echo "lint_docs_test: ok"
exit $fail

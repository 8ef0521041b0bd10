#!/usr/bin/env bash
# Builds cairn (installing what is missing) and runs the single-node smoke tour on a data
# directory under var/. Until the cairnd server lands this is the "show it working" command.
#
#   scripts/run-node.sh [records]
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
"$root/scripts/setup.sh"
build="${CAIRN_BUILD_DIR:-$root/build}"
data="$root/var/smoke-node"
mkdir -p "$data"
"$build/node/cairn-smoke" "$data" "${1:-10000}"

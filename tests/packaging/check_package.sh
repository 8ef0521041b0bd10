#!/usr/bin/env bash
# Packages an existing build with scripts/package.sh --build-dir and checks the .deb: the
# binaries, the systemd unit and the config are in it, the config is a conffile, postinst is
# there and Depends names adduser. Prints PASS/FAIL per check; exit 0 only if all pass.
#
#   tests/packaging/check_package.sh BUILD_DIR     # BUILD_DIR configured and built
set -euo pipefail

if [ $# -ne 1 ]; then
  echo "usage: tests/packaging/check_package.sh BUILD_DIR" >&2
  exit 2
fi
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=$1

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! "$root/scripts/package.sh" --build-dir "$build" --out "$tmp" >"$tmp/package.log" 2>&1; then
  cat "$tmp/package.log" >&2
  echo "FAIL scripts/package.sh --build-dir $build"
  exit 1
fi
shopt -s nullglob
debs=("$tmp"/cairn_*.deb)
if [ ${#debs[@]} -ne 1 ]; then
  echo "FAIL expected one cairn_*.deb in the output, found ${#debs[@]}"
  exit 1
fi
deb=${debs[0]}
echo "PASS made $(basename "$deb")"

dpkg-deb -c "$deb" | awk '{print $NF}' >"$tmp/contents"
dpkg-deb -I "$deb" >"$tmp/info"
dpkg-deb -f "$deb" Depends >"$tmp/depends"

failures=0
check() {  # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@"; then
    echo "PASS $what"
  else
    echo "FAIL $what"
    failures=$((failures + 1))
  fi
}
for f in ./usr/bin/cairnd ./usr/bin/cairn ./lib/systemd/system/cairnd.service \
         ./etc/cairn/cairnd.yaml; do
  check "contains $f" grep -qxF "$f" "$tmp/contents"
done
mkdir "$tmp/control"
dpkg-deb -e "$deb" "$tmp/control"
check "conffiles lists /etc/cairn/cairnd.yaml" \
  grep -qxF /etc/cairn/cairnd.yaml "$tmp/control/conffiles"
check "dpkg-deb -I lists conffiles" grep -qw conffiles "$tmp/info"
check "postinst present and executable" test -x "$tmp/control/postinst"
check "Depends mentions adduser" grep -qw adduser "$tmp/depends"

if ((failures)); then
  echo "FAIL $failures check(s); Depends: $(cat "$tmp/depends")"
  exit 1
fi
echo "PASS all checks"

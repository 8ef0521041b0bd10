#!/usr/bin/env bash
# Builds the Debian package of cairn (cairn_<version>_<arch>.deb: cairnd, cairn, the systemd
# unit, /etc/cairn/cairnd.yaml; see cmake/packaging.cmake and packaging/).
#
#   scripts/package.sh                      # Release build of cairnd and cairn in build/package
#   scripts/package.sh --build-dir DIR      # package an existing, configured and built DIR
#   scripts/package.sh --out DIR            # write the .deb to DIR (cpack -B; -B DIR too)
#   CAIRN_PACKAGE_BUILD_DIR=... CAIRN_VERSION=0.2.0 scripts/package.sh
#
# Without --build-dir it installs what is missing (scripts/setup.sh --no-build), configures
# a Release build without test hooks, benchmarks or tests, and builds only cairnd and cairn.
# With --build-dir it neither configures nor builds. Prints the .deb's path and contents.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

die() {
  echo "package: $*" >&2
  exit 1
}
usage_error() {
  echo "package: $*" >&2
  echo "usage: scripts/package.sh [--build-dir DIR] [--out DIR]" >&2
  exit 2
}

existing=""
out=""
while (($#)); do
  case "$1" in
    --build-dir) (($# >= 2)) || usage_error "--build-dir needs a directory"; existing=$2; shift 2 ;;
    --out|-B) (($# >= 2)) || usage_error "$1 needs a directory"; out=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) usage_error "unknown argument '$1'" ;;
  esac
done

# cpack needs dpkg-shlibdeps (dpkg-dev), file and strip (binutils).
# shellcheck source=scripts/lib/packages.sh
. "$root/scripts/lib/packages.sh"
install_missing package dpkg-dev file binutils

if [ -n "$existing" ]; then
  build=$(cd "$existing" 2>/dev/null && pwd) || die "no build directory '$existing'"
  [ -f "$build/CPackConfig.cmake" ] ||
    die "$build has no CPackConfig.cmake: configure it again (cmake $build)"
  for t in cairnd cairn; do
    [ -x "$build/node/$t" ] ||
      die "$build/node/$t is not built: cmake --build $build --target cairnd cairn"
  done
  if grep -q '^CAIRN_TEST_HOOKS:BOOL=ON' "$build/CMakeCache.txt"; then
    echo "package: note: $build has CAIRN_TEST_HOOKS=ON (test hooks compiled in): not a release"
  fi
else
  "$root/scripts/setup.sh" --no-build
  export CCACHE_BASEDIR="$root"
  export CCACHE_NOHASHDIR=1
  build="${CAIRN_PACKAGE_BUILD_DIR:-$root/build/package}"
  version_flag=()
  if [ -n "${CAIRN_VERSION:-}" ]; then version_flag=("-DCAIRN_VERSION=$CAIRN_VERSION"); fi
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DCAIRN_TEST_HOOKS=OFF -DCAIRN_BUILD_BENCH=OFF -DCAIRN_BUILD_TESTS=OFF \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache "${version_flag[@]}"
  cmake --build "$build" --target cairnd cairn
fi

out=${out:-$build}
mkdir -p "$out"
out=$(cd "$out" && pwd)
log="$out/cpack.log"
if ! (cd "$build" && cpack -G DEB -B "$out") >"$log" 2>&1; then
  cat "$log" >&2
  die "cpack failed (log: $log)"
fi
deb=$(sed -n 's/^CPack: - package: \(.*\.deb\) generated\.$/\1/p' "$log" | tail -n 1)
if [ -z "$deb" ] || [ ! -f "$deb" ]; then
  cat "$log" >&2
  die "cpack made no .deb (log: $log)"
fi

echo "package: $deb"
dpkg-deb -I "$deb"
dpkg-deb -c "$deb"

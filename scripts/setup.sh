#!/usr/bin/env bash
# Installs every package cairn needs (Debian 12), then configures and builds with Ninja and
# ccache. Idempotent: a second run installs nothing and rebuilds only what changed.
#
#   scripts/setup.sh              # release-ish build (RelWithDebInfo) into build/
#   scripts/setup.sh --no-build   # packages only
#   CAIRN_BUILD_DIR=... scripts/setup.sh
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

packages=(
  g++ clang cmake ninja-build pkg-config ccache
  librocksdb-dev rocksdb-tools
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  libabsl-dev libspdlog-dev libfmt-dev
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev
  libcpp-httplib-dev libboost1.74-dev libyaml-cpp-dev libssl-dev libsodium-dev
  libclang-rt-14-dev curl python3 openssl
  iproute2 iptables libnetfilter-queue-dev dpkg-dev file
)

# shellcheck source=scripts/lib/packages.sh
. "$root/scripts/lib/packages.sh"
install_missing setup "${packages[@]}"

[ "${1:-}" = "--no-build" ] && exit 0

# ccache: share hits between clones of the repository (CI builds a fresh clone).
export CCACHE_BASEDIR="$root"
export CCACHE_NOHASHDIR=1

build="${CAIRN_BUILD_DIR:-$root/build}"
if [ ! -f "$build/build.ninja" ]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_COMPILER_LAUNCHER=ccache
fi
cmake --build "$build"

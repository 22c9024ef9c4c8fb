#!/usr/bin/env bash
# setup.sh - install the Debian packages fwm needs (only those missing) and configure + build it.
#
#   scripts/setup.sh [BUILD_DIR [MESON_OPTIONS...]]     (default BUILD_DIR: build)
#
# Needs root (or sudo) only when a package is missing. Safe to run again: it only does what is left.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  gcc pkg-config meson ninja-build        # toolchain and build
  clang libclang-rt-14-dev                # fuzz targets (libFuzzer) and clang's sanitizers
  libuv1-dev libmsgpack-dev libmimalloc-dev libopenblas-dev liblmdb-dev   # libraries
  python3 python3-numpy python3-msgpack python3-xxhash        # test references and Python client
  python3-pip python3-setuptools          # offline install of the Python client (tests/install)
  gnuplot-nox                             # training learning-curve plots
  openmpi-bin libopenmpi-dev              # data-parallel fwm-train under mpirun (meson -Dmpi=auto finds it)
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

build_dir=${1:-build}
shift || true
if [ ! -f "$build_dir/build.ninja" ]; then
  meson setup "$build_dir" "$@"
elif [ $# -gt 0 ]; then
  meson configure "$build_dir" "$@"
fi
meson compile -C "$build_dir"

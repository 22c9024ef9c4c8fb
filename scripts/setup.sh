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
  libwebsockets-dev libwebsockets-evlib-uv  # fwm-serve --http: HTTP/WebSocket on its libuv loop (lws loads the uv plugin)
  prometheus                              # promtool checks /metrics (tests/server/test_http.py)
  python3-websocket                       # WebSocket client of tests/server/test_http.py
  libhiredis-dev                          # the Redis session store of fwm-serve clusters (--store redis://)
  redis-server                            # started by the Redis store and cluster tests (tests/server)
  python3 python3-numpy python3-msgpack python3-xxhash        # test references and Python client
  python3-pip python3-setuptools python3-venv   # the Python client's install into a venv (README, tests/install)
  python3-torch                           # PyTorch references: the MNM's, GFW's and STM's gradients (tests/train)
  gnuplot-nox                             # training learning-curve plots
  chromium                                # the web page's test in a real (headless) browser
  openmpi-bin libopenmpi-dev              # data-parallel fwm-train under mpirun (meson -Dmpi=auto finds it)
)
# The JavaScript client (clients/js) and its tests need Node (>= 18) and npm: a node already on PATH
# (e.g. from nodesource, which bundles npm) is used as it is; only when there is none are Debian's own
# nodejs and npm installed.
command -v node >/dev/null 2>&1 || packages+=(nodejs npm)
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

# The JavaScript client's npm packages, exactly as package-lock.json pins them (npm ci), when the
# lock file is newer than what is installed.
# npm packages, pinned by their lock files: the JavaScript client's (clients/js: @msgpack/msgpack, and
# for its tests typescript and ws) and the web page's test driver (web: puppeteer-core).
for js in clients/js web; do
  if command -v npm >/dev/null 2>&1 && [ -f "$js/package-lock.json" ] &&
     [ ! "$js/node_modules/.package-lock.json" -nt "$js/package-lock.json" ]; then
    echo "setup: npm ci in $js"
    (cd "$js" && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund) ||
      echo "setup: npm ci failed in $js; its tests will skip until it succeeds"
  fi
done

# The Jane Austen corpus of the prose models (docs/CORPUS.md): the six novels from Debian's
# r-cran-janeaustenr, read without R, as data/austen/{train,valid,test}.txt (done once; the script
# does nothing when they are there and current).
/usr/bin/python3 scripts/prepare_austen.py --out data/austen

build_dir=${1:-build}
shift || true
if [ ! -f "$build_dir/build.ninja" ]; then
  meson setup "$build_dir" "$@"
elif [ $# -gt 0 ]; then
  meson configure "$build_dir" "$@"
fi
meson compile -C "$build_dir"

#!/usr/bin/env bash
# test.sh - the whole test suite: set up, build with warnings as errors and run every test, then
# build again under AddressSanitizer + UndefinedBehaviorSanitizer and run every test there too.
#
#   scripts/test.sh            (what CI runs)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh build -Dwerror=true
meson test -C build --print-errorlogs --num-processes 2

scripts/setup.sh build-sanitize -Dwerror=true -Db_sanitize=address,undefined \
  -Db_lundef=false -Dallocator=libc -Dbuildtype=debugoptimized
meson test -C build-sanitize --setup sanitize --print-errorlogs --num-processes 2

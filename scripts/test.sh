#!/usr/bin/env bash
# test.sh - the whole test suite: set up, build with warnings as errors and run every test, then
# build again under AddressSanitizer + UndefinedBehaviorSanitizer and run every test there too, then
# build the fuzz targets with clang (libFuzzer, ASan, UBSan) and replay and briefly fuzz each.
#
#   scripts/test.sh            (what CI runs)
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh build -Dwerror=true
meson test -C build --print-errorlogs --num-processes 2

scripts/setup.sh build-sanitize -Dwerror=true -Db_sanitize=address,undefined \
  -Db_lundef=false -Dallocator=libc -Dbuildtype=debugoptimized
meson test -C build-sanitize --setup sanitize --print-errorlogs --num-processes 2

# 3. The fuzz targets built by clang with libFuzzer, AddressSanitizer and UndefinedBehaviorSanitizer
#    (clang's UBSan catches what GCC's misses): replay every seed corpus, then fuzz each target for a
#    few seconds from it (tests/fuzz/README.md). A crash here is a bug; its input is printed.
if [ ! -f build-fuzz/build.ninja ]; then
  CC=clang meson setup build-fuzz -Dfuzz=true -Dbuildtype=debugoptimized >/dev/null
fi
fuzz_targets=(fuzz_model_load fuzz_state_import fuzz_tokenize fuzz_protocol fuzz_text)
meson compile -C build-fuzz "${fuzz_targets[@]}"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
for t in "${fuzz_targets[@]}"; do
  corpus="tests/fuzz/corpus/${t#fuzz_}"
  mkdir -p "$scratch/$t" && cp "$corpus"/* "$scratch/$t/"
  status=0
  build-fuzz/tests/fuzz/$t -runs=0 "$corpus" > "$scratch/$t.log" 2>&1 &&
    build-fuzz/tests/fuzz/$t -max_total_time="${FWM_FUZZ_SECONDS:-15}" -max_len=8192 \
      -artifact_prefix="$scratch/" "$scratch/$t" >> "$scratch/$t.log" 2>&1 || status=$?
  echo "$t: $(grep -E '^Done [0-9]+ runs' "$scratch/$t.log" | tail -1)"
  if [ "$status" -ne 0 ]; then
    tail -40 "$scratch/$t.log"
    exit 1
  fi
done

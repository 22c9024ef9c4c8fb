#!/usr/bin/env bash
# test_load_report.sh - bench/server/load_report.sh end to end on a small load: it must start a
# fresh fwm-serve per repetition, drive it with bench-serve over TCP and a Unix socket, and print
# every run's figures and their medians. Asserts that the figures are there and plausible (tokens
# flowed, latencies parsed), never how fast they are.
#   test_load_report.sh SOURCE_ROOT BUILD_ROOT BABI_DIR
set -uo pipefail
src=$1 build=$2 babi=$3
if [ ! -d "$babi/en-valid-10k" ]; then
    echo "SKIP: no bAbI data at $babi (meson setup -Dbabi_dir=DIR)"
    exit 77
fi
out=$(FWM_BABI_DIR="$babi" bash "$src/bench/server/load_report.sh" --build "$build" --repeat 2 -- \
      --sessions 20 --connections 4 --rate 20 --seconds 1 --warmup 0.5 2>&1)
status=$?
echo "$out"
fail() { echo "FAIL: $*"; exit 1; }
[ $status -eq 0 ] || fail "load_report.sh exited with $status"
for i in 1 2; do
    line=$(grep "^run $i: " <<< "$out") || fail "no line for run $i"
    tps=$(sed -n 's/^run [0-9]*: \([0-9.]*\) tokens\/s.*/\1/p' <<< "$line")
    awk -v t="$tps" 'BEGIN { exit !(t > 0) }' || fail "run $i moved no tokens: $line"
    grep -q "p50/p99 [0-9.]* / [0-9.]* ms" <<< "$line" || fail "run $i has no latencies: $line"
done
grep -q "^median of 2: [0-9.]* tokens/s, per-token p50 [0-9.]* ms, p99 [0-9.]* ms" <<< "$out" ||
    fail "no median line"
echo "load_report.sh: OK"

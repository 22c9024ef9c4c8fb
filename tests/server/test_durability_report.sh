#!/usr/bin/env bash
# test_durability_report.sh - bench/server/durability_report.sh end to end on a small load: one run
# per mode (memory, never, interval, always), each on a fresh fwm-serve and data folder, then the
# medians and ratios. Asserts that every mode's figures are there and tokens flowed, never how fast.
#   test_durability_report.sh SOURCE_ROOT BUILD_ROOT BABI_DIR
set -uo pipefail
src=$1 build=$2 babi=$3
if [ ! -d "$babi/en-valid-10k" ]; then
    echo "SKIP: no bAbI data at $babi (meson setup -Dbabi_dir=DIR)"
    exit 77
fi
out=$(FWM_BABI_DIR="$babi" bash "$src/bench/server/durability_report.sh" --build "$build" --repeat 1 -- \
      --sessions 20 --connections 4 --seconds 1 --warmup 0.3 2>&1)
status=$?
echo "$out"
fail() { echo "FAIL: $*"; exit 1; }
[ $status -eq 0 ] || fail "durability_report.sh exited with $status"
for mode in memory never interval always; do
    line=$(grep "^run 1 $mode: " <<< "$out") || fail "no run line for $mode"
    tps=$(sed -n 's/^run 1 [a-z]*: \([0-9.]*\) tokens\/s.*/\1/p' <<< "$line")
    awk -v t="$tps" 'BEGIN { exit !(t > 0) }' || fail "$mode moved no tokens: $line"
    grep -q "^  $mode *[0-9.]* tokens/s  ([0-9.]*)" <<< "$out" || fail "no median line for $mode"
done
echo "durability_report.sh: OK"

#!/usr/bin/env bash
# test_cluster_report.sh - bench/server/cluster_report.sh end to end on a small load: 1 node on LMDB,
# then 1 and 2 nodes sharing a redis-server. Asserts that every run's figures are there, tokens flowed
# and Redis' per-token counters were read, never how fast.
#   test_cluster_report.sh SOURCE_ROOT BUILD_ROOT BABI_DIR
set -uo pipefail
src=$1 build=$2 babi=$3
if [ ! -d "$babi/en-valid-10k" ]; then
    echo "SKIP: no bAbI data at $babi (meson setup -Dbabi_dir=DIR)"
    exit 77
fi
if ! command -v redis-server > /dev/null; then
    echo "SKIP: redis-server is not installed (scripts/setup.sh installs it: Debian redis-server)"
    exit 77
fi
out=$(FWM_BABI_DIR="$babi" bash "$src/bench/server/cluster_report.sh" --build "$build" --nodes "1 2" -- \
      --sessions 20 --connections 4 --seconds 1 --warmup 0.3 2>&1)
status=$?
echo "$out"
fail() { echo "FAIL: $*"; exit 1; }
[ $status -eq 0 ] || fail "cluster_report.sh exited with $status"
for label in "1 node, LMDB --data-dir" "1 node(s), Redis --store" "2 node(s), Redis --store"; do
    line=$(grep -F "$label: " <<< "$out") || fail "no line for $label"
    tps=$(sed -n 's/.*: \([0-9.]*\) tokens\/s aggregate.*/\1/p' <<< "$line")
    awk -v t="$tps" 'BEGIN { exit !(t > 0) }' || fail "$label moved no tokens: $line"
done
[ "$(grep -c '^  Redis: [0-9]* tokens stepped, [0-9]* commands.*per token: [0-9.]* commands, [0-9]* bytes$' <<< "$out")" = 2 ] \
    || fail "Redis' counters per token missing"
echo "cluster_report.sh: OK"

#!/usr/bin/env bash
# durability_report.sh - what durable sessions cost: fwm-serve under the same bench-serve load in
# memory-only mode and with --data-dir in each --fsync mode (never, interval, always), interleaved
# (one run of each mode per repetition, each on a fresh server and a fresh data folder), then the
# medians per mode and their ratio to memory-only, all from this one invocation.
#
#   bench/server/durability_report.sh [--build DIR] [--model FILE] [--repeat N] [--server "OPTS"]
#                                     [--modes "memory never interval always"] -- BENCH-OPTS
#   e.g. bench/server/durability_report.sh --repeat 3 -- --sessions 1000 --seconds 8
#
# Defaults: build dir `build`, the bundled model, 3 repetitions. The data folders live in a temp
# folder on the file system of $TMPDIR (the fsync cost is that disk's). Prints figures; never fails
# on them.
set -euo pipefail
# shellcheck source=report_common.sh
source "$(dirname "$0")/report_common.sh"
report_init durability_report.sh 3 "$@"
modes="${modes:-memory never interval always}"
echo "data folders on: $(df -h "$work" | tail -1 | awk '{print $1, $6}')"
echo "server: fwm-serve $(basename "$model") $server_opts; load: bench-serve ${bench_args[*]}"
for i in $(seq "$repeat"); do
    for mode in $modes; do
        rm -rf "$work/data"
        durable=()
        [ "$mode" = memory ] || durable=(--data-dir "$work/data" --fsync "$mode")
        report_run "$work/run.txt" --max-sessions 1000000 "${durable[@]}"
        read -r tps p50 p99 r50 r99 <<< "$(report_figures "$work/run.txt")"
        echo "run $i $mode: $tps tokens/s, per-token p50/p99 $p50 / $p99 ms, request p50/p99 $r50 / $r99 ms"
        echo "$tps $p50 $p99 $r50 $r99" >> "$work/$mode.txt"
    done
done
base=$(cut -d' ' -f1 "$work/memory.txt" 2>/dev/null | median)
echo "medians of $repeat (ratio: tokens/s against memory-only in this invocation):"
for mode in $modes; do
    tps=$(cut -d' ' -f1 "$work/$mode.txt" | median)
    printf "  %-9s %10s tokens/s  (%.3f)  per-token p50 %s ms, p99 %s ms; request p50 %s ms, p99 %s ms\n" \
        "$mode" "$tps" "$(echo "$tps ${base:-$tps}" | awk '{print $1 / $2}')" \
        "$(cut -d' ' -f2 "$work/$mode.txt" | median)" "$(cut -d' ' -f3 "$work/$mode.txt" | median)" \
        "$(cut -d' ' -f4 "$work/$mode.txt" | median)" "$(cut -d' ' -f5 "$work/$mode.txt" | median)"
done
echo "closed loop (no --rate): per-token latency is the wait between streamed tokens, which durable"
echo "modes deliver in bursts per commit; compare request latency there, and use --rate R (open loop,"
echo "one word per feed) for per-token request-to-prediction latency."

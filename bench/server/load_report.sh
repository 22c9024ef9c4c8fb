#!/usr/bin/env bash
# load_report.sh - the fwm-serve load figures of docs/PERFORMANCE.md, reproducibly: starts fwm-serve
# on a free TCP port and a Unix socket, runs bench-serve REPEAT times against it (a fresh server for
# every repetition, so no run inherits another's state), prints each run's line and the medians.
#
#   bench/server/load_report.sh [--build DIR] [--model FILE] [--repeat N] [--server "OPTS"] -- BENCH-OPTS
#   e.g. bench/server/load_report.sh --repeat 5 -- --sessions 1000 --rate 30 --seconds 8
#
# Defaults: build dir `build`, the bundled model, 5 repetitions, the server's default options.
# A benchmark prints figures; it never fails on them (it fails only if a run cannot start).
set -euo pipefail
# shellcheck source=report_common.sh
source "$(dirname "$0")/report_common.sh"
report_init load_report.sh 5 "$@"
echo "server: fwm-serve $(basename "$model") $server_opts; load: bench-serve ${bench_args[*]}"
for i in $(seq "$repeat"); do
    report_run "$work/run.txt"
    read -r tps p50 p99 _ <<< "$(report_figures "$work/run.txt")"
    echo "run $i: $tps tokens/s, per-token p50/p99 $p50 / $p99 ms"
    echo "$tps $p50 $p99" >> "$work/all.txt"
done
echo "median of $repeat: $(cut -d' ' -f1 "$work/all.txt" | median) tokens/s," \
     "per-token p50 $(cut -d' ' -f2 "$work/all.txt" | median) ms, p99 $(cut -d' ' -f3 "$work/all.txt" | median) ms"

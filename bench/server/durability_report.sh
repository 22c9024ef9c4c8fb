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
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build"
model="$root/models/fwm-babi-lm.gguf"
repeat=3
server_opts=""
modes=""
while [ $# -gt 0 ]; do
    case "$1" in
        --build) build="$2"; shift 2 ;;
        --model) model="$2"; shift 2 ;;
        --repeat) repeat="$2"; shift 2 ;;
        --server) server_opts="$2"; shift 2 ;;
        --modes) modes="$2"; shift 2 ;;
        --) shift; break ;;
        *) echo "durability_report.sh: unknown option $1 (options before --, bench-serve's after)" >&2; exit 2 ;;
    esac
done
data="${FWM_BABI_DIR:-$root/../shared/data/babi-v1.2}"
serve="$build/server/fwm-serve"
bench="$build/bench/server/bench-serve"
for f in "$serve" "$bench"; do
    [ -x "$f" ] || { echo "durability_report.sh: $f not built (meson compile -C $build)" >&2; exit 1; }
done
work="$(mktemp -d)"
pid=""
trap '[ -n "$pid" ] && kill -INT "$pid" 2>/dev/null; rm -rf "$work"' EXIT
modes="${modes:-memory never interval always}"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "data folders on: $(df -h "$work" | tail -1 | awk '{print $1, $6}')"
echo "server: fwm-serve $(basename "$model") $server_opts; load: bench-serve $*"
for i in $(seq "$repeat"); do
    for mode in $modes; do
        rm -rf "$work/port" "$work/sock" "$work/data"
        durable=()
        [ "$mode" = memory ] || durable=(--data-dir "$work/data" --fsync "$mode")
        # shellcheck disable=SC2086
        "$serve" "$model" --listen tcp://127.0.0.1:0 --listen "unix:$work/sock" --port-file "$work/port" \
            --quiet --max-sessions 1000000 "${durable[@]}" $server_opts &
        pid=$!
        for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
        [ -s "$work/port" ] || { echo "durability_report.sh: fwm-serve did not start" >&2; exit 1; }
        "$bench" --connect "$(head -1 "$work/port")" --connect "unix:$work/sock" --babi "$data" "$@" \
            > "$work/run.txt"
        kill -INT "$pid"
        wait "$pid" || true
        pid=""
        tps=$(sed -n 's/.*: \([0-9.]*\) tokens\/s aggregate.*/\1/p' "$work/run.txt")
        lat=$(sed -n 's/^per-token latency.*p50 \([0-9.]*\) ms, p99 \([0-9.]*\) ms.*/\1 \2/p' "$work/run.txt")
        req=$(sed -n 's/^request latency.*p50 \([0-9.]*\) ms, p99 \([0-9.]*\) ms.*/\1 \2/p' "$work/run.txt")
        echo "run $i $mode: $tps tokens/s, per-token p50/p99 ${lat/ / / } ms, request p50/p99 ${req/ / / } ms"
        echo "$tps $lat $req" >> "$work/$mode.txt"
    done
done
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
base=$(cut -d' ' -f1 "$work/memory.txt" | median)
echo "medians of $repeat (ratio: tokens/s against memory-only in this invocation):"
for mode in $modes; do
    tps=$(cut -d' ' -f1 "$work/$mode.txt" | median)
    printf "  %-9s %10s tokens/s  (%.3f)  per-token p50 %s ms, p99 %s ms; request p50 %s ms, p99 %s ms\n" \
        "$mode" "$tps" "$(echo "$tps $base" | awk '{print $1 / $2}')" \
        "$(cut -d' ' -f2 "$work/$mode.txt" | median)" "$(cut -d' ' -f3 "$work/$mode.txt" | median)" \
        "$(cut -d' ' -f4 "$work/$mode.txt" | median)" "$(cut -d' ' -f5 "$work/$mode.txt" | median)"
done
echo "closed loop (no --rate): per-token latency is the wait between streamed tokens, which durable"
echo "modes deliver in bursts per commit; compare request latency there, and use --rate R (open loop,"
echo "one word per feed) for per-token request-to-prediction latency."

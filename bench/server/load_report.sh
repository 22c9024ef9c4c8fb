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
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build"
model="$root/models/fwm-babi-lm.gguf"
repeat=5
server_opts=""
while [ $# -gt 0 ]; do
    case "$1" in
        --build) build="$2"; shift 2 ;;
        --model) model="$2"; shift 2 ;;
        --repeat) repeat="$2"; shift 2 ;;
        --server) server_opts="$2"; shift 2 ;;
        --) shift; break ;;
        *) echo "load_report.sh: unknown option $1 (options before --, bench-serve's after)" >&2; exit 2 ;;
    esac
done
data="${FWM_BABI_DIR:-$root/../shared/data/babi-v1.2}"
serve="$build/server/fwm-serve"
bench="$build/bench/server/bench-serve"
for f in "$serve" "$bench"; do
    [ -x "$f" ] || { echo "load_report.sh: $f not built (meson compile -C $build)" >&2; exit 1; }
done
work="$(mktemp -d)"
pid=""
# On any exit (a failed run included) stop the server too: a server left running would hold the
# caller's output open.
trap '[ -n "$pid" ] && kill -INT "$pid" 2>/dev/null; rm -rf "$work"' EXIT
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "server: fwm-serve $(basename "$model") $server_opts; load: bench-serve $*"
for i in $(seq "$repeat"); do
    rm -f "$work/port" "$work/sock"
    # shellcheck disable=SC2086
    "$serve" "$model" --listen tcp://127.0.0.1:0 --listen "unix:$work/sock" --port-file "$work/port" \
        --quiet $server_opts &
    pid=$!
    for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
    [ -s "$work/port" ] || { echo "load_report.sh: fwm-serve did not start" >&2; kill "$pid"; exit 1; }
    "$bench" --connect "$(head -1 "$work/port")" --connect "unix:$work/sock" --babi "$data" "$@" \
        > "$work/run.txt"
    kill -INT "$pid"
    wait "$pid" || true
    pid=""
    tps=$(sed -n 's/.*: \([0-9.]*\) tokens\/s aggregate.*/\1/p' "$work/run.txt")
    lat=$(sed -n 's/^per-token latency.*p50 \([0-9.]*\) ms, p99 \([0-9.]*\) ms.*/\1 \2/p' "$work/run.txt")
    echo "run $i: $tps tokens/s, per-token p50/p99 ${lat/ / / } ms"
    echo "$tps $lat" >> "$work/all.txt"
done
median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
echo "median of $repeat: $(cut -d' ' -f1 "$work/all.txt" | median) tokens/s," \
     "per-token p50 $(cut -d' ' -f2 "$work/all.txt" | median) ms, p99 $(cut -d' ' -f3 "$work/all.txt" | median) ms"

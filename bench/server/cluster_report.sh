#!/usr/bin/env bash
# cluster_report.sh - the cost of the shared Redis store (docs/CLUSTER.md, "What it costs"): aggregate
# tokens/s and per-token p99 of bench-serve against 1 fwm-serve node on LMDB (--data-dir), then 1, 2
# and 3 nodes sharing one redis-server (--store, --advertise), each run with a fresh store; and from
# Redis' own counters, the Redis commands and the bytes sent to Redis per token streamed.
#
#   bench/server/cluster_report.sh [--build DIR] [--model FILE] [--fsync MODE] [--nodes "1 2 3"] -- BENCH-OPTS
#   e.g. bench/server/cluster_report.sh -- --sessions 300 --seconds 8
#
# Redis runs with appendonly yes and appendfsync always (what --fsync always needs to mean "on disk").
# Each node gets --workers 1 (on a small machine the nodes share the cores: the point is the cost per
# token of the shared store, not scaling). A benchmark prints figures; it never fails on them.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$root/build" model="$root/models/fwm-babi-lm.gguf" fsync=always node_counts="1 2 3"
while [ $# -gt 0 ]; do
    case "$1" in
        --build) build="$2"; shift 2 ;;
        --model) model="$2"; shift 2 ;;
        --fsync) fsync="$2"; shift 2 ;;
        --nodes) node_counts="$2"; shift 2 ;;
        --) shift; break ;;
        *) echo "cluster_report.sh: unknown option $1 (options before --, bench-serve's after)" >&2; exit 2 ;;
    esac
done
bench_args=("$@")
data="${FWM_BABI_DIR:-$root/../shared/data/babi-v1.2}"
serve="$build/server/fwm-serve" bench="$build/bench/server/bench-serve"
for f in "$serve" "$bench"; do [ -x "$f" ] || { echo "cluster_report.sh: $f not built" >&2; exit 1; }; done
command -v redis-server > /dev/null || { echo "cluster_report.sh: redis-server not installed (scripts/setup.sh)" >&2; exit 1; }
work="$(mktemp -d)"
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill -INT "$p" 2> /dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2> /dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT
free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rcli() { redis-cli -s "$work/redis.sock" "$@"; }
info() { rcli INFO "$1" | tr -d '\r' | sed -n "s/^$2:\([0-9]*\).*/\1/p"; }

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
echo "model: $(basename "$model"); fsync $fsync; load: bench-serve ${bench_args[*]}"

# one run: start the given node command lines, bench against their addresses, stop them
run() { # LABEL ADDRESSES... (nodes already started)
    local label=$1
    shift
    local connects=()
    for a in "$@"; do connects+=(--connect "$a"); done
    "$bench" "${connects[@]}" --babi "$data" "${bench_args[@]}" > "$work/run.txt"
    local tps p99 tokens
    tps=$(sed -n 's/.*: \([0-9.]*\) tokens\/s aggregate.*/\1/p' "$work/run.txt")
    p99=$(sed -n 's/^per-token latency.*p99 \([0-9.]*\) ms.*/\1/p' "$work/run.txt")
    echo "$label: $tps tokens/s aggregate, per-token p99 $p99 ms"
}

start_node() { # PORT ARGS...
    local port=$1
    shift
    rm -f "$work/port-$port"
    "$serve" "$model" --listen "tcp://127.0.0.1:$port" --port-file "$work/port-$port" --quiet --workers 1 \
        --fsync "$fsync" "$@" &
    pids+=($!)
    for _ in $(seq 100); do [ -s "$work/port-$port" ] && break; sleep 0.1; done
    [ -s "$work/port-$port" ] || { echo "cluster_report.sh: fwm-serve did not start" >&2; exit 1; }
}

stop_nodes() {
    for p in "${pids[@]}"; do kill -INT "$p" 2> /dev/null || true; done
    for p in "${pids[@]}"; do wait "$p" 2> /dev/null || true; done
    pids=()
}

# 1 node, LMDB
port=$(free_port)
start_node "$port" --data-dir "$work/lmdb"
run "1 node, LMDB --data-dir" "tcp://127.0.0.1:$port"
stop_nodes

for n in $node_counts; do
    rm -rf "$work/redis"
    mkdir -p "$work/redis"
    redis-server --dir "$work/redis" --port 0 --unixsocket "$work/redis.sock" --unixsocketperm 700 \
        --appendonly yes --appendfsync always --save "" --logfile "$work/redis/log" &
    redis_pid=$!
    for _ in $(seq 100); do rcli PING > /dev/null 2>&1 && break; sleep 0.1; done
    addresses=()
    for _ in $(seq "$n"); do
        port=$(free_port)
        start_node "$port" --store "unix:$work/redis.sock" --advertise "tcp://127.0.0.1:$port"
        addresses+=("tcp://127.0.0.1:$port")
    done
    rcli CONFIG RESETSTAT > /dev/null
    run "$n node(s), Redis --store" "${addresses[@]}"
    commands=$(info stats total_commands_processed)
    bytes=$(info stats total_net_input_bytes)
    scripts=$(rcli INFO commandstats | tr -d '\r' | sed -n 's/^cmdstat_evalsha:calls=\([0-9]*\).*/\1/p')
    tokens=$(/usr/bin/python3 -c 'import sys; sys.path.insert(0, sys.argv[1])
from server_harness import Client
print(sum(Client(a).call("stats")["tokens"] for a in sys.argv[2:]))' "$root/tests/server" "${addresses[@]}")
    aof=$(info persistence aof_current_size)
    stop_nodes
    kill -INT "$redis_pid"
    wait "$redis_pid" || true
    echo "  Redis: $tokens tokens stepped, $commands commands (${scripts:-0} batch scripts), $bytes bytes" \
         "received, AOF $aof bytes; per token: $(awk -v c="$commands" -v t="$tokens" 'BEGIN{printf "%.3f", c/t}')" \
         "commands, $(awk -v b="$bytes" -v t="$tokens" 'BEGIN{printf "%.0f", b/t}') bytes"
done

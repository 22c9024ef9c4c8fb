# report_common.sh - what the load reports (load_report.sh, durability_report.sh) share: their
# options, the programs they run, a scratch folder, one bench-serve run against a fresh fwm-serve
# (stopped on any exit, a failed run included: a server left running would hold the caller's
# output open), the figures of a run, and the median. Sourced, not run.
#
#   report_init NAME DEFAULT_REPEAT "$@"   sets root build model repeat server_opts modes data serve
#                                          bench work, and bench_args (the options after --)
#   report_run OUT [FWM-SERVE OPTIONS...]  one run; bench-serve's output in OUT
#   report_figures OUT                     "tokens/s p50 p99 request-p50 request-p99" of a run
#   median                                 the median of the numbers on stdin

report_init() {
    report_name=$1 repeat=$2
    shift 2
    root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
    build="$root/build" model="$root/models/fwm-babi-lm.gguf" server_opts="" modes=""
    while [ $# -gt 0 ]; do
        case "$1" in
            --build) build="$2"; shift 2 ;;
            --model) model="$2"; shift 2 ;;
            --repeat) repeat="$2"; shift 2 ;;
            --server) server_opts="$2"; shift 2 ;;
            --modes) modes="$2"; shift 2 ;;
            --) shift; break ;;
            *) echo "$report_name: unknown option $1 (options before --, bench-serve's after)" >&2; exit 2 ;;
        esac
    done
    bench_args=("$@")
    data="${FWM_BABI_DIR:-$root/../shared/data/babi-v1.2}"
    serve="$build/server/fwm-serve"
    bench="$build/bench/server/bench-serve"
    for f in "$serve" "$bench"; do
        [ -x "$f" ] || { echo "$report_name: $f not built (meson compile -C $build)" >&2; exit 1; }
    done
    work="$(mktemp -d)"
    report_pid=""
    trap '[ -n "$report_pid" ] && kill -INT "$report_pid" 2>/dev/null; rm -rf "$work"' EXIT
    echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
}

report_run() {
    local out=$1
    shift
    rm -rf "$work/port" "$work/sock"
    # shellcheck disable=SC2086
    "$serve" "$model" --listen tcp://127.0.0.1:0 --listen "unix:$work/sock" --port-file "$work/port" \
        --quiet "$@" $server_opts &
    report_pid=$!
    for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
    [ -s "$work/port" ] || { echo "$report_name: fwm-serve did not start" >&2; exit 1; }
    "$bench" --connect "$(head -1 "$work/port")" --connect "unix:$work/sock" --babi "$data" "${bench_args[@]}" \
        > "$out"
    kill -INT "$report_pid"
    wait "$report_pid" || true
    report_pid=""
}

report_figures() {
    local tps lat req
    tps=$(sed -n 's/.*: \([0-9.]*\) tokens\/s aggregate.*/\1/p' "$1")
    lat=$(sed -n 's/^per-token latency.*p50 \([0-9.]*\) ms, p99 \([0-9.]*\) ms.*/\1 \2/p' "$1")
    req=$(sed -n 's/^request latency.*p50 \([0-9.]*\) ms, p99 \([0-9.]*\) ms.*/\1 \2/p' "$1")
    echo "$tps $lat $req"
}

median() { sort -g | awk '{v[NR]=$1} END {print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

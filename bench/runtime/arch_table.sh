#!/bin/sh
# arch_table.sh - the architectures' table (bench-arch) at their named sizes: the bundled FWM model
# first (the reference of the ratios), then freshly initialised files written by fwm-init at each
# architecture's default sizes (the papers'), the small LSTM with the FWM's parameter count, and the
# STM's catbAbI word-mode size. Weights do not change the speed, with one exception: a fresh STM
# has alpha3 = 0, so its relational transfer is skipped (docs/MODEL.md, "The STM").
# Usage: arch_table.sh FWM-INIT BENCH-ARCH FWM-MODEL [--quick]
set -eu
init=$1 bench=$2 reference=$3
shift 3
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$init" --arch lstm --out "$dir/lstm-paper.gguf" > /dev/null
"$init" --arch lstm --layers 1 --hidden 276 --out "$dir/lstm-small.gguf" > /dev/null
"$init" --arch mnm --out "$dir/mnm-p.gguf" > /dev/null
"$init" --arch gfw --out "$dir/gfw-ar.gguf" > /dev/null
"$init" --arch stm --out "$dir/stm-babi.gguf" > /dev/null
"$init" --arch stm --input word --embedding 256 --memory-size 56 --queries 12 --relation-length 96 \
    --reset-on-eos off --out "$dir/stm-catbabi-word.gguf" > /dev/null
exec "$bench" "$@" "$reference" "$dir/lstm-paper.gguf" "$dir/lstm-small.gguf" "$dir/mnm-p.gguf" \
    "$dir/gfw-ar.gguf" "$dir/stm-babi.gguf" "$dir/stm-catbabi-word.gguf"

#!/bin/sh
# prose_models.sh - bench-step on the prose models' size: the FWM and the LSTM that fwm-train
# --task text trains on Jane Austen (models/README.md: V = 10,003, E = H = 200, one LSTM layer;
# the FWM with S = R = T = 32 and 3 reads), freshly initialised by fwm-init (weights do not change
# the speed). Each run prints fwm's single-session and batched tokens/s beside PyTorch running the
# same model in the same invocation, and the FLOP bound at the machine's measured sgemm rate.
# Usage: prose_models.sh FWM-INIT BENCH-STEP [--quick]
set -eu
init=$1 bench=$2
shift 2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
{ echo '<pad>'; echo '<eos>'; echo '<unk>'; seq -f 'w%g' 1 10000; } > "$dir/vocab.txt"
"$init" --arch fwm --vocab "$dir/vocab.txt" --embedding 200 --hidden 200 --out "$dir/fwm-prose.gguf" > /dev/null
"$init" --arch lstm --layers 1 --vocab "$dir/vocab.txt" --embedding 200 --hidden 200 \
    --out "$dir/lstm-prose.gguf" > /dev/null
for model in fwm-prose lstm-prose; do
    echo "== $model"
    "$bench" "$@" "$dir/$model.gguf"
done

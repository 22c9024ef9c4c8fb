#!/bin/sh
# prose_models.sh - bench-step on the prose models' size: the FWM and the LSTM that fwm-train
# --task text trains on Jane Austen (models/README.md: V = 10,003, E = H = 200, one LSTM layer;
# the FWM with S = R = T = 32 and 3 reads), freshly initialised by fwm-init (weights do not change
# the speed). Each run prints fwm's single-session and batched tokens/s beside PyTorch running the
# same model in the same invocation, and the FLOP bound at the machine's measured sgemm rate.
# With FWM-CONVERT, each model is also converted to BF16 (fwm-convert --weights bf16) and bench-step
# measures the BF16 model beside the F32 one and PyTorch in the same invocation.
# Usage: prose_models.sh FWM-INIT BENCH-STEP [FWM-CONVERT] [--quick]
set -eu
init=$1 bench=$2
shift 2
convert=
case "${1:-}" in
    */fwm-convert) convert=$1; shift ;;
esac
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
{ echo '<pad>'; echo '<eos>'; echo '<unk>'; seq -f 'w%g' 1 10000; } > "$dir/vocab.txt"
"$init" --arch fwm --vocab "$dir/vocab.txt" --embedding 200 --hidden 200 --out "$dir/fwm-prose.gguf" > /dev/null
"$init" --arch lstm --layers 1 --vocab "$dir/vocab.txt" --embedding 200 --hidden 200 \
    --out "$dir/lstm-prose.gguf" > /dev/null
for model in fwm-prose lstm-prose; do
    echo "== $model"
    if [ -n "$convert" ]; then
        "$convert" --weights bf16 "$dir/$model.gguf" "$dir/$model-bf16.gguf" > /dev/null
        "$bench" "$@" --bf16 "$dir/$model-bf16.gguf" "$dir/$model.gguf"
    else
        "$bench" "$@" "$dir/$model.gguf"
    fi
done

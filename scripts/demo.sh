#!/usr/bin/env bash
# demo.sh - set up, write a randomly initialised model with a small English vocabulary, and stream
# fwm-run's next-word predictions for a sentence. (An untrained model predicts at random: this shows
# the machinery; fwm-serve with the bundled trained model is the real thing.)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
model=build/demo-model.gguf
[ -f "$model" ] || build/tools/fwm-init --out "$model" --vocab models/demo-vocab.txt --seed 1 --name demo
build/tools/fwm-run "$model" --text "${1:-Mary moved to the bathroom. Where is Mary?}" --topk 3

#!/usr/bin/env bash
# serve.sh - set up, build and serve the bundled trained model (models/fwm-babi-lm.gguf) with
# fwm-serve on 127.0.0.1:7411 (msgpack-RPC, docs/PROTOCOL.md). Extra arguments go to fwm-serve.
# Talk to it with build/clients/fwm-cli (type story sentences and questions).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
exec build/server/fwm-serve "$@"

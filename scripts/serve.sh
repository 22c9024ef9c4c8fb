#!/usr/bin/env bash
# serve.sh - set up, build and serve the bundled trained model (models/fwm-babi-lm.gguf) with
# fwm-serve on 127.0.0.1:7411 (msgpack-RPC, docs/PROTOCOL.md), durably: every session is kept in an
# LMDB store in data/sessions/ (docs/DURABILITY.md), so sessions survive restarts and crashes, and
# with the web page (web/README.md), /metrics and /health on http://127.0.0.1:8080.
# Stored sessions unused for 7 days are deleted (--session-ttl 604800), so that the store does not
# grow without bound as people use the web page and clients; `scripts/serve.sh --session-ttl 0`
# keeps them until they are closed (a later option wins).
# FWM_DATA_DIR=DIR serves into another folder; FWM_DATA_DIR= (empty) serves from memory only.
# FWM_HTTP=tcp://HOST:PORT moves the HTTP port; FWM_HTTP= (empty) serves without one.
# Extra arguments go to fwm-serve (e.g. --fsync always). Talk to it with build/clients/fwm-cli.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
# The build-tree fwm-serve has no model path compiled in: name the bundled one (a MODEL argument wins).
export FWM_MODEL="${FWM_MODEL:-$PWD/models/fwm-babi-lm.gguf}"
data_dir="${FWM_DATA_DIR-data/sessions}"
http="${FWM_HTTP-tcp://127.0.0.1:8080}"
args=()
[ -n "$http" ] && args+=(--http "$http")
if [ -n "$data_dir" ]; then
    mkdir -p "$(dirname "$data_dir")"
    args+=(--data-dir "$data_dir" --session-ttl 604800)
fi
exec build/server/fwm-serve "${args[@]}" "$@"

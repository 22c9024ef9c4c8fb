#!/usr/bin/env bash
# test_pip_install.sh - the Python client installs offline as the README says (suite 'install'):
#
#   test_pip_install.sh SOURCE_ROOT PYTHON
#
# Runs README.md's install line (the indented line after its "python install" marker) exactly as it
# is: `python3 -m venv --system-site-packages .venv && .venv/bin/pip install --no-build-isolation
# --no-index clients/python`, with PYTHON as python3, in a copy of the repository's clients/python
# (pip writes build files beside the sources); then, from a folder outside it, the virtual
# environment's python imports fwm_client from the environment, Debian's msgpack from the system,
# and the installed metadata's version is the package's. Skips (77) when PYTHON has no pip or no
# venv (Debian's python3-pip and python3-venv; scripts/setup.sh installs both).
set -euo pipefail
source_root=$(cd "$1" && pwd)
python=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
if ! "$python" -m pip --version > /dev/null 2>&1; then
    echo "SKIP: $python has no pip (Debian's python3-pip; scripts/setup.sh installs it)"
    exit 77
fi
line=$(awk '/^<!-- python install: / {marked = 1; next} marked && /^    [^ ]/ {sub(/^    /, ""); print; exit}' \
    "$source_root/README.md")
case "$line" in
    "python3 -m venv "*) echo "README's install line: $line" ;;
    *) fail "README.md has no install line after its 'python install' marker (found '$line')" ;;
esac
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/repo/clients" "$work/bin"
cp -r "$source_root/clients/python" "$work/repo/clients/python"
rm -rf "$work/repo/clients/python/build" "$work/repo/clients/python"/*.egg-info
printf '#!/bin/sh\nexec "%s" "$@"\n' "$python" > "$work/bin/python3"  # "python3" is PYTHON
chmod +x "$work/bin/python3"
if ! (cd "$work/repo" && PATH="$work/bin:$PATH" PIP_DISABLE_PIP_VERSION_CHECK=1 bash -c "$line") \
        > "$work/install.log" 2>&1; then
    if grep -q "ensurepip" "$work/install.log"; then
        echo "SKIP: $python cannot make a virtual environment (Debian's python3-venv; scripts/setup.sh installs it)"
        cat "$work/install.log"
        exit 77
    fi
    cat "$work/install.log"
    fail "the README's install line failed"
fi
venv_python="$work/repo/.venv/bin/python"
[ -x "$venv_python" ] || fail "no .venv/bin/python made"
cd "$work"
out=$("$venv_python" -c '
import importlib.metadata, os, fwm_client, msgpack
print(os.path.dirname(fwm_client.__file__))
print(os.path.dirname(msgpack.__file__))
print(importlib.metadata.version("fwm-client"), fwm_client.__version__)
print(fwm_client.DEFAULT_ADDRESS, fwm_client.Client.__name__, fwm_client.FwmError.__name__)
') || fail "import fwm_client from the virtual environment failed"
echo "$out"
case "$(echo "$out" | sed -n 1p)" in
    "$work/repo/.venv/lib/python"*/site-packages/fwm_client) ;;
    *) fail "fwm_client was not imported from the virtual environment's site-packages" ;;
esac
case "$(echo "$out" | sed -n 2p)" in
    "$work"/*) fail "msgpack came from the virtual environment, not the system's python3-msgpack" ;;
esac
set -- $(echo "$out" | sed -n 3p)
[ "$1" = "$2" ] || fail "installed version $1 differs from fwm_client.__version__ $2"
[ "$(echo "$out" | tail -1)" = "tcp://127.0.0.1:7411 Client FwmError" ] || fail "unexpected module content"
echo "OK"

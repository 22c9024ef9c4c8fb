#!/usr/bin/env bash
# test_pip_install.sh - the Python client installs offline with pip and Debian's setuptools
# (suite 'install'):
#
#   test_pip_install.sh SOURCE_ROOT PYTHON
#
# Copies clients/python to a temporary folder (pip writes build files beside the sources), runs
# `PYTHON -m pip install --no-build-isolation --no-index --target TMP`, and imports fwm_client from
# TMP alone, from a folder outside the source tree. Skips (77) when PYTHON has no pip.
set -euo pipefail
source_root=$(cd "$1" && pwd)
python=$2
fail() { echo "FAIL: $*" >&2; exit 1; }
if ! "$python" -m pip --version > /dev/null 2>&1; then
    echo "SKIP: $python has no pip (Debian's python3-pip; scripts/setup.sh installs it)"
    exit 77
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r "$source_root/clients/python" "$work/src"
rm -rf "$work/src/build" "$work/src"/*.egg-info
PIP_DISABLE_PIP_VERSION_CHECK=1 "$python" -m pip install --quiet --no-build-isolation --no-index \
    --target "$work/target" "$work/src" > "$work/pip.log" 2>&1 \
    || { cat "$work/pip.log"; fail "pip install of clients/python failed"; }
[ -f "$work/target/fwm_client/__init__.py" ] || fail "no fwm_client package in the target folder"
ls -d "$work/target"/fwm_client-*.dist-info > /dev/null || fail "no dist-info for fwm_client"
cd "$work"
out=$(PYTHONPATH="$work/target" "$python" -c '
import fwm_client, os, sys
print(os.path.dirname(fwm_client.__file__))
print(fwm_client.DEFAULT_ADDRESS, fwm_client.Client.__name__, fwm_client.FwmError.__name__)
') || fail "import fwm_client from the installed package failed"
echo "$out"
[ "$(echo "$out" | head -1)" = "$work/target/fwm_client" ] || fail "fwm_client was not imported from the install"
[ "$(echo "$out" | tail -1)" = "tcp://127.0.0.1:7411 Client FwmError" ] || fail "unexpected module content"
echo "OK"

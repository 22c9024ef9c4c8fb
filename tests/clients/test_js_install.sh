#!/usr/bin/env bash
# test_js_install.sh - the JavaScript client used from one's own project, as clients/js/README.md
# says (suite 'clients'):
#
#   test_js_install.sh JS_DIR        (FWM_SERVE and FWM_MODEL in the environment, as for the js_ tests)
#
# In a new npm project in a temporary folder: `npm install JS_DIR` (offline: nothing is fetched),
# then the README's first example (its first ```js block, with the server's address in place of
# tcp://127.0.0.1:7411 and the answer printed) runs there as an ES module importing 'fwm-client'
# against a real fwm-serve, and answers "bathroom". Skips (77) when node or npm, or the client's npm
# packages (scripts/setup.sh: npm ci), are missing.
set -euo pipefail
js=$(cd "$1" && pwd)
fail() { echo "FAIL: $*" >&2; exit 1; }
for tool in node npm; do
    command -v "$tool" > /dev/null 2>&1 || { echo "SKIP: no $tool (scripts/setup.sh installs it)"; exit 77; }
done
if [ ! -f "$js/node_modules/@msgpack/msgpack/package.json" ]; then
    echo "SKIP: the client's npm packages are not installed in $js/node_modules (scripts/setup.sh runs npm ci there)"
    exit 77
fi
work=$(mktemp -d)
server_pid=
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null
    rm -rf "$work"
}
trap cleanup EXIT

mkdir "$work/my-project"
cd "$work/my-project"
npm init -y > /dev/null
npm install --offline --no-audit --no-fund "$js" > "$work/npm.log" 2>&1 || { cat "$work/npm.log"; fail "npm install $js"; }
[ -e node_modules/fwm-client/package.json ] || fail "npm install did not put fwm-client in node_modules"
grep -q '"fwm-client": "file:' package.json || fail "package.json lacks the file: dependency: $(cat package.json)"

"$FWM_SERVE" "$FWM_MODEL" --listen "unix:$work/s.sock" --port-file "$work/port" --quiet > "$work/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 200); do
    [ -s "$work/port" ] && break
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/serve.log"; fail "fwm-serve exited"; }
    sleep 0.05
done
[ -s "$work/port" ] || fail "fwm-serve did not start"

awk '/^```js$/ {inside = 1; next} inside && /^```$/ {exit} inside' "$js/README.md" > "$work/example.js"
grep -q "^import { connect } from 'fwm-client';" "$work/example.js" \
    || fail "clients/js/README.md's first example does not import connect from 'fwm-client'"
grep -q "tcp://127.0.0.1:7411" "$work/example.js" || fail "the README's example has no address to replace"
{
    sed "s|'tcp://127.0.0.1:7411'|'unix:$work/s.sock'|" "$work/example.js"
    echo "console.log('answer:', a.answer);"
} > app.mjs
out=$(node app.mjs 2>&1) || { cat -n app.mjs; fail "the README's example failed in a project of its own: $out"; }
echo "$out"
echo "$out" | grep -q '^mary ' || fail "no streamed words"
echo "$out" | grep -qx 'answer: bathroom' || fail "the example did not answer bathroom"
echo "OK"

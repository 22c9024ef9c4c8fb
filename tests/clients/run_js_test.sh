#!/bin/sh
# run_js_test.sh - one test of the JavaScript client (clients/js) for meson: a file of its Node
# test-runner tests (node --test), or "typecheck" (TypeScript over its declarations and JSDoc).
# Skips (77) with the reason when node, or the packages `npm ci` installs, are missing.
#
#   run_js_test.sh JS_DIR TEST_FILE|typecheck      (the paths of fwm-serve etc. come in FWM_* variables)
set -eu
js=$1
what=$2
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP: node is not installed (scripts/setup.sh installs Debian's nodejs and npm when it is missing)"
  exit 77
fi
if [ ! -f "$js/node_modules/@msgpack/msgpack/package.json" ]; then
  echo "SKIP: the client's npm packages are not installed in $js/node_modules (scripts/setup.sh runs npm ci there)"
  exit 77
fi
cd "$js"
if [ "$what" = typecheck ]; then
  if [ ! -f node_modules/typescript/bin/tsc ]; then
    echo "SKIP: typescript (a dev dependency) is not installed in $js/node_modules (npm ci installs it)"
    exit 77
  fi
  node node_modules/typescript/bin/tsc --noEmit -p .
  echo "typecheck: passed"
  exit 0
fi
exec node --test "test/$what"

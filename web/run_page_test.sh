#!/bin/sh
# run_page_test.sh - fwm's web page in a real browser, for meson (web/test/page.test.js). Skips (77)
# with the reason only when what it needs cannot be had here: Node, the page's npm packages
# (puppeteer-core: scripts/setup.sh runs npm ci in web/), Chromium (Debian's chromium, which
# scripts/setup.sh installs), or the client's msgpack library in the assembled page.
#
#   run_page_test.sh WEB_DIR     (FWM_SERVE, FWM_MODEL, FWM_WWW, FWM_SCREENSHOT come from meson)
set -eu
web=$1
if ! command -v node >/dev/null 2>&1; then
  echo "SKIP: node is not installed (scripts/setup.sh installs Debian's nodejs and npm when it is missing)"
  exit 77
fi
if [ ! -f "$web/node_modules/puppeteer-core/package.json" ]; then
  echo "SKIP: puppeteer-core is not installed in $web/node_modules (scripts/setup.sh runs npm ci there)"
  exit 77
fi
chromium=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
  echo "SKIP: no Chromium at $chromium (scripts/setup.sh installs Debian's chromium)"
  exit 77
fi
if [ -f "$FWM_WWW/vendor/MISSING" ]; then
  echo "SKIP: $(cat "$FWM_WWW/vendor/MISSING")"
  exit 77
fi
cd "$web"
exec node --test test/

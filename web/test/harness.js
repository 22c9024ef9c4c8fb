// harness.js - what the page's browser tests share: headless Chromium (Debian's, driven by
// puppeteer-core) and a bounded wait for a condition in the page. CHROMIUM (default
// /usr/bin/chromium) names the browser.

import puppeteer from 'puppeteer-core';

/** Start headless Chromium as the tests run it (no sandbox: they may run as root). */
export function launchBrowser() {
  return puppeteer.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
}

/** Wait until `fn` (run in the page) returns a truthy value; at most 30 s. */
export const until = (page, fn, ...args) => page.waitForFunction(fn, { timeout: 30000, polling: 50 }, ...args);

// page.test.js - fwm's web page in a real browser: headless Chromium (Debian's, driven by
// puppeteer-core) loads the page from a running fwm-serve (--http, the assembled www folder, the
// bundled LM model), reads a story, asks questions, forks a session and asks it too, and checks the
// answers shown, that the memory view drew its heatmaps (coloured pixels on every canvas), and saves
// a screenshot. Environment: FWM_SERVE, FWM_MODEL, FWM_WWW (the assembled folder), FWM_SCREENSHOT
// (where the picture goes), CHROMIUM (default /usr/bin/chromium).

import assert from 'node:assert/strict';
import fs from 'node:fs';
import { after, before, test } from 'node:test';
import puppeteer from 'puppeteer-core';
import { babiFile, readStories, startServer } from '../../clients/js/test/harness.js';

const CHROMIUM = process.env.CHROMIUM || '/usr/bin/chromium';
const WWW = process.env.FWM_WWW;
const SCREENSHOT = process.env.FWM_SCREENSHOT;
let server;
let browser;

before(async () => {
  server = await startServer({ flags: ['--http', 'tcp://127.0.0.1:0', '--http-root', WWW] });
  browser = await puppeteer.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
  });
});
after(async () => {
  if (browser) await browser.close();
  if (server) assert.equal((await server.stop()).code, 0, server.stderr());
});

/** Wait until `fn` (run in the page) returns a truthy value; bounded. */
const until = (page, fn, ...args) => page.waitForFunction(fn, { timeout: 30000, polling: 50 }, ...args);

/** The answer text shown in session panel `name` once it is `want`-shaped. */
async function ask(page, name, question) {
  const panel = `article[data-session="${name}"]`;
  await page.$eval(`${panel} .answer`, (el) => { el.textContent = ''; });
  await page.$eval(`${panel} .question`, (el, q) => { el.value = q; }, question);
  await page.click(`${panel} .ask button`);
  await until(page, (p) => document.querySelector(`${p} .answer .best`) !== null, panel);
  // the reads are drawn once the trace after the answer arrived: the panel's buttons come back
  await until(page, (p) => !document.querySelector(`${p} .read`).disabled, panel);
  return page.$eval(`${panel} .answer .best`, (el) => el.textContent);
}

/** Canvases under `selector` and how many of them have a pixel that is not white. */
const coloured = (page, selector) => page.$$eval(selector, (canvases) => ({
  count: canvases.length,
  painted: canvases.filter((c) => {
    const data = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    for (let i = 0; i < data.length; i += 4) if (data[i] < 250 || data[i + 1] < 250 || data[i + 2] < 250) return true;
    return false;
  }).length,
}));

test('the page reads a story, answers from memory, forks, and shows the memory', async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.setViewport({ width: 1280, height: 1100 });
  await page.goto(`${server.http}/`);
  await until(page, () => document.querySelector('#status').textContent.startsWith('connected'));
  assert.match(await page.$eval('#status', (el) => el.textContent), /fwm-catbabi-10k-lm/);
  assert.match(await page.$eval('article[data-session="A"] .stream', (el) => el.textContent), /primed/);

  // read the sample story: one chip per word, each with its next-word predictions
  const story = await page.$eval('article[data-session="A"] .story', (el) => el.value);
  const words = story.toLowerCase().split(/\s+/).filter(Boolean).length + (story.match(/\./g) || []).length;
  await page.click('article[data-session="A"] .read');
  await until(page, (n) => document.querySelectorAll('article[data-session="A"] .word').length === n, words);
  assert.match(await page.$eval('article[data-session="A"] .word small', (el) => el.textContent), /\d\.\d\d/);

  // the story's answers (it ends with Mary in the garden, the football taken there)
  assert.equal(await ask(page, 'A', 'Where is Mary?'), 'garden');
  assert.equal(await ask(page, 'A', 'Where is the football?'), 'garden');

  // the memory view: one row per read (3), the fast-weight slices (S = 32), all painted
  const reads = await coloured(page, '#reads canvas');
  assert.deepEqual(reads, { count: 3, painted: 3 });
  const slices = await coloured(page, '#slices canvas');
  assert.deepEqual(slices, { count: 32, painted: 32 });
  assert.match(await page.$eval('#reads', (el) => el.textContent), /retrieves: /);

  // fork: B has read the same; told more, it answers differently while A does not change its mind
  await page.click('article[data-session="A"] .fork');
  await until(page, () => document.querySelector('article[data-session="B"]') !== null);
  await page.$eval('article[data-session="B"] .story', (el) => { el.value = 'Mary travelled to the office.'; });
  await page.click('article[data-session="B"] .read');
  await until(page, () => document.querySelectorAll('article[data-session="B"] .word').length === 6);
  assert.equal(await ask(page, 'B', 'Where is Mary?'), 'office');
  assert.equal(await ask(page, 'A', 'Where is Mary?'), 'garden');

  if (SCREENSHOT) {
    await page.$eval('article[data-session="B"] .question', (el) => { el.value = 'Where is Mary?'; });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
    assert.ok(fs.statSync(SCREENSHOT).size > 10000, 'a screenshot with something in it');
  }

  // real bAbI test stories (qa2, two supporting facts), each read into a reset session A up to its
  // first question: the answer shown is bAbI's own
  const stories = readStories(/** @type {string} */ (babiFile(2)), 3);
  for (const story of stories) {
    const first = story.findIndex((item) => item.kind === 'question');
    const text = story.slice(0, first).map((item) => item.text).join(' ');
    await page.click('article[data-session="A"] .reset');
    await until(page, () => document.querySelectorAll('article[data-session="A"] .word').length === 0);
    await page.$eval('article[data-session="A"] .story', (el, t) => { el.value = t; }, text);
    await page.click('article[data-session="A"] .read');
    await until(page, () => !document.querySelector('article[data-session="A"] .read').disabled
      && document.querySelectorAll('article[data-session="A"] .word').length > 0);
    assert.equal(await ask(page, 'A', story[first].text), story[first].answer, `bAbI: ${text} ${story[first].text}`);
  }

  assert.deepEqual(errors, [], 'no script errors in the page');
  await page.close();
});

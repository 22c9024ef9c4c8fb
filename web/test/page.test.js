// page.test.js - fwm's web page in a real browser: headless Chromium (Debian's, driven by
// puppeteer-core) loads the page from a running fwm-serve (--http, the assembled www folder, the
// bundled LM model), reads a story, asks questions, forks a session and asks it too, and checks the
// answers shown, that the memory view drew its heatmaps (coloured pixels on every canvas), and saves
// a screenshot; then opens a session of a second model chosen from the page's list (an LSTM written
// by fwm-init with the story's words), reads and asks with it, and checks that the memory view says
// it draws FWM sessions only; and that leaving the page closes the sessions it opened (the server's
// `sessions` list, through the Node client). Environment: FWM_SERVE, FWM_MODEL, FWM_INIT, FWM_WWW (the assembled
// folder), FWM_SCREENSHOT (where the picture goes), CHROMIUM (default /usr/bin/chromium).

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { launchBrowser, until } from './harness.js';
import { connect } from '../../clients/js/src/index.js';
import { babiFile, readStories, startServer } from '../../clients/js/test/harness.js';

const WWW = process.env.FWM_WWW;
const SCREENSHOT = process.env.FWM_SCREENSHOT;
const LSTM_WORDS = ['<pad>', '<eos>', '.', '?', 'mary', 'moved', 'to', 'the', 'bathroom', 'john', 'went',
  'kitchen', 'where', 'is'];
let server;
let browser;

/** A small untrained LSTM over LSTM_WORDS (fwm-init), named lstm-demo: a second model to choose. */
function writeLstm() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fwm-page-'));
  fs.writeFileSync(path.join(dir, 'vocab.txt'), `${LSTM_WORDS.join('\n')}\n`);
  const out = path.join(dir, 'lstm.gguf');
  execFileSync(process.env.FWM_INIT, ['--arch', 'lstm', '--layers', '1', '--embedding', '8', '--hidden', '16',
    '--vocab', path.join(dir, 'vocab.txt'), '--name', 'lstm-demo', '--out', out], { stdio: 'ignore' });
  return out;
}

before(async () => {
  server = await startServer({
    models: [process.env.FWM_MODEL, writeLstm()],
    flags: ['--http', 'tcp://127.0.0.1:0', '--http-root', WWW],
  });
  browser = await launchBrowser();
});
after(async () => {
  if (browser) await browser.close();
  if (server) assert.equal((await server.stop()).code, 0, server.stderr());
});

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

test('a session of another model, chosen from the list, reads and answers; the memory view is the FWM\'s', async () => {
  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(`${server.http}/`);
  await until(page, () => document.querySelector('#status').textContent.startsWith('connected'));
  const options = await page.$$eval('#model option', (os) => os.map((o) => [o.value, o.textContent]));
  assert.equal(options.length, 2);
  assert.match(options[0][1], /^fwm-catbabi-10k-lm: fwm, 683,745 weights, memory 32 × 32 × 32, 3 chained reads$/);
  assert.deepEqual(options[1], ['lstm-demo', `lstm-demo: lstm, ${(14 * 8 + 4 * 16 * (8 + 16) + 4 * 16 + 14 * 16 + 14).toLocaleString('en-US')} weights`]);
  assert.equal(await page.$eval('#model', (el) => el.value), 'fwm-catbabi-10k-lm', 'the default model is chosen');
  assert.equal(await page.$eval('#compare', (el) => el.hidden), true, 'no figure 6 for models that read bAbI words only');
  assert.equal(await page.$eval('article[data-session="A"]', (el) => el.dataset.model), 'fwm-catbabi-10k-lm');

  // a new session with the LSTM: its panel names it, it reads with predictions and answers
  await page.select('#model', 'lstm-demo');
  await page.click('#new-session button');
  await until(page, () => document.querySelector('article[data-session="B"]') !== null);
  assert.equal(await page.$eval('article[data-session="B"]', (el) => el.dataset.model), 'lstm-demo');
  assert.equal(await page.$eval('article[data-session="B"] .model', (el) => el.textContent), 'lstm-demo');
  await page.$eval('article[data-session="B"] .story', (el) => { el.value = 'Mary moved to the bathroom. John went to the kitchen.'; });
  await page.click('article[data-session="B"] .read');
  await until(page, () => document.querySelectorAll('article[data-session="B"] .word').length === 12);
  assert.match(await page.$eval('article[data-session="B"] .word small', (el) => el.textContent), /\d\.\d\d/);
  const answer = await ask(page, 'B', 'Where is Mary?');
  assert.ok(LSTM_WORDS.includes(answer), `the answer is a word of the LSTM's vocabulary (${answer})`);
  assert.match(await page.$eval('article[data-session="B"] .pos', (el) => el.textContent), /^\d+ words read$/);
  assert.equal(await page.$eval('#memory-view', (el) => el.hidden), true, 'no FWM memory view for the LSTM');
  assert.match(await page.$eval('#memory-other', (el) => el.textContent), /Session B reads with lstm-demo: lstm/);

  // back to the FWM session: its memory view returns; a fork of B keeps B's model
  await page.click('article[data-session="A"] h2');
  assert.equal(await page.$eval('#memory-view', (el) => el.hidden), false);
  await page.click('article[data-session="B"] .fork');
  await until(page, () => document.querySelector('article[data-session="C"]') !== null);
  assert.equal(await page.$eval('article[data-session="C"]', (el) => el.dataset.model), 'lstm-demo');

  assert.deepEqual(errors, [], 'no script errors in the page');
  await page.close();
});

/** The ids of every session on the server, through the Node client. */
async function serverSessions() {
  const client = await connect(server.address);
  const ids = [];
  for await (const item of client.sessions()) ids.push(item.session);
  await client.close();
  return ids;
}

test('leaving the page closes the sessions it opened, forks included', async () => {
  const page = await browser.newPage();
  await page.goto(`${server.http}/`);
  await until(page, () => document.querySelector('#status').textContent.startsWith('connected'));
  await page.click('article[data-session="A"] .fork');
  await until(page, () => document.querySelector('article[data-session="B"]') !== null);
  const mine = await page.evaluate(() => window.fwmPage.panels().map((p) => p.session.id));
  assert.equal(mine.length, 2);
  const listed = await serverSessions();
  assert.ok(mine.every((id) => listed.includes(id)), 'the page\'s sessions are on the server');

  await page.goto('about:blank'); // navigating away: pagehide
  const deadline = Date.now() + 10000;
  let left = mine;
  while (Date.now() < deadline) {
    const now = await serverSessions();
    left = mine.filter((id) => now.includes(id));
    if (left.length === 0) break;
    await new Promise((resolve) => { setTimeout(resolve, 100); });
  }
  assert.deepEqual(left, [], 'the sessions the page opened are closed once it is left');
  await page.close();
});

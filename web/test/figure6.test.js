// figure6.test.js - the web page's figure 6 in a real browser: two small models that read any text
// (an FWM and an LSTM trained here for a few steps by fwm-train --task text on a tiny corpus) served
// together; the page offers the comparison, reads a passage with both (a word outside their
// vocabulary among it), and draws one chip per word. Checked against the Node client reading the
// same passage in one feed on fresh sessions: the same words (those read as <unk> in their own spelling),
// each chip's two log-probabilities bit for bit, their difference, the colour's side (green where the
// first model is less surprised, red where more), a line per paragraph, the perplexities printed;
// and the comparison's sessions are closed afterwards. Environment: FWM_SERVE, FWM_TRAIN, FWM_WWW,
// FWM_SCREENSHOT (its folder gets figure6.png), CHROMIUM (default /usr/bin/chromium).

import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { launchBrowser, until } from './harness.js';
import { connect, unknownWords } from '../../clients/js/src/index.js';
import { startServer } from '../../clients/js/test/harness.js';

const PASSAGE = 'Lady Russell loved them all; but Anne walked with Zyxwvut to the hall.\n'
  + 'Anne smiled, and Lady Russell said nothing.\n';
let server;
let browser;

/** A tiny corpus (train, valid, test) of a few recurring names. */
function writeCorpus(dir) {
  const names = ['anne', 'lady russell', 'sir walter', 'elizabeth', 'mary'];
  const places = ['the hall', 'the garden', 'bath', 'the park'];
  const lines = [];
  for (let i = 0; i < 120; i++) {
    const who = names[i % names.length];
    const other = names[(i * 3 + 1) % names.length];
    lines.push(`${who} walked with ${other} to ${places[i % places.length]}; ${who} smiled, and ${other} said nothing.`);
  }
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, 'train.txt'), `${lines.join('\n')}\n`);
  fs.writeFileSync(path.join(dir, 'valid.txt'), `${lines.slice(0, 10).join('\n')}\n`);
  fs.writeFileSync(path.join(dir, 'test.txt'), `${lines.slice(10, 20).join('\n')}\n`);
}

/** fwm-train --task text for a few steps; the model file it wrote. */
function train(root, arch, flags) {
  const run = path.join(root, arch);
  execFileSync(process.env.FWM_TRAIN, ['--task', 'text', '--data', path.join(root, 'corpus'), '--arch', arch,
    '--lanes', '2', '--window', '12', '--steps', '20', '--eval-every', '20', '--eval-lanes', '1', '--threads', '1',
    '--progress', '0', '--no-test', '--run-dir', run, ...flags], { stdio: 'ignore' });
  return path.join(run, 'model.gguf');
}

before(async () => {
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'fwm-figure6-'));
  writeCorpus(path.join(root, 'corpus'));
  const fwm = train(root, 'fwm', ['--embedding', '8', '--hidden', '12', '--memory-s', '4', '--memory-r', '4',
    '--memory-t', '4']);
  const lstm = train(root, 'lstm', ['--layers', '1', '--embedding', '8', '--hidden', '12']);
  server = await startServer({ models: [fwm, lstm], flags: ['--http', 'tcp://127.0.0.1:0', '--http-root', process.env.FWM_WWW] });
  browser = await launchBrowser();
});
after(async () => {
  if (browser) await browser.close();
  if (server) assert.equal((await server.stop()).code, 0, server.stderr());
});

/** Fresh sessions of `model` through the Node client: the passage's words and log-probabilities. */
async function reference(client, model) {
  const session = await client.open({ model });
  const words = [];
  const r = await session.feed(PASSAGE, { topk: 0, logprobs: true, onToken: (e) => words.push(e.word) });
  await session.close();
  return { words, logprobs: r.logprobs, unknown: r.unknown };
}

async function sessionCount() {
  const client = await connect(server.address);
  let n = 0;
  for await (const item of client.sessions()) if (item.session) n += 1;
  await client.close();
  return n;
}

test('figure 6: a passage read by an FWM and an LSTM, each word coloured by their difference', async () => {
  const client = await connect(server.address);
  const [fwmModel, lstmModel] = client.server.models;
  assert.equal(fwmModel.architecture, 'fwm');
  assert.equal(lstmModel.architecture, 'lstm');
  assert.ok(fwmModel.has_unknown_token && lstmModel.has_unknown_token && fwmModel.logprobs && lstmModel.logprobs);
  const a = await reference(client, fwmModel.name);
  const b = await reference(client, lstmModel.name);
  await client.close();
  assert.equal(a.words.length, b.words.length);
  const spelled = unknownWords(PASSAGE, a.unknown);
  assert.ok(spelled.includes('Zyxwvut'), `words outside the vocabulary: ${spelled}`);

  const page = await browser.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.setViewport({ width: 1280, height: 1100 });
  await page.goto(`${server.http}/`);
  await until(page, () => document.querySelector('#status').textContent.startsWith('connected'));
  assert.equal(await page.$eval('#compare', (el) => el.hidden), false, 'two text models: the comparison is offered');
  assert.equal(await page.$eval('#compare-a', (el) => el.value), fwmModel.name, 'the FWM first');
  assert.equal(await page.$eval('#compare-b', (el) => el.value), lstmModel.name, 'the LSTM second');
  const before = await sessionCount();

  await page.$eval('#compare-text', (el, t) => { el.value = t; }, PASSAGE);
  await page.click('#compare-run');
  await until(page, () => /perplexity/.test(document.querySelector('#compare-summary').textContent)
    || document.querySelector('#compare-summary').classList.contains('error-text'));
  const summary = await page.$eval('#compare-summary', (el) => el.textContent);
  const chips = await page.$$eval('#compare-out p', (ps) => ps.map((p) => [...p.querySelectorAll('.lp-word')].map((c) => ({
    text: c.textContent, a: c.dataset.a, b: c.dataset.b, diff: c.dataset.diff, bg: getComputedStyle(c).backgroundColor,
  }))));

  // one paragraph per line (each ends in <eos>, which draws no chip), a chip for every other token
  const eos = a.words.filter((w) => w === '<eos>').length;
  assert.equal(eos, 2);
  assert.deepEqual(chips.map((line) => line.length), [a.words.indexOf('<eos>'), a.words.length - a.words.indexOf('<eos>') - 2]);
  const flat = chips.flat();
  const expected = [];
  a.words.forEach((w, i) => { if (w !== '<eos>') expected.push(i); });
  assert.equal(flat.length, expected.length);
  expected.forEach((i, k) => {
    const chip = flat[k];
    const word = a.words[i] === '<unk>' ? spelled.shift() : a.words[i];
    assert.equal(chip.text, word, `chip ${k}`);
    assert.equal(chip.a, String(a.logprobs[i]), `chip ${k} (${word}): the FWM's log-probability`);
    assert.equal(chip.b, String(b.logprobs[i]), `chip ${k} (${word}): the LSTM's log-probability`);
    const diff = a.logprobs[i] - b.logprobs[i];
    assert.equal(chip.diff, String(diff));
    const [r, g, bl, alpha] = chip.bg.match(/[\d.]+/g).map(Number);
    if (Math.abs(diff) > 0.01) {
      assert.ok(diff > 0 ? g > r : r > g, `chip ${k} (${word}) coloured ${chip.bg} for a difference of ${diff}`);
      assert.ok(alpha > 0);
    }
    assert.ok(bl < Math.max(r, g));
  });
  const ppl = (lps) => Math.exp(-lps.reduce((s, x) => s + x, 0) / lps.length).toFixed(2);
  assert.equal(summary, `${a.words.length} tokens: perplexity ${ppl(a.logprobs)} with ${fwmModel.name}, `
    + `${ppl(b.logprobs)} with ${lstmModel.name}; ${fwmModel.name} is less surprised by `
    + `${a.logprobs.filter((x, i) => x > b.logprobs[i]).length} of them.`);

  // the comparison's two sessions are closed; the page's own panel stays
  assert.equal(await sessionCount(), before);

  if (process.env.FWM_SCREENSHOT) {
    const shot = path.join(path.dirname(process.env.FWM_SCREENSHOT), 'figure6.png');
    const section = await page.$('#compare');
    await section.screenshot({ path: shot });
  }
  assert.deepEqual(errors, [], 'no script errors in the page');
  await page.close();
});

// compare_view.js - the FWM paper's figure 6, live: one passage read by two fresh sessions, one per
// model, and each word coloured by how much less surprised the first model is than the second: the
// difference of their natural-log probabilities of that word given everything before it (the
// server's `feed` with `logprobs`). Green where the first model (the FWM, by default) gave the word
// more probability, red where less; the stronger, the larger the difference. Offered when the
// server serves at least two models that score tokens and read any text (`logprobs` and
// `has_unknown_token` in hello), such as an FWM and an LSTM trained on the same text. The
// sessions are opened for one comparison and closed after it.

import { unknownWords } from './client/browser.js';

/** A passage from Persuasion (the corpus's test book, which the Austen models never trained on). */
export const PASSAGE = 'To Lady Russell, indeed, she was a most dear and highly valued god-daughter, '
  + 'favourite, and friend. Lady Russell loved them all; but it was only in Anne that she could fancy '
  + 'the mother to revive again.\n'
  + 'A few years before, Anne Elliot had been a very pretty girl, but her bloom had vanished early; '
  + 'and as even in its height, her father had found little to admire in her, he could not be '
  + 'expected to think much of Anne now. Lady Russell was the only one who saw in Anne the mother '
  + 'again, and Sir Walter never thought of Anne at all.\n';

/** A difference of this many nats or more gets the full colour. */
const FULL = 4;

const $ = (selector) => /** @type {HTMLElement} */ (document.querySelector(selector));

/** The models a passage can be compared with: they score tokens and read any text. */
export function comparable(models) {
  return models.filter((m) => m.logprobs && m.has_unknown_token);
}

/** The background of a word whose log-probabilities differ by `diff` (first minus second). */
export function colour(diff) {
  const strength = Math.min(Math.abs(diff) / FULL, 1) * 0.85;
  return diff >= 0 ? `rgba(22, 163, 74, ${strength.toFixed(3)})` : `rgba(220, 38, 38, ${strength.toFixed(3)})`;
}

/**
 * Read `text` into a fresh session of `model`, a line at a time (a line end is read as <eos>;
 * pieces split between words give the same log-probabilities as one feed), and close it.
 * @returns {Promise<{words: string[], logprobs: number[]}>} each token as written in the text (a
 *   word read as <unk> keeps its own spelling) and its log-probability
 */
async function score(client, model, text) {
  const session = await client.open({ model });
  const words = [];
  const logprobs = [];
  try {
    for (const line of text.match(/[^\n]*\n|[^\n]+$/g) || []) {
      const read = [];
      const r = await session.feed(line, { topk: 0, logprobs: true, onToken: (e) => read.push(e.word) });
      const spelled = unknownWords(line, r.unknown);
      for (const word of read) words.push(word === '<unk>' && spelled.length ? spelled.shift() : word);
      logprobs.push(...r.logprobs);
    }
  } finally {
    await session.close();
  }
  return { words, logprobs };
}

/** The word chips of a comparison, line by line; each carries both log-probabilities. */
function draw(out, a, b, nameA, nameB) {
  out.textContent = '';
  let line = null;
  for (let i = 0; i < a.words.length; i++) {
    if (a.words[i] === '<eos>') {
      line = null; // a paragraph ends
      continue;
    }
    if (!line) {
      line = document.createElement('p');
      out.append(line);
    }
    const diff = a.logprobs[i] - b.logprobs[i];
    const chip = document.createElement('span');
    chip.className = 'lp-word';
    chip.textContent = a.words[i];
    chip.style.background = colour(diff);
    chip.dataset.a = String(a.logprobs[i]);
    chip.dataset.b = String(b.logprobs[i]);
    chip.dataset.diff = String(diff);
    chip.title = `${nameA}: log p = ${a.logprobs[i].toFixed(2)}\n${nameB}: log p = ${b.logprobs[i].toFixed(2)}\n`
      + `difference ${diff >= 0 ? '+' : ''}${diff.toFixed(2)} nats`;
    line.append(chip, ' ');
  }
}

/** Perplexity over a comparison's tokens: exp of the mean negative log-probability. */
const perplexity = (logprobs) => Math.exp(-logprobs.reduce((s, x) => s + x, 0) / logprobs.length);

/** Compare the passage in the text box with the two chosen models. */
async function compare(client) {
  const nameA = /** @type {HTMLSelectElement} */ ($('#compare-a')).value;
  const nameB = /** @type {HTMLSelectElement} */ ($('#compare-b')).value;
  const text = /** @type {HTMLTextAreaElement} */ ($('#compare-text')).value;
  const summary = $('#compare-summary');
  if (!text.trim()) return;
  const [a, b] = await Promise.all([score(client, nameA, text), score(client, nameB, text)]);
  if (a.words.length !== b.words.length) {
    throw new Error(`${nameA} read ${a.words.length} tokens and ${nameB} ${b.words.length}: they split text differently`);
  }
  draw($('#compare-out'), a, b, nameA, nameB);
  const less = a.logprobs.filter((x, i) => x > b.logprobs[i]).length;
  summary.textContent = `${a.logprobs.length} tokens: perplexity ${perplexity(a.logprobs).toFixed(2)} with `
    + `${nameA}, ${perplexity(b.logprobs).toFixed(2)} with ${nameB}; ${nameA} is less surprised by `
    + `${less} of them.`;
}

/** Fill the model lists and show the section when the server has two comparable models. */
export function setupCompare(client, models) {
  const usable = comparable(models);
  const section = $('#compare');
  section.hidden = usable.length < 2;
  if (section.hidden) return;
  const first = usable.find((m) => m.architecture === 'fwm') || usable[0];
  const second = usable.find((m) => m !== first && m.architecture !== first.architecture)
    || usable.find((m) => m !== first);
  for (const [id, chosen] of [['#compare-a', first], ['#compare-b', second]]) {
    const list = /** @type {HTMLSelectElement} */ ($(id));
    list.textContent = '';
    for (const m of usable) {
      const option = document.createElement('option');
      option.value = m.name;
      option.textContent = `${m.name} (${m.architecture})`;
      option.selected = m === chosen;
      list.append(option);
    }
  }
  const box = /** @type {HTMLTextAreaElement} */ ($('#compare-text'));
  if (!box.value) box.value = PASSAGE;
  const button = /** @type {HTMLButtonElement} */ ($('#compare-run'));
  button.onclick = async () => {
    button.disabled = true;
    $('#compare-summary').classList.remove('error-text');
    $('#compare-summary').textContent = 'reading…';
    try {
      await compare(client);
    } catch (e) {
      $('#compare-summary').classList.add('error-text');
      $('#compare-summary').textContent = e && e.message ? `${e.name || 'error'}: ${e.message}` : String(e);
    } finally {
      button.disabled = false;
    }
  };
}

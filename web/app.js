// app.js - fwm's web page: connects to fwm-serve over WebSocket (/rpc, msgpack-RPC, the JS client's
// browser entry), reads stories into sessions with streamed next-word predictions, answers
// questions, forks sessions to compare them, and shows the memory (memory_view.js) from the server's
// `trace` method; compare_view.js reads one passage with two models side by side (figure 6). A server serving several models (any architecture) offers them in a list: each new
// session reads with the model chosen there, and forks keep their parent's. The memory view is the
// FWM's (the others have no fast-weight tensor to trace); the others read, predict and answer.
// State kept here: per FWM session, what each word it read wrote (k1, k2), for the figure-3 grid; at
// most HISTORY_LIMIT words. Leaving the page closes the sessions it opened (pagehide).

import { connect } from './client/browser.js';
import { setupCompare } from './compare_view.js';
import { drawReads, drawSlices, floats } from './memory_view.js';

const HISTORY_LIMIT = 400;
const TRACE_LIMIT = 256; // tokens per trace call (the server's limit)
const SAMPLE = 'Mary moved to the bathroom. Sandra journeyed to the bedroom. Mary got the football there. '
  + 'John went to the kitchen. Mary went back to the kitchen. Mary went back to the garden.';

const $ = (selector, root = document) => /** @type {HTMLElement} */ (root.querySelector(selector));
const status = (text, error = false) => {
  const s = $('#status');
  s.textContent = text;
  s.classList.toggle('error', error);
};

/** @type {any} */
let client = null;
let selected = null;
const panels = [];
/** @type {Map<string, any>} the server's models by name (hello) */
const models = new Map();

function tokenize(text) {
  return text.toLowerCase().split(/\s+/).filter(Boolean).flatMap((w) => {
    const last = w[w.length - 1];
    return (last === '.' || last === '?') && w.length > 1 ? [w.slice(0, -1), last] : [w];
  });
}

/** Split a token list into pieces the server traces at once. */
function chunks(words) {
  const out = [];
  for (let i = 0; i < words.length; i += TRACE_LIMIT) out.push(words.slice(i, i + TRACE_LIMIT).join(' '));
  return out;
}

/** The line that presents a model: its name, architecture, size and, for the FWM, its memory. */
function describe(model) {
  const size = `${model.parameters.toLocaleString()} weights`;
  if (model.architecture === 'fwm') {
    return `${model.name}: fwm, ${size}, memory ${model.memory.join(' × ')}, ${model.reads} chained reads`;
  }
  const reading = model.input === 'sentence' ? ', reads a sentence at a time and answers after "?"' : '';
  return `${model.name}: ${model.architecture}, ${size}${reading}`;
}

class Panel {
  constructor(session, name, history, note, model) {
    this.session = session;
    this.name = name;
    this.model = model;
    this.traced = model.architecture === 'fwm'; // only the FWM's memory can be traced
    this.history = history; // [{word, k1, k2}]
    this.root = /** @type {HTMLElement} */ (
      /** @type {HTMLTemplateElement} */ ($('#session-template')).content.firstElementChild.cloneNode(true));
    this.root.dataset.session = name;
    $('.name', this.root).textContent = `session ${name}`;
    $('.model', this.root).textContent = model.name;
    this.root.dataset.model = model.name;
    const story = /** @type {HTMLTextAreaElement} */ ($('.story', this.root));
    story.value = panels.length === 0 ? SAMPLE : '';
    story.placeholder = 'Type or paste a story: one sentence after another.';
    $('.read', this.root).addEventListener('click', () => this.run(() => this.read(story.value)));
    $('.fork', this.root).addEventListener('click', () => this.run(() => this.fork()));
    $('.reset', this.root).addEventListener('click', () => this.run(() => this.reset()));
    $('.show', this.root).addEventListener('click', () => this.run(() => this.showMemory()));
    $('.ask', this.root).addEventListener('submit', (e) => {
      e.preventDefault();
      const q = /** @type {HTMLInputElement} */ ($('.question', this.root)).value.trim();
      if (q) this.run(() => this.ask(q));
    });
    this.root.addEventListener('click', () => select(this));
    if (note) this.note(note);
    $('#sessions').append(this.root);
    this.updatePos(session.info ? session.info.pos : 0);
  }

  note(text) {
    const n = document.createElement('div');
    n.className = 'hint';
    n.textContent = text;
    $('.stream', this.root).append(n);
  }

  updatePos(pos) { $('.pos', this.root).textContent = `${pos} words read`; }

  /** Run an action with the buttons disabled; errors are shown in the panel. */
  async run(action) {
    const buttons = this.root.querySelectorAll('button');
    buttons.forEach((b) => { b.disabled = true; });
    try {
      await action();
    } catch (e) {
      const a = $('.answer', this.root);
      a.innerHTML = '';
      const err = document.createElement('span');
      err.className = 'error-text';
      err.textContent = e && e.message ? `${e.name || 'error'}: ${e.message}` : String(e);
      a.append(err);
    } finally {
      buttons.forEach((b) => { b.disabled = false; });
    }
  }

  remember(steps) {
    for (const s of steps) this.history.push({ word: s.word, k1: floats(s.write.k1), k2: floats(s.write.k2) });
    if (this.history.length > HISTORY_LIMIT) this.history.splice(0, this.history.length - HISTORY_LIMIT);
  }

  /** Read text: first what it writes (trace on a copy), then for real, streaming each prediction. */
  async read(text) {
    const words = tokenize(text);
    if (words.length === 0) return;
    if (this.traced) {
      for (const piece of chunks(words)) this.remember((await this.session.trace(piece, { topk: 0 })).steps);
    }
    const stream = $('.stream', this.root);
    const r = await this.session.feed(text, {
      topk: 3,
      onToken: (e) => {
        const chip = document.createElement('span');
        chip.className = 'word';
        const w = document.createElement('b');
        w.textContent = e.word;
        const next = document.createElement('small');
        next.textContent = e.topk.map(([word, p]) => `${word} ${p.toFixed(2)}`).join(' · ');
        chip.append(w, next);
        stream.append(chip);
        stream.scrollTop = stream.scrollHeight;
      },
    });
    this.updatePos(r.pos);
  }

  /** Answer from memory; the answer is committed (read) as in training, and its reads are shown. */
  async ask(question) {
    const q = /[?]\s*$/.test(question) ? question : `${question}?`;
    const a = await this.session.ask(q, { topk: 5 });
    const box = $('.answer', this.root);
    box.innerHTML = '';
    const best = document.createElement('div');
    best.innerHTML = `<span class="hint">${q}</span> `;
    const word = document.createElement('span');
    word.className = 'best';
    word.textContent = a.answer;
    best.append(word, ` (p = ${a.prob.toFixed(3)})`);
    box.append(best);
    for (const [w, p] of a.topk) {
      const bar = document.createElement('div');
      bar.className = 'bar';
      const fill = document.createElement('span');
      fill.className = 'fill';
      fill.style.width = `${Math.max(0.5, 100 * p)}%`;
      const wrap = document.createElement('span');
      wrap.append(fill);
      const label = document.createElement('span');
      label.textContent = w;
      bar.append(label, wrap, `${(100 * p).toFixed(1)}%`);
      box.append(bar);
    }
    if (!this.traced) {
      const r = await this.session.feed(`${q} ${a.answer}`, { notify: false });
      this.updatePos(r.pos);
      this.note(`asked: ${q} → ${a.answer}`);
      select(this);
      return;
    }
    // what the question and the answer write and read, then read them for real
    const t = await this.session.trace(`${q} ${a.answer}`, { memory: true, topk: 3 });
    const steps = t.steps;
    const at = steps.findIndex((s) => s.word === '?');
    this.remember(steps.slice(0, at + 1));
    select(this);
    drawReads($('#reads'), this.history, steps[at].reads.map((r) => ({
      query: floats(r.query), key: floats(r.key), topk: r.topk,
    })));
    this.remember(steps.slice(at + 1));
    drawSlices($('#slices'), floats(t.memory), t.shape);
    const r = await this.session.feed(`${q} ${a.answer}`, { notify: false });
    this.updatePos(r.pos);
    this.note(`asked: ${q} → ${a.answer}`);
  }

  async showMemory() {
    select(this);
    if (!this.traced) return;
    const t = await this.session.trace(undefined, { memory: true });
    select(this);
    drawSlices($('#slices'), floats(t.memory), t.shape);
  }

  async reset() {
    const r = await this.session.reset();
    this.history.length = 0;
    $('.stream', this.root).textContent = '';
    $('.answer', this.root).textContent = '';
    this.updatePos(r.pos);
  }

  async fork() {
    const child = await this.session.fork();
    const name = String.fromCharCode(65 + panels.length);
    const panel = new Panel(child, name, this.history.slice(), `forked from session ${this.name}: it has read the same`,
      this.model);
    panels.push(panel);
    panel.updatePos((await child.predict()).pos);
    select(panel);
  }
}

function select(panel) {
  if (selected === panel) return;
  for (const p of panels) p.root.classList.toggle('selected', p === panel);
  selected = panel;
  $('#memory-of').textContent = `session ${panel.name}`;
  $('#memory-view').hidden = !panel.traced;
  const other = $('#memory-other');
  other.hidden = panel.traced;
  other.textContent = panel.traced ? '' : `Session ${panel.name} reads with ${describe(panel.model)}. `
    + 'This view draws the FWM\'s fast-weight tensor and its chained reads; other architectures keep '
    + 'their memory in other shapes, so choose an FWM model to see it.';
}

/** Open a session with the model named `name` (the server's default when empty) in a new panel. */
async function openPanel(name) {
  const model = name ? models.get(name) : [...models.values()].find((m) => m.default);
  const session = await client.open({ model: model.name, topk: 3 });
  const letter = String.fromCharCode(65 + panels.length);
  const primed = model.prime.length ? `primed: it has read ${model.prime.join(' ')}` : '';
  const panel = new Panel(session, letter, [], primed, model);
  panels.push(panel);
  select(panel);
  return panel;
}

async function start(token) {
  const scheme = location.protocol === 'https:' ? 'wss' : 'ws';
  client = await connect(`${scheme}://${location.host}/rpc`, token ? { token } : {});
  const hello = client.server;
  if (hello.auth_required && !hello.authenticated) {
    await client.close();
    $('#auth').hidden = false;
    status('this server needs a token', true);
    return;
  }
  $('#auth').hidden = true;
  for (const m of hello.models) models.set(m.name, m);
  const model = hello.models.find((m) => m.default) || hello.models[0];
  status(`connected: ${describe(model)}`
    + (hello.models.length > 1 ? ` (and ${hello.models.length - 1} more)` : ''));
  const choice = /** @type {HTMLSelectElement} */ ($('#model'));
  choice.textContent = '';
  for (const m of hello.models) {
    const option = document.createElement('option');
    option.value = m.name;
    option.textContent = describe(m);
    option.selected = m === model;
    choice.append(option);
  }
  $('#new-session').hidden = false;
  setupCompare(client, hello.models);
  await openPanel(model.name);
}

$('#new-session').addEventListener('submit', (e) => {
  e.preventDefault();
  const name = /** @type {HTMLSelectElement} */ ($('#model')).value;
  openPanel(name).catch((err) => status(`cannot open a session: ${err.message || err}`, true));
});

$('#auth').addEventListener('submit', (e) => {
  e.preventDefault();
  const token = /** @type {HTMLInputElement} */ ($('#token')).value;
  start(token).catch((err) => status(`cannot connect: ${err.message || err}`, true));
});
start(new URLSearchParams(location.hash.slice(1)).get('token') || '').catch((err) => {
  if (err && err.name === 'unauthorized') {
    $('#auth').hidden = false;
    status('this server needs a token', true);
  } else {
    status(`cannot connect: ${err.message || err}`, true);
  }
});

// Leaving the page (closing the tab, reloading, navigating away) closes the sessions it opened,
// forks included, so that a server keeping sessions (--data-dir, as scripts/serve.sh runs it) does
// not keep one or more per visit. Best effort: `close` goes as notifications, since a page that is
// going away cannot wait for answers; whatever does not arrive, the server's --idle-timeout and
// --session-ttl remove later. A page brought back from the back/forward cache starts afresh.
function closeSessions() {
  if (!client) return;
  for (const panel of panels.splice(0)) {
    try {
      client.notify('close', { session: panel.session.id });
    } catch {
      // the connection is already gone: nothing more can be sent
    }
  }
}
window.addEventListener('pagehide', closeSessions);
window.addEventListener('pageshow', (e) => {
  if (e.persisted) location.reload();
});
window.fwmPage = { panels: () => panels, closeSessions };

// harness.js - helpers for the client's tests: a real fwm-serve on OS-chosen ports in a temp folder
// (the bundled QM model), the bAbI stories, and the Python client run as an independent reference.
// Paths come from the environment (meson's test sets them), else from the source tree:
//   FWM_SERVE (build/server/fwm-serve), FWM_MODEL (models/fwm-babi-qm.gguf),
//   FWM_BABI (../shared/data/babi-v1.2 beside the source root), FWM_PYTHON (/usr/bin/python3).
// Every wait is bounded, and every server is killed when its test ends.

import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const JS_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const SOURCE_ROOT = path.resolve(JS_ROOT, '..', '..');
export const SERVE = process.env.FWM_SERVE || path.join(SOURCE_ROOT, 'build', 'server', 'fwm-serve');
export const MODEL = process.env.FWM_MODEL || path.join(SOURCE_ROOT, 'models', 'fwm-babi-qm.gguf');
export const BABI = process.env.FWM_BABI || path.join(SOURCE_ROOT, '..', 'shared', 'data', 'babi-v1.2');
export const PYTHON = process.env.FWM_PYTHON || '/usr/bin/python3';

/** Why the tests that need a server cannot run here, or null. */
export function missingServer() {
  if (!fs.existsSync(SERVE)) return `no fwm-serve at ${SERVE} (build it, or set FWM_SERVE)`;
  if (!fs.existsSync(MODEL)) return `no model at ${MODEL} (set FWM_MODEL)`;
  return null;
}

/** What to do when the test process exits, whatever happened: kill servers, remove temp folders. */
const atExit = [];
process.once('exit', () => { for (const f of atExit.reverse()) f(); });

/** A temp folder removed when the process exits. */
export function tempDir() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fwm-js-test-'));
  atExit.push(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Start fwm-serve on a free TCP port and a Unix socket; resolves once its port file is written.
 * @param {{flags?: string[], models?: string[], env?: Record<string, string>}} [options]
 */
export async function startServer(options = {}) {
  const dir = tempDir();
  const portFile = path.join(dir, 'ports');
  const sock = path.join(dir, 'fwm.sock');
  const stderrPath = path.join(dir, 'stderr');
  const stderr = fs.openSync(stderrPath, 'w');
  const args = [...(options.models || [MODEL]), '--listen', 'tcp://127.0.0.1:0', '--listen', `unix:${sock}`,
    '--port-file', portFile, ...(options.flags || [])];
  const proc = spawn(SERVE, args, { stdio: ['ignore', 'ignore', stderr], env: { ...process.env, ...options.env } });
  fs.closeSync(stderr);
  let exited = null;
  const exit = new Promise((resolve) => proc.on('exit', (code, signal) => { exited = { code, signal }; resolve(exited); }));
  const kill = () => { if (exited === null) proc.kill('SIGKILL'); };
  atExit.push(kill);
  const deadline = Date.now() + 30000;
  while (!fs.existsSync(portFile) && exited === null && Date.now() < deadline) await sleep(20);
  const readStderr = () => fs.readFileSync(stderrPath, 'utf8');
  if (!fs.existsSync(portFile)) {
    kill();
    throw new Error(`fwm-serve did not start: ${readStderr()}`);
  }
  const addresses = fs.readFileSync(portFile, 'utf8').split(/\s+/).filter(Boolean);
  return {
    dir,
    address: addresses.find((a) => a.startsWith('tcp://')),
    unixAddress: addresses.find((a) => a.startsWith('unix:')),
    http: addresses.find((a) => a.startsWith('http://')),  // with --http
    stderr: readStderr,
    /** SIGTERM, then the exit status (SIGKILL after 20 s). */
    async stop() {
      if (exited === null) proc.kill('SIGTERM');
      const timer = setTimeout(kill, 20000);
      const r = await exit;
      clearTimeout(timer);
      return r;
    },
    kill,
  };
}

/** catbAbI tokenization: lower-case, split on white space, a final '.' or '?' is its own token. */
export function tokenize(text) {
  const out = [];
  for (const w of text.toLowerCase().split(/\s+/).filter(Boolean)) {
    if (w.length > 1 && (w.endsWith('.') || w.endsWith('?'))) out.push(w.slice(0, -1), w.slice(-1));
    else out.push(w);
  }
  return out;
}

/**
 * The stories of one bAbI file: arrays of {kind: "statement", text} and {kind: "question", text, answer}.
 * @param {string} file
 * @param {number} [limit]
 */
export function readStories(file, limit) {
  const stories = [];
  let story = null;
  for (const line of fs.readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const space = line.indexOf(' ');
    const number = line.slice(0, space);
    const parts = line.slice(space + 1).split('\t');
    if (number === '1') {
      if (story) {
        stories.push(story);
        if (limit && stories.length >= limit) return stories;
      }
      story = [];
    }
    if (parts.length > 1) story.push({ kind: 'question', text: parts[0].trim(), answer: parts[1].trim().toLowerCase() });
    else story.push({ kind: 'statement', text: parts[0].trim() });
  }
  if (story && (!limit || stories.length < limit)) stories.push(story);
  return stories;
}

/** The bAbI test file of task `task` (en-valid-10k), or null when the data is absent. */
export function babiFile(task) {
  const f = path.join(BABI, 'en-valid-10k', `qa${task}_test.txt`);
  return fs.existsSync(f) ? f : null;
}

/** A probability (a float32 on the wire) as the 8 hex digits of its float32 bits. */
export function f32hex(p) {
  const view = new DataView(new ArrayBuffer(4));
  view.setFloat32(0, p);
  return view.getUint32(0).toString(16).padStart(8, '0');
}

/**
 * Run the Python client (clients/python) on `stories` against `address`: the reference the JS
 * results must equal bit for bit. Returns its JSON output (test/python_reference.py).
 */
export function pythonReference(address, stories, topk) {
  const r = spawnSync(PYTHON, [path.join(JS_ROOT, 'test', 'python_reference.py'), address, String(topk)], {
    input: JSON.stringify(stories), encoding: 'utf8', timeout: 120000,
    env: { ...process.env, PYTHONPATH: path.join(SOURCE_ROOT, 'clients', 'python') },
  });
  if (r.status !== 0) throw new Error(`python_reference.py failed (${r.status}): ${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** Whether the Python reference can run (python3 with msgpack). */
export function missingPython() {
  const r = spawnSync(PYTHON, ['-c', 'import msgpack'], { encoding: 'utf8', timeout: 30000 });
  return r.status === 0 ? null : `no ${PYTHON} with msgpack (the independent reference): ${r.stderr || r.error}`;
}

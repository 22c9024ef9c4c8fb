// dialogue_agent.test.js - examples/dialogue_agent.js run as a user would, against a real
// fwm-serve: the scripted demo (its answers are the dialogue's facts), saving its memory and
// restoring it in a second run, a what-if on a fork, and the parsing of !whatif.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseWhatIf } from '../examples/dialogue_agent.js';
import { startServer, missingServer, JS_ROOT } from './harness.js';

const skip = missingServer() || false;
const AGENT = path.join(JS_ROOT, 'examples', 'dialogue_agent.js');
/** @type {Awaited<ReturnType<typeof startServer>>} */
let server;
before(async () => { if (!skip) server = await startServer(); });
after(async () => { if (server) assert.equal((await server.stop()).code, 0, server.stderr()); });

/** Run the agent with `args`, `input` on its stdin; resolves with {code, stdout, stderr}. */
function runAgent(args, input = '') {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [AGENT, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    p.stdout.on('data', (d) => { stdout += d; });
    p.stderr.on('data', (d) => { stderr += d; });
    const timer = setTimeout(() => { p.kill('SIGKILL'); reject(new Error(`the agent hung: ${stdout} ${stderr}`)); }, 60000);
    p.on('close', (code) => { clearTimeout(timer); resolve({ code, stdout, stderr }); });
    p.stdin.end(input);
  });
}

test('parseWhatIf: one "." after the supposition, one "?" after the question', () => {
  for (const typed of ['Mary went to the kitchen. ? Where is Mary?', 'Mary went to the kitchen ? Where is Mary',
    '  Mary went to the kitchen.  ?  Where is Mary? ']) {
    assert.deepEqual(parseWhatIf(typed), ['Mary went to the kitchen .', 'Where is Mary?'], typed);
  }
});

test('the demo, memory saved and restored, a what-if, errors reported', { skip }, async () => {
  const memory = path.join(server.dir, 'memory.bin');
  const demo = await runAgent(['--connect', server.address, '--demo', '--memory', memory]);
  assert.equal(demo.code, 0, demo.stderr);
  const lines = demo.stdout.trim().split('\n');
  assert.deepEqual(lines.filter((l) => l.startsWith('user:')).length, 6);
  const answers = lines.filter((l) => /^agent: \w+ \(confidence [01]\.\d\d\)$/.test(l)).map((l) => l.split(' ')[1]);
  assert.deepEqual(answers, ['bathroom', 'hallway'], `the dialogue's facts:\n${demo.stdout}`);
  assert.ok(lines.includes('what if Mary went to the kitchen? where is Mary -> kitchen'), demo.stdout);
  assert.match(demo.stdout, /agent \(real memory\): where is Mary -> bathroom \(confidence/);
  assert.ok(lines.includes(`(memory saved to ${memory})`));
  assert.ok(fs.statSync(memory).size > 1000, 'a state blob');

  const again = await runAgent(['--connect', server.unixAddress, '--memory', memory],
    'Where is Daniel?\nSandra went to the office.\n!whatif Sandra went to the kitchen ? Where is Sandra\n' +
    'Where is Sandra?\nMary flew.\n!save\n!quit\nWhere is John?\n');
  assert.equal(again.code, 0, again.stderr);
  const out = again.stdout.trim().split('\n');
  assert.equal(out[0], `(memory restored from ${memory})`);
  assert.match(out[1], /^hallway \(confidence/, 'remembered across runs');
  assert.equal(out[2], 'ok');
  assert.equal(out[3], 'kitchen', 'the what-if');
  assert.match(out[4], /^office \(confidence/, 'the real memory untouched by the what-if');
  assert.match(out[5], /^\(unknown_word: .*flew/);
  assert.equal(out[6], `(memory saved to ${memory})`);
  assert.equal(out.length, 7, 'nothing after !quit');

  const refused = await runAgent(['--connect', 'tcp://127.0.0.1:1', '--demo']);
  assert.equal(refused.code, 1);
  assert.match(refused.stderr, /dialogue_agent: connect: cannot connect/);
});

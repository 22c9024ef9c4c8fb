#!/usr/bin/env node
// dialogue_agent.js - a tiny dialogue agent whose memory is an fwm-serve session (the JavaScript
// twin of clients/python/examples/dialogue_agent.py, with the same commands).
//
// Everything the user tells the agent is read by the session (the fast-weight memory stores it);
// questions are answered closed-book from that memory, and the answer is committed so the dialogue
// goes on as if the agent had said it. The agent can save its memory to a file and load it again
// (snapshot/restore), and can "imagine" a what-if on a fork without touching its real memory.
//
//     dialogue_agent.js [--connect ADDRESS] [--memory FILE] [--demo]
//
// Interactive by default: statements end in ".", questions in "?"; "!save", "!whatif TEXT ? Q?",
// "!quit". --demo runs a scripted bAbI-style dialogue and exits. ADDRESS defaults to $FWM_ADDRESS,
// else tcp://127.0.0.1:7411; the token comes from $FWM_AUTH_TOKEN.

import fs from 'node:fs';
import readline from 'node:readline';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { connect, DEFAULT_ADDRESS, FwmError } from '../src/index.js';

export class Agent {
  /** @param {import('../src/index.js').Session} session  @param {string} [memoryFile] */
  constructor(session, memoryFile) {
    this.session = session;
    this.memoryFile = memoryFile;
  }

  /**
   * An agent on `client`: its memory restored from `memoryFile` when that exists, else a new session.
   * @param {import('../src/index.js').Client} client
   * @param {string} [memoryFile]
   */
  static async start(client, memoryFile) {
    if (memoryFile && fs.existsSync(memoryFile)) {
      const agent = new Agent(await client.restore(fs.readFileSync(memoryFile)), memoryFile);
      console.log(`(memory restored from ${memoryFile})`);
      return agent;
    }
    const session = await client.open({ topk: 3 });  // primed: it has read "<eos>", as a story begins
    return new Agent(session, memoryFile);
  }

  /** A statement is remembered; a question is answered from memory. */
  async hear(line) {
    line = line.trim();
    if (!line) return null;
    if (line.endsWith('?')) {
      const a = await this.session.ask(line, { commit: true });
      return `${a.answer} (confidence ${a.prob.toFixed(2)})`;
    }
    if (!line.endsWith('.')) line += ' .';
    await this.session.feed(line);
    return 'ok';
  }

  /** Answer a question in an imagined world: a fork reads the supposition, the agent does not. */
  async whatIf(supposition, question) {
    const imagined = await this.session.fork();
    try {
      await imagined.feed(supposition);
      return (await imagined.ask(question)).answer;
    } finally {
      await imagined.close();
    }
  }

  async save() {
    if (!this.memoryFile) return '(no --memory file given)';
    fs.writeFileSync(this.memoryFile, await this.session.snapshot());
    return `(memory saved to ${this.memoryFile})`;
  }
}

/**
 * `TEXT ? QUESTION?` -> ["TEXT .", "QUESTION?"]: one final "." and one final "?", whatever the user
 * typed around them (a supposition may end in "." already; the question may end in "?").
 * @param {string} body
 */
export function parseWhatIf(body) {
  const at = body.indexOf('?');
  const supposition = (at < 0 ? body : body.slice(0, at)).trim().replace(/\.+$/, '').trim();
  const question = (at < 0 ? '' : body.slice(at + 1)).trim().replace(/\?+$/, '').trim();
  return [`${supposition} .`, `${question}?`];
}

export const DEMO = [
  'Mary moved to the bathroom.',
  'John went to the hallway.',
  'Where is Mary?',
  'Daniel went back to the hallway.',
  'Sandra moved to the garden.',
  'Where is Daniel?',
];

async function main() {
  const { values } = parseArgs({
    options: {
      connect: { type: 'string', default: process.env.FWM_ADDRESS || DEFAULT_ADDRESS },
      memory: { type: 'string' },
      demo: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    console.log('usage: dialogue_agent.js [--connect ADDRESS] [--memory FILE] [--demo]');
    return 0;
  }
  const client = await connect(values.connect);
  try {
    const agent = await Agent.start(client, values.memory);
    if (values.demo) {
      for (const line of DEMO) {
        console.log(`user:  ${line}`);
        console.log(`agent: ${await agent.hear(line)}`);
      }
      console.log(`what if Mary went to the kitchen? where is Mary -> ${
        await agent.whatIf('Mary went to the kitchen.', 'Where is Mary?')}`);
      console.log(`agent (real memory): where is Mary -> ${await agent.hear('Where is Mary?')}`);
      if (values.memory) console.log(await agent.save());
      return 0;
    }
    const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
    for await (const raw of lines) {
      const line = raw.trim();
      if (line === '!quit') break;
      try {
        if (line === '!save') console.log(await agent.save());
        else if (line.startsWith('!whatif ')) console.log(await agent.whatIf(...parseWhatIf(line.slice('!whatif '.length))));
        else {
          const reply = await agent.hear(line);
          if (reply !== null) console.log(reply);
        }
      } catch (e) {
        if (!(e instanceof FwmError) || e.name === 'io') throw e;
        console.log(`(${e.name}: ${e.message})`);
      }
    }
    lines.close();
    return 0;
  } finally {
    await client.close();
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(fs.realpathSync(process.argv[1])).href) {
  main().then((code) => { process.exitCode = code; }, (e) => {
    console.error(`dialogue_agent: ${e instanceof FwmError ? `${e.name}: ${e.message}` : e}`);
    process.exitCode = 1;
  });
}

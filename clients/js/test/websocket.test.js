// websocket.test.js - the WebSocket transport: msgpack-RPC in binary frames, one message per
// frame, against fwm-serve's own endpoint (--http, /rpc); and an in-test WebSocket server (the `ws`
// package, a dev dependency) that bridges each frame to a
// real fwm-serve's TCP port and sends each message of the answer back as one frame, checking that
// every frame the client sends holds exactly one message; the same calls over TCP give the same
// results. Raw in-test servers check that a text frame, a frame of two messages, a truncated one or
// one over maxMessageBytes fail the connection. And the browser entry point imports nothing of Node.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { WebSocketServer, WebSocket } from 'ws';
import { encode, decode, decodeMultiStream } from '@msgpack/msgpack';
import { connect, FwmError } from '../src/index.js';
import * as browser from '../src/browser.js';
import { startServer, missingServer, tokenize, JS_ROOT } from './harness.js';

const skip = missingServer() || false;
/** @type {Awaited<ReturnType<typeof startServer>>} */
let server;
before(async () => { if (!skip) server = await startServer(); });
after(async () => { if (server) assert.equal((await server.stop()).code, 0, server.stderr()); });

/**
 * A WebSocket server on a free port; `onConnection(ws)` handles each connection.
 * @param {(ws: WebSocket) => void} onConnection
 */
async function wsServer(onConnection) {
  const wss = new WebSocketServer({ host: '127.0.0.1', port: 0 });
  await new Promise((resolve) => wss.on('listening', () => resolve(undefined)));
  wss.on('connection', onConnection);
  const port = /** @type {import('node:net').AddressInfo} */ (wss.address()).port;
  return {
    url: `ws://127.0.0.1:${port}/rpc`,
    close: () => new Promise((resolve) => {
      for (const c of wss.clients) c.terminate();
      wss.close(() => resolve(undefined));
    }),
  };
}

/** Bridge WebSocket frames to fwm-serve's TCP port: what fwm-serve's WebSocket endpoint does. */
async function bridge(tcpAddress) {
  const stats = { frames: 0, badFrames: [] };
  const [host, port] = tcpAddress.slice('tcp://'.length).split(':');
  const srv = await wsServer((ws) => {
    const tcp = net.connect({ host, port: Number(port) });
    tcp.on('error', () => ws.terminate());
    ws.on('message', (data, isBinary) => {
      stats.frames++;
      try {
        if (!isBinary) throw new Error('a text frame');
        decode(/** @type {Buffer} */ (data));  // exactly one message, or it throws
      } catch (e) {
        stats.badFrames.push(String(e));
      }
      tcp.write(/** @type {Buffer} */ (data));
    });
    ws.on('close', () => tcp.destroy());
    (async () => {
      for await (const message of decodeMultiStream(tcp)) ws.send(encode(message));
      ws.close();
    })().catch(() => ws.terminate());
  });
  return { ...srv, stats };
}

const story = 'Mary moved to the bathroom. John went to the hallway.';

/** One run of calls on a connected client: its results. */
async function run(client) {
  const s = await client.open({ topk: 2 });
  const events = [];
  for await (const e of s.stream(story)) events.push([e.word, e.topk]);
  const [answer, f] = await Promise.all([s.ask('Where is Mary?'), s.fork()]);
  await f.feed('Mary went to the kitchen.');
  const forked = await f.ask('Where is Mary?');
  const blob = await s.snapshot();
  const r = await client.restore(blob);
  await r.feed('the');
  const restored = await r.predict();
  let unknown = null;
  try { await s.feed('Mary flew.'); } catch (e) { unknown = e; }
  for (const x of [s, f, r]) await x.close();
  return { events, answer: { ...answer, session: null }, forked: forked.answer, blob: blob.byteLength,
    restored: restored.topk, unknown };
}

test('over fwm-serve\'s own WebSocket endpoint (--http, /rpc): the same answers as over TCP', { skip }, async () => {
  const own = await startServer({ flags: ['--http', 'tcp://127.0.0.1:0'] });
  try {
    const url = `${own.http.replace('http://', 'ws://')}/rpc`;
    const overWs = await connect(url, { WebSocket });
    let ws;
    try {
      assert.equal(overWs.server.server, 'fwm-serve');
      ws = await run(overWs);
    } finally {
      await overWs.close();
    }
    const overTcp = await connect(own.address);
    const tcp = await run(overTcp);
    await overTcp.close();
    assert.equal(ws.answer.answer, 'bathroom');
    assert.equal(ws.forked, 'kitchen');
    assert.ok(ws.unknown instanceof FwmError && ws.unknown.name === 'unknown_word' && ws.unknown.word === 'flew');
    assert.deepEqual({ ...ws, unknown: null }, { ...tcp, unknown: null }, 'the same results as over TCP');
  } finally {
    assert.equal((await own.stop()).code, 0, own.stderr());
  }
});

test('over WebSocket through a bridge to fwm-serve: the same answers as over TCP, one message per frame', { skip }, async () => {
  const b = await bridge(server.address);
  const overWs = await connect(b.url, { WebSocket });
  let ws;
  try {
    assert.equal(overWs.server.server, 'fwm-serve');
    ws = await run(overWs);
  } finally {
    await overWs.close();
  }
  const overTcp = await connect(server.address);
  const tcp = await run(overTcp);
  await overTcp.close();
  assert.deepEqual(ws.events.map((e) => e[0]), tokenize(story), 'streamed in order');
  assert.equal(ws.answer.answer, 'bathroom');
  assert.equal(ws.forked, 'kitchen');
  assert.ok(ws.unknown instanceof FwmError && ws.unknown.name === 'unknown_word' && ws.unknown.word === 'flew');
  assert.deepEqual({ ...ws, unknown: null }, { ...tcp, unknown: null }, 'the same results as over TCP');
  assert.deepEqual(b.stats.badFrames, [], 'every frame the client sent holds one message');
  assert.ok(b.stats.frames >= 12, `frames: ${b.stats.frames}`);
  await b.close();
});

test('browser entry: the global WebSocket, nothing imported from Node', { skip }, async () => {
  // follow the imports of src/browser.js: none may name a node: module (or a bare one but msgpack)
  const seen = new Set();
  const visit = (file) => {
    if (seen.has(file)) return;
    seen.add(file);
    const text = fs.readFileSync(file, 'utf8');
    for (const m of text.matchAll(/^(?:import|export)\b[^'"\n]*\bfrom\s+'([^']+)'/gm)) {
      const spec = m[1];
      assert.ok(!spec.startsWith('node:'), `${path.basename(file)} imports ${spec}`);
      if (spec.startsWith('.')) visit(path.resolve(path.dirname(file), spec));
      else assert.equal(spec, '@msgpack/msgpack', `${path.basename(file)} imports ${spec}`);
    }
  };
  visit(path.join(JS_ROOT, 'src', 'browser.js'));
  assert.ok(seen.size >= 4, [...seen].join(' '));
  const exportsField = JSON.parse(fs.readFileSync(path.join(JS_ROOT, 'package.json'), 'utf8')).exports;
  assert.equal(exportsField['./browser'].default, './src/browser.js');

  const b = await bridge(server.address);
  const saved = globalThis.WebSocket;
  globalThis.WebSocket = /** @type {any} */ (WebSocket);
  try {
    const client = await browser.connect(b.url);
    const s = await client.open();
    await s.feed('Sandra went to the garden.');
    assert.equal((await s.ask('Where is Sandra?')).answer, 'garden');
    await s.close();
    await client.close();
    await assert.rejects(browser.connect('http://127.0.0.1:1/'), (e) => e instanceof FwmError && e.name === 'client_argument');
  } finally {
    globalThis.WebSocket = saved;
    await b.close();
  }
});

/** Connect over WebSocket to a raw server that answers hello, then sends `reply` to the next request. */
async function rawCase(reply, options = {}) {
  const srv = await wsServer((ws) => {
    ws.on('message', (data) => {
      const msg = /** @type {any[]} */ (decode(/** @type {Buffer} */ (data)));
      if (msg[2] === 'hello') ws.send(encode([1, msg[1], null, { server: 'raw' }]));
      else reply(ws, msg);
    });
  });
  try {
    const client = await connect(srv.url, { WebSocket, ...options });
    let error = null;
    try { await client.stats(); } catch (e) { error = e; }
    assert.equal(client.isClosed, true, 'the connection is closed');
    return error;
  } finally {
    await srv.close();
  }
}

test('WebSocket framing: one binary frame, one message, within maxMessageBytes', async () => {
  const check = (e, pattern) => {
    assert.ok(e instanceof FwmError, String(e));
    assert.equal(e.name, 'bad_response');
    assert.equal(e.code, 103);
    assert.match(e.message, pattern);
  };
  check(await rawCase((ws) => ws.send('hello')), /text frame/);
  check(await rawCase((ws, msg) => ws.send(Buffer.concat([encode([1, msg[1], null, 1]), encode([1, msg[1], null, 2])]))),
    /not exactly one msgpack message/);
  check(await rawCase((ws, msg) => ws.send(encode([1, msg[1], null, 'x'.repeat(100)]).subarray(0, 50))),
    /not exactly one msgpack message/);
  check(await rawCase((ws, msg) => ws.send(encode([1, msg[1], null, 'x'.repeat(5000)])), { maxMessageBytes: 4096 }),
    /over 4096 bytes \(maxMessageBytes\)/);
  check(await rawCase((ws) => ws.send(Buffer.from([0xc1]))), /not exactly one msgpack message/);
  // a frame that is fine, then the server closes: io, with the close code
  const e = await rawCase((ws) => ws.close(4001, 'going away'));
  assert.ok(e instanceof FwmError && e.name === 'io' && /4001: going away/.test(e.message), String(e));
  // an answer split over frames is refused, not reassembled
  check(await rawCase((ws, msg) => {
    const bytes = encode([1, msg[1], null, 'x'.repeat(100)]);
    ws.send(bytes.subarray(0, 20));
    ws.send(bytes.subarray(20));
  }), /not exactly one msgpack message/);
  await assert.rejects(connect('ws://127.0.0.1:1/', { WebSocket, connectTimeoutMs: 5000 }),
    (err) => err instanceof FwmError && err.name === 'connect');
});

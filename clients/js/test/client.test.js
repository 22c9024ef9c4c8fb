// client.test.js - the client's API against a real fwm-serve (the bundled QM model): streaming
// order, ask, fork, snapshot/restore, reset, close, sessions, stats, error codes, pipelining over
// TCP and a Unix socket, close and reconnect; and timeouts against a silent in-test server.

import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import net from 'node:net';
import { connect, FwmError, ERROR_CODES, parseStreamAddress, unknownWords } from '../src/index.js';
import { startServer, missingServer, tokenize } from './harness.js';

const skip = missingServer() || false;
/** @type {Awaited<ReturnType<typeof startServer>>} */
let server;

before(async () => { if (!skip) server = await startServer(); });
after(async () => {
  if (server) {
    const r = await server.stop();
    assert.deepEqual(r, { code: 0, signal: null }, `fwm-serve exit: ${server.stderr()}`);
  }
});

/** Expect `promise` to reject with an FwmError named `name` (and its protocol code). */
async function rejectsWith(promise, name) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof FwmError, `an FwmError, not ${e}`);
    assert.equal(e.name, name, e.message);
    assert.equal(e.code, ERROR_CODES[name]);
    return e;
  }
  assert.fail(`expected ${name}, the call succeeded`);
}

const STORY = 'Mary moved to the bathroom. John went to the hallway.';

test('hello, open, streamed tokens in order, ask, predict', { skip }, async () => {
  const client = await connect(server.address, { timeoutMs: 60000 });
  try {
    assert.equal(client.server.server, 'fwm-serve');
    assert.equal(client.server.protocol, 1);
    const hello = await client.hello();
    assert.equal(hello.models[0].name, 'fwm-catbabi-10k-qm');
    const s = await client.open({ topk: 3 });
    assert.match(s.id, /^[0-9a-f]{32}$/);
    assert.equal(s.info.pos, 1, 'a new session is primed: it has read "<eos>"');
    const events = [];
    const gen = s.stream(STORY);
    let r = await gen.next();
    while (!r.done) { events.push(r.value); r = await gen.next(); }
    const words = tokenize(STORY);
    assert.deepEqual(events.map((e) => e.word), words, 'one event per token, in order');
    assert.deepEqual(events.map((e) => e.pos), words.map((_, i) => i + 2), 'pos counts every token');
    assert.ok(events.every((e) => e.session === s.id && e.topk.length === 3), 'session topk');
    assert.ok(events.every((e) => e.topk[0][1] >= e.topk[1][1] && e.topk[1][1] >= e.topk[2][1]), 'most probable first');
    assert.deepEqual(r.value, { session: s.id, pos: 1 + words.length, fed: words.length, unknown: [] },
      'the result comes last');
    const seen = [];
    const fed = await s.feed('Sandra went to the garden.', { onToken: (e) => seen.push(e.word) });
    assert.deepEqual(seen, ['sandra', 'went', 'to', 'the', 'garden', '.'], 'onToken before the result');
    assert.equal(fed.fed, 6);
    const a = await s.ask('Where is Mary?');
    assert.equal(a.answer, 'bathroom', 'the story says so');
    assert.equal(a.committed, false);
    assert.equal(a.topk.length, 3);
    assert.equal(a.prob, a.topk[0][1]);
    const a1 = await s.ask('Where is Sandra?', { topk: 1, commit: true });
    assert.equal(a1.answer, 'garden');
    assert.equal(a1.topk.length, 1);
    assert.equal(a1.committed, true);
    const p = await s.predict();
    assert.equal(p.pos, a1.pos, 'the committed answer counts');
    const byTokens = await s.feed([1]);  // <eos> by id
    assert.equal(byTokens.pos, p.pos + 1);
  } finally {
    await client.close();
  }
});

test('feed with logprobs: each token\'s log-probability is the log of its probability in the full '
  + 'distribution streamed before it', { skip }, async () => {
  const client = await connect(server.address, { timeoutMs: 60000 });
  try {
    const model = (await client.hello()).models[0];
    assert.equal(model.tokenizer, 'word');
    assert.equal(model.has_unknown_token, false);
    assert.equal(model.logprobs, true);
    const V = model.vocab_size;
    const s = await client.open();
    const dists = [new Map((await s.predict({ topk: V })).topk)];
    const r = await s.feed(STORY, { topk: V, logprobs: true, onToken: (e) => dists.push(new Map(e.topk)) });
    const words = tokenize(STORY);
    assert.equal(r.fed, words.length);
    assert.equal(r.tokens.length, words.length);
    assert.equal(r.logprobs.length, words.length);
    assert.deepEqual(r.unknown, []);
    let worst = 0;
    let compared = 0;
    r.logprobs.forEach((lp, i) => {
      const p = dists[i].get(words[i]);
      assert.ok(p !== undefined, `the distribution before token ${i} has ${words[i]}`);
      if (p > 1e-30) { worst = Math.max(worst, Math.abs(lp - Math.log(p))); compared++; }
    });
    assert.ok(compared >= words.length - 2 && worst < 1e-4, `logprobs against the streamed distributions: ${worst}`);
    const plain = await s.feed('the');
    assert.equal(plain.tokens, undefined, 'no logprobs unless asked');
    const gen = s.stream('Mary', { logprobs: true });
    let step = await gen.next();
    while (!step.done) step = await gen.next();
    assert.equal(step.value.logprobs.length, 1, 'stream: the result carries the logprobs');
  } finally {
    await client.close();
  }
});

test('unknownWords spells UTF-8 byte spans', () => {
  assert.deepEqual(unknownWords('Élise went to the café.', [[0, 6], [19, 5]]), ['Élise', 'café']);
  assert.deepEqual(unknownWords('plain', []), []);
});

test('fork, snapshot/restore, reset, close, sessions, stats', { skip }, async () => {
  const client = await connect(server.address);
  try {
    const s = await client.open({ topk: 2 });
    await s.feed('Mary moved to the bathroom.');
    const traced = await s.trace('Where is Mary?', { memory: true, topk: 2 });
    const [S, R, T, N] = traced.shape;
    assert.deepEqual(traced.steps.map((st) => st.word), ['where', 'is', 'mary', '?']);
    assert.equal(traced.steps[3].reads.length, N);
    assert.equal(traced.steps[3].write.k1.byteLength, 4 * S);
    assert.equal(traced.memory.byteLength, 4 * S * R * T);
    assert.equal(traced.steps[3].topk[0][0], 'bathroom', 'the answer at "?"');
    const f = await s.fork();
    assert.equal(f.info.parent, s.id);
    await f.feed('Mary went to the kitchen.');
    assert.equal((await f.ask('Where is Mary?')).answer, 'kitchen', 'the fork read it');
    assert.equal((await s.ask('Where is Mary?')).answer, 'bathroom', 'the parent did not');
    const before = await s.predict();
    const blob = await s.snapshot();
    assert.ok(blob instanceof Uint8Array);
    assert.equal(blob.byteLength, client.server.models[0].state_blob_bytes);
    const r = await client.restore(blob, { topk: 2 });
    assert.deepEqual(await r.predict(), { session: r.id, pos: before.pos, topk: [] }, 'no prediction yet');
    await s.feed('the');
    await r.feed('the');
    assert.deepEqual(await r.predict(), { ...(await s.predict()), session: r.id }, 'restored continues alike');
    const damaged = blob.slice();
    damaged[damaged.length - 1] ^= 0xff;
    await rejectsWith(client.restore(damaged), 'state_corrupt');
    await rejectsWith(client.restore(blob, { model: 'nope' }), 'unknown_model');
    assert.deepEqual(await f.reset(), { session: f.id, pos: 1 }, 'reset primes again');
    assert.deepEqual(await f.reset({ prime: false }), { session: f.id, pos: 0 }, 'or zeroes');
    assert.deepEqual(await f.predict(), { session: f.id, pos: 0, topk: [] });
    const raw = await client.open({ prime: false, topk: 2 });
    assert.equal(raw.info.pos, 0, 'an unprimed session starts at zero');
    await raw.feed('<eos>');
    const primed = await client.open({ topk: 2 });
    assert.deepEqual(await raw.predict(), { ...(await primed.predict()), session: raw.id }, 'primed = "<eos>" read');
    await raw.close();
    await primed.close();
    const ids = [];
    for await (const item of client.sessions({ page: 1 })) ids.push(item.session);
    for (const id of [s.id, f.id, r.id]) assert.ok(ids.includes(id), `sessions lists ${id}`);
    assert.deepEqual([...ids].sort(), ids, 'in id order');
    const stats = await client.stats();
    assert.equal(stats.sessions, ids.length);
    assert.deepEqual(await f.close(), { session: f.id, closed: true });
    await rejectsWith(f.predict(), 'unknown_session');
    await s.close();
    await r.close();
  } finally {
    await client.close();
  }
});

test('error codes and fields', { skip }, async () => {
  const client = await connect(server.address);
  try {
    const s = await client.open();
    const e = await rejectsWith(s.feed('Mary flew.'), 'unknown_word');
    assert.equal(e.word, 'flew');
    assert.equal(e.code, 5);
    assert.match(e.message, /flew/);
    assert.equal((await s.predict()).pos, 1, 'a refused feed leaves the session untouched');
    await rejectsWith(client.call('open', { topk: -1 }), 'bad_params');
    await rejectsWith(client.call('open', { topkk: 3 }), 'bad_params');
    await rejectsWith(client.call('frobnicate'), 'unknown_method');
    await rejectsWith(client.open({ model: 'no-such-model' }), 'unknown_model');
    await rejectsWith(client.session('0'.repeat(32)).predict(), 'unknown_session');
    await rejectsWith(s.feed([100000]), 'bad_params');
    await rejectsWith(client.restore(new Uint8Array(10)), 'state_corrupt');
    // the client's own checks: nothing is sent
    await rejectsWith(s.feed(/** @type {any} */ (42)), 'client_argument');
    await rejectsWith(client.restore(/** @type {any} */ ('not bytes')), 'client_argument');
    assert.equal((await s.predict()).pos, 1, 'the connection still works');
    await s.close();
  } finally {
    await client.close();
  }
});

test('pipelining: many requests in flight, matched by msgid, tokens to their own feed', { skip }, async () => {
  const texts = ['Mary moved to the bathroom.', 'John went to the hallway.', 'Daniel went back to the garden.',
    'Sandra journeyed to the office.', 'Mary travelled to the kitchen.', 'John moved to the bedroom.'];
  // sequential reference: one request at a time, one session per text
  const seq = await connect(server.address);
  const expected = [];
  for (const t of texts) {
    const s = await seq.open({ topk: 2 });
    const words = [];
    await s.feed(t, { onToken: (e) => words.push([e.word, e.topk]) });
    await s.feed(t, { onToken: (e) => words.push([e.word, e.topk]) });
    expected.push({ words, answer: await s.ask('Where is Mary?') });
    await s.close();
  }
  await seq.close();
  // pipelined: every request of every session sent before any answer is read, over a Unix socket
  const client = await connect(server.unixAddress);
  try {
    const sessions = await Promise.all(texts.map(() => client.open({ topk: 2 })));
    const got = texts.map(() => ({ first: [], second: [] }));
    const requests = [];
    sessions.forEach((s, i) => {
      requests.push(s.feed(texts[i], { onToken: (e) => got[i].first.push([e.word, e.topk]) }));
      requests.push(s.feed(texts[i], { onToken: (e) => got[i].second.push([e.word, e.topk]) }));
      requests.push(s.ask('Where is Mary?'));
    });
    assert.ok(client.pendingCount >= texts.length * 3 - 3, `requests in flight: ${client.pendingCount}`);
    const results = await Promise.all(requests);
    sessions.forEach((s, i) => {
      const words = tokenize(texts[i]);
      assert.deepEqual(got[i].first.map((w) => w[0]), words, `first feed's tokens of session ${i}`);
      assert.deepEqual(got[i].second.map((w) => w[0]), words, `second feed's tokens of session ${i}`);
      assert.deepEqual([...got[i].first, ...got[i].second], expected[i].words, 'the predictions of a sequential run');
      assert.equal(results[i * 3].pos, 1 + words.length);
      assert.equal(results[i * 3 + 1].pos, 1 + 2 * words.length);
      assert.deepEqual(results[i * 3 + 2], { ...expected[i].answer, session: s.id }, 'the answer of a sequential run');
    });
    assert.equal(client.pendingCount, 0);
    await Promise.all(sessions.map((s) => s.close()));
  } finally {
    await client.close();
  }
});

test('close and reconnect: requests in flight fail with io, sessions survive', { skip }, async () => {
  const client = await connect(server.address);
  const s = await client.open();
  await s.feed('Mary moved to the bathroom.');
  const inFlight = s.feed('John went to the hallway.', { onToken: () => {} });
  const closing = client.close();
  await rejectsWith(inFlight, 'io');
  await closing;
  assert.equal(client.isClosed, true);
  await rejectsWith(s.predict(), 'io');
  await client.close();  // twice is fine
  await client.reconnect();
  assert.equal(client.isClosed, false);
  assert.equal((await s.ask('Where is Mary?')).answer, 'bathroom', 'the session lives on the server');
  // another connection, the same session
  const other = await connect(server.unixAddress);
  assert.equal((await other.session(s.id).predict()).pos, (await s.predict()).pos);
  await other.close();
  await s.close();
  await client.close();
  await rejectsWith(connect('tcp://127.0.0.1:1', { connectTimeoutMs: 5000 }), 'connect');
  await rejectsWith(connect(`unix:${server.dir}/no-such.sock`), 'connect');
});

test('addresses', () => {
  assert.deepEqual(parseStreamAddress('tcp://127.0.0.1:7411'), { host: '127.0.0.1', port: 7411 });
  assert.deepEqual(parseStreamAddress('localhost:80'), { host: 'localhost', port: 80 });
  assert.deepEqual(parseStreamAddress('tcp://[::1]:9'), { host: '::1', port: 9 });
  assert.deepEqual(parseStreamAddress('unix:/tmp/x.sock'), { path: '/tmp/x.sock' });
  assert.deepEqual(parseStreamAddress('unix:///tmp/x.sock'), { path: '/tmp/x.sock' });
  for (const bad of ['tcp://host', 'tcp://h:0', 'tcp://h:70000', 'h:1x', 'unix:', ':80']) {
    assert.throws(() => parseStreamAddress(bad), (e) => e instanceof FwmError && e.name === 'client_argument', bad);
  }
});

/** A TCP server that answers hello and then stays silent (or does what `after` says). */
async function fakeServer(onData) {
  const { encode, decodeMulti } = await import('@msgpack/msgpack');
  const sockets = [];
  const srv = net.createServer((sock) => {
    sockets.push(sock);
    sock.on('error', () => {});
    sock.on('data', (data) => {
      for (const m of decodeMulti(data)) {
        const msg = /** @type {any[]} */ (m);
        if (msg[2] === 'hello') sock.write(encode([1, msg[1], null, { server: 'fake', limits: {} }]));
        else if (onData) onData(sock, msg, encode);
      }
    });
  });
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve(undefined)));
  const port = /** @type {net.AddressInfo} */ (srv.address()).port;
  return {
    address: `tcp://127.0.0.1:${port}`,
    close: () => { for (const s of sockets) s.destroy(); return new Promise((r) => srv.close(() => r(undefined))); },
  };
}

test('timeouts: a silent server, a late answer dropped, the connection kept', async () => {
  const held = [];
  const fake = await fakeServer((sock, msg) => held.push([sock, msg]));
  const client = await connect(fake.address, { timeoutMs: 200 });
  try {
    const t0 = Date.now();
    const e = await rejectsWith(client.stats(), 'timeout');
    assert.match(e.message, /stats.*200 ms/);
    assert.ok(Date.now() - t0 >= 190, 'not before the timeout');
    assert.equal(client.pendingCount, 0, 'a timed-out request is forgotten');
    // its late answer is dropped; a request with its own timeout is answered
    const { encode } = await import('@msgpack/msgpack');
    const [sock, first] = held[0];
    const second = client.call('stats', {}, { timeoutMs: 5000 });
    await new Promise((r) => setTimeout(r, 50));
    const [, msg2] = held[1];
    sock.write(encode([1, first[1], null, { late: true }]));
    sock.write(encode([1, msg2[1], null, { ok: true }]));
    assert.deepEqual(await second, { ok: true });
    assert.equal(client.isClosed, false);
  } finally {
    await client.close();
    await fake.close();
  }
});

test('the server refusing the connection: the error notification fails what is in flight', async () => {
  const fake = await fakeServer((sock, msg, encode) => {
    sock.end(encode([2, 'error', [{ code: 8, name: 'overloaded', message: 'too many connections' }]]));
  });
  const client = await connect(fake.address);
  const e = await rejectsWith(client.stats(), 'overloaded');
  assert.match(e.message, /too many connections/);
  await client.closed;
  assert.equal(client.isClosed, true);
  await fake.close();
});

test('a server that sends garbage or a non-RPC message fails the connection with bad_response', async () => {
  for (const bytes of [[0xc1], [0x93, 0x05, 0x05, 0x05], [0xa3, 0x61, 0x62, 0x63]]) {
    const fake = await fakeServer((sock) => sock.write(Buffer.from(bytes)));
    const client = await connect(fake.address);
    await rejectsWith(client.stats(), 'bad_response');
    assert.equal(client.isClosed, true);
    await fake.close();
  }
});

test('options are checked', async () => {
  await rejectsWith(connect('tcp://127.0.0.1:1', { timeoutMs: -1 }), 'client_argument');
  await rejectsWith(connect('tcp://127.0.0.1:1', { maxMessageBytes: 'big' }), 'client_argument');
});

test('msgid wraps at 2^32-1 to 1; a throwing onToken fails its own request only; maxPending', { skip }, async () => {
  const client = await connect(server.address, { maxPending: 3 });
  try {
    const s = await client.open();
    client._nextId = 0xffffffff;
    const [a, b] = await Promise.all([s.predict(), s.feed('<eos>')]);
    assert.equal(a.pos, 1);
    assert.equal(b.pos, 2);
    assert.equal(client._nextId, 2, 'the msgid after 0xffffffff is 1');
    const e = await rejectsWith(s.feed('Mary moved to the bathroom.', { onToken: () => { throw new Error('boom'); } }),
      'client_argument');
    assert.match(e.message, /onToken callback threw: Error: boom/);
    assert.equal((await s.predict()).pos, 8, 'the feed ran; the connection goes on');
    const inFlight = [s.predict(), s.predict(), s.predict()];
    await rejectsWith(s.predict(), 'client_argument');
    await Promise.all(inFlight);
    await s.close();
  } finally {
    await client.close();
  }
  await rejectsWith(connect(server.address, { maxSendBufferBytes: 10 }), 'client_argument');
});

test('a streaming feed that timed out keeps its place: its late tokens do not reach the next feed', async () => {
  /** @type {any[]} */
  const feeds = [];
  const fake = await fakeServer((sock, msg) => feeds.push([sock, msg]));
  const client = await connect(fake.address);
  try {
    const first = [];
    const second = [];
    const p1 = client.call('feed', { session: 'a', text: 'x' }, { onToken: (t) => first.push(t.word), timeoutMs: 100 });
    const p2 = client.call('feed', { session: 'a', text: 'y' }, { onToken: (t) => second.push(t.word), timeoutMs: 5000 });
    await rejectsWith(p1, 'timeout');
    const { encode } = await import('@msgpack/msgpack');
    const [sock, m1] = feeds[0];
    const [, m2] = feeds[1];
    const token = (word) => encode([2, 'token', [{ session: 'a', pos: 1, token: 1, word, topk: [] }]]);
    sock.write(token('late'));
    sock.write(encode([1, m1[1], null, { fed: 1 }]));
    sock.write(token('mine'));
    sock.write(encode([1, m2[1], null, { fed: 1 }]));
    assert.deepEqual(await p2, { fed: 1 });
    assert.deepEqual(first, [], 'nothing after the timeout');
    assert.deepEqual(second, ['mine'], 'only its own tokens');
    assert.equal(client.pendingCount, 0);
  } finally {
    await client.close();
    await fake.close();
  }
});

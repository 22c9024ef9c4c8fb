// limits.test.js - authentication and the byte limits, against a real fwm-serve: the token (given,
// wrong, missing, from $FWM_AUTH_TOKEN), a request over the server's max_message_bytes refused by
// the client before it is sent, the server's own protocol error when it refuses a stream, and an
// answer over the client's maxMessageBytes (real and from an in-test server that never ends one).

import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { encode, decodeMulti } from '@msgpack/msgpack';
import { connect, FwmError } from '../src/index.js';
import { startServer, missingServer } from './harness.js';

const skip = missingServer() || false;
const servers = [];
after(async () => {
  for (const s of servers) assert.equal((await s.stop()).code, 0, s.stderr());
});

async function rejectsWith(promise, name, pattern) {
  try {
    await promise;
  } catch (e) {
    assert.ok(e instanceof FwmError, `an FwmError, not ${e}`);
    assert.equal(e.name, name, e.message);
    if (pattern) assert.match(e.message, pattern);
    return e;
  }
  assert.fail(`expected ${name}, the call succeeded`);
}

test('auth token: given, wrong, missing, from FWM_AUTH_TOKEN', { skip }, async () => {
  const first = await startServer();
  servers.push(first);
  const tokenFile = path.join(first.dir, 'token');
  fs.writeFileSync(tokenFile, 'sesame-0123456789abcdef\n');
  const server = await startServer({ flags: ['--auth-token-file', tokenFile] });
  servers.push(server);

  const good = await connect(server.address, { token: 'sesame-0123456789abcdef' });
  assert.equal(good.server.authenticated, true);
  const s = await good.open();
  await s.feed('Mary moved to the bathroom.');
  assert.equal((await s.ask('Where is Mary?')).answer, 'bathroom');

  const saved = process.env.FWM_AUTH_TOKEN;
  delete process.env.FWM_AUTH_TOKEN;
  try {
    const anon = await connect(server.address);
    assert.equal(anon.server.auth_required, true);
    assert.equal(anon.server.authenticated, false);
    assert.equal(anon.server.limits, undefined, 'hello without the token tells little');
    const e = await rejectsWith(anon.session(s.id).predict(), 'unauthorized');
    assert.equal(e.code, 16);
    await rejectsWith(anon.open(), 'unauthorized');
    await anon.close();

    await rejectsWith(connect(server.address, { token: 'wrong' }), 'unauthorized');

    process.env.FWM_AUTH_TOKEN = 'sesame-0123456789abcdef';
    const fromEnv = await connect(server.unixAddress);
    assert.equal(fromEnv.server.authenticated, true, 'the token from $FWM_AUTH_TOKEN');
    assert.equal((await fromEnv.session(s.id).predict()).pos, 7 + 4);
    await fromEnv.close();
  } finally {
    if (saved === undefined) delete process.env.FWM_AUTH_TOKEN;
    else process.env.FWM_AUTH_TOKEN = saved;
  }
  await s.close();
  await good.close();
});

test('oversize requests: refused by the client before sending, or by the server with protocol', { skip }, async () => {
  const server = await startServer({ flags: ['--max-message-bytes', '65536', '--max-string-bytes', '2048'] });
  servers.push(server);
  const client = await connect(server.address);
  assert.equal(client.server.limits.max_message_bytes, 65536);
  assert.equal(client.sendLimit, 65536, "the server's limit, learnt from hello");
  const s = await client.open();
  const big = 'mary '.repeat(20000);
  await rejectsWith(s.feed(big), 'client_argument', /over the limit of 65536 bytes/);
  await rejectsWith(client.restore(new Uint8Array(70000)), 'client_argument', /65536/);
  assert.equal((await s.feed('mary')).pos, 2, 'nothing was sent: the connection goes on (primed, then mary)');

  // a string over the server's --max-string-bytes (which hello does not tell): the server sends the
  // protocol error notification and closes; what is in flight fails with it
  const inFlight = s.predict();
  const e = await rejectsWith(s.feed('mary '.repeat(1000)), 'protocol', /2048/);
  assert.equal(e.code, 14);
  await inFlight.catch(() => {});  // answered before the refusal (or failed with it)
  await client.closed;
  assert.equal(client.isClosed, true);
  await client.reconnect();
  assert.equal((await s.predict()).pos, 2, 'reconnected, the session is there');
  await s.close();
  await client.close();
});

test('oversize answers: over the client maxMessageBytes fails the connection with bad_response', { skip }, async () => {
  const server = await startServer();
  servers.push(server);
  const client = await connect(server.address, { maxMessageBytes: 100000 });
  const s = await client.open();
  // a state blob is 133,168 bytes with this model
  await rejectsWith(s.snapshot(), 'bad_response', /maxMessageBytes/);
  assert.equal(client.isClosed, true);
  await client.reconnect();  // a reconnection keeps the options
  await rejectsWith(s.snapshot(), 'bad_response', /maxMessageBytes/);
  const roomy = await connect(server.address);
  const blob = await roomy.session(s.id).snapshot();
  assert.equal(blob.byteLength, roomy.server.models[0].state_blob_bytes);
  await roomy.session(s.id).close();
  await roomy.close();
});

test('many answers near maxMessageBytes, pipelined: every one arrives whole', { skip }, async () => {
  const server = await startServer();
  servers.push(server);
  // 30 state blobs of 133,168 bytes pipelined (4 MB), each just under the client's limit
  const client = await connect(server.address, { maxMessageBytes: 140000 });
  const s = await client.open();
  await s.feed('Mary moved to the bathroom.');
  const blobs = await Promise.all(Array.from({ length: 30 }, () => s.snapshot()));
  assert.ok(blobs.every((b) => b.byteLength === 133168 && Buffer.compare(b, blobs[0]) === 0));
  assert.equal(client.isClosed, false);
  await s.close();
  await client.close();
});

test('an answer that never ends is refused after maxMessageBytes, not buffered without bound', async () => {
  let received = 0;
  const srv = net.createServer((sock) => {
    sock.on('error', () => {});
    sock.on('data', (data) => {
      for (const m of decodeMulti(data)) {
        const msg = /** @type {any[]} */ (m);
        if (msg[2] === 'hello') {
          sock.write(encode([1, msg[1], null, { server: 'fake' }]));
          continue;
        }
        // [1, msgid, nil, [float64 x 100000 ...]]: declared within the limit, but 900 kB long
        const head = Buffer.from([0x94, 0xce, 0, 0, 0, 0, 0xc0, 0xdd, 0, 1, 0x86, 0xa0]);
        head.writeUInt32BE(msg[1], 2);
        sock.write(head);
        const chunk = Buffer.alloc(9 * 1000);
        for (let i = 0; i < 1000; i++) chunk[9 * i] = 0xcb;
        let n = 0;
        const pump = () => {
          while (n < 100 && sock.writable) {
            n++;
            received += chunk.length;
            if (!sock.write(chunk)) { sock.once('drain', pump); return; }
          }
        };
        pump();
      }
    });
  });
  await new Promise((resolve) => srv.listen(0, '127.0.0.1', () => resolve(undefined)));
  const port = /** @type {net.AddressInfo} */ (srv.address()).port;
  const client = await connect(`tcp://127.0.0.1:${port}`, { maxMessageBytes: 200000, timeoutMs: 20000 });
  await rejectsWith(client.stats(), 'bad_response', /over 200000 bytes \(maxMessageBytes\): \d+ bytes arrived and it is not complete/);
  assert.equal(client.isClosed, true);
  assert.ok(received > 200000, `the server sent ${received} bytes`);
  await new Promise((resolve) => srv.close(() => resolve(undefined)));
});

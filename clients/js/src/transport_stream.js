// transport_stream.js - the Node transport over a TCP or Unix stream socket (node:net): messages
// are written back to back, and the incoming byte stream is cut into messages by the incremental
// decoder of @msgpack/msgpack (decodeMultiStream). What a message may take is bounded in bytes:
// the decoder refuses a string, bin, array or map declared larger than maxMessageBytes as soon as
// its header arrives, and a message still incomplete after maxMessageBytes have arrived fails the
// connection (`bad_response`), so a broken or hostile server costs at most that much memory.

import net from 'node:net';
import { decodeMultiStream } from '@msgpack/msgpack';
import { FwmError } from './errors.js';

/**
 * The chunks read from the socket, as the async iterable the decoder reads; counts the bytes
 * that arrived since the decoder last completed a message.
 */
class ChunkQueue {
  /**
   * @param {number} maxMessageBytes
   * @param {(paused: boolean) => void} pause
   */
  constructor(maxMessageBytes, pause) {
    this.maxMessageBytes = maxMessageBytes;
    this.pause = pause;
    /** @type {Uint8Array[]} */
    this.chunks = [];
    this.queuedBytes = 0;
    this.sinceMessage = 0;
    this.ended = false;
    /** @type {((r: IteratorResult<Uint8Array>) => void) | null} */
    this.waiter = null;
  }

  /** @param {Uint8Array} chunk */
  push(chunk) {
    this.chunks.push(chunk);
    this.queuedBytes += chunk.byteLength;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w(this.take());
    } else if (this.queuedBytes > this.maxMessageBytes) {
      this.pause(true);  // read no more until the decoder has caught up
    }
  }

  end() {
    this.ended = true;
    if (this.waiter) {
      const w = this.waiter;
      this.waiter = null;
      w({ done: true, value: undefined });
    }
  }

  /** @returns {IteratorResult<Uint8Array>} */
  take() {
    const chunk = /** @type {Uint8Array} */ (this.chunks.shift());
    this.queuedBytes -= chunk.byteLength;
    this.sinceMessage += chunk.byteLength;
    if (this.queuedBytes <= this.maxMessageBytes) this.pause(false);
    return { done: false, value: chunk };
  }

  [Symbol.asyncIterator]() {
    return {
      /** @returns {Promise<IteratorResult<Uint8Array>>} */
      next: () => {
        // The decoder asks for the next chunk once it has taken every message the last one completed.
        if (this.sinceMessage > this.maxMessageBytes) {
          return Promise.reject(new FwmError('bad_response', `a message from the server is over ` +
            `${this.maxMessageBytes} bytes (maxMessageBytes): ${this.sinceMessage} bytes arrived and it is not complete`));
        }
        if (this.chunks.length) return Promise.resolve(this.take());
        if (this.ended) return Promise.resolve({ done: true, value: undefined });
        return new Promise((resolve) => {
          this.waiter = (r) => resolve(r);
        });
      },
    };
  }
}

/**
 * Parse "tcp://host:port", "host:port", "unix:/path" or "unix:///path".
 * @param {string} address
 * @returns {{path: string} | {host: string, port: number}}
 */
export function parseStreamAddress(address) {
  if (address.startsWith('unix:')) {
    const path = address.startsWith('unix://') ? address.slice('unix://'.length) : address.slice('unix:'.length);
    if (!path) throw new FwmError('client_argument', `no socket path in ${JSON.stringify(address)}`);
    return { path };
  }
  const rest = address.startsWith('tcp://') ? address.slice('tcp://'.length) : address;
  const colon = rest.lastIndexOf(':');
  const host = colon > 0 ? rest.slice(0, colon).replace(/^\[|\]$/g, '') : '';
  const port = Number(rest.slice(colon + 1));
  if (!host || !Number.isInteger(port) || port < 1 || port > 65535 || !/^\d+$/.test(rest.slice(colon + 1))) {
    throw new FwmError('client_argument', `not an address: ${JSON.stringify(address)} ` +
      '(tcp://HOST:PORT, HOST:PORT, unix:PATH, ws://... or wss://...)');
  }
  return { host, port };
}

/**
 * A transport opener for a TCP or Unix socket address.
 * @param {string} address
 * @param {{connectTimeoutMs: number, maxMessageBytes: number}} options
 * @returns {import('./client.js').TransportOpener}
 */
export function streamTransport(address, options) {
  const target = parseStreamAddress(address);
  return (handlers) => new Promise((resolve, reject) => {
    const socket = 'path' in target ? net.connect({ path: target.path }) : net.connect({ host: target.host, port: target.port });
    let open = false;
    let done = false;
    /** @type {FwmError | null} */
    let failure = null;
    const timer = options.connectTimeoutMs > 0 ? setTimeout(() => {
      socket.destroy(new FwmError('connect', `cannot connect to ${address} within ${options.connectTimeoutMs} ms`));
    }, options.connectTimeoutMs) : undefined;

    const chunks = new ChunkQueue(options.maxMessageBytes, (paused) => {
      if (paused && !socket.isPaused()) socket.pause();
      else if (!paused && socket.isPaused() && !done) socket.resume();
    });
    const max = options.maxMessageBytes;

    /** @param {FwmError | null} error */
    const finish = (error) => {
      if (done) return;
      done = true;
      socket.destroy();
      chunks.end();
      if (open) handlers.close(error);
    };

    socket.on('connect', () => {
      if (timer) clearTimeout(timer);
      open = true;
      socket.setNoDelay(true);
      resolve({
        send: (bytes) => { if (!done) socket.write(bytes); },
        bufferedBytes: () => socket.writableLength,
        close: () => finish(null),
      });
      (async () => {
        try {
          const messages = decodeMultiStream(chunks, {
            maxStrLength: max, maxBinLength: max, maxArrayLength: max, maxMapLength: max, maxExtLength: max,
          });
          for await (const message of messages) {
            chunks.sinceMessage = 0;
            if (done) return;
            handlers.message(message);
          }
          if (chunks.sinceMessage > 0 && !done) {
            failure = new FwmError('bad_response', 'the server closed the connection inside a message');
          }
        } catch (e) {
          if (!done) {
            const why = /** @type {Error} */ (e).message;
            failure = e instanceof FwmError ? e
              : /Max length exceeded/.test(why)
                ? new FwmError('bad_response', `a message from the server is over ${max} bytes (maxMessageBytes): ${why}`)
                : new FwmError('bad_response', `the server sent bytes that are not msgpack: ${why}`);
            finish(failure);
          }
          return;
        }
        finish(failure || new FwmError('io', 'the server closed the connection'));
      })();
    });
    socket.on('data', (data) => chunks.push(data));
    socket.on('end', () => chunks.end());
    socket.on('error', (e) => {
      if (!open) {
        if (timer) clearTimeout(timer);
        done = true;
        reject(e instanceof FwmError ? e : new FwmError('connect', `cannot connect to ${address}: ${e.message}`));
        return;
      }
      failure = failure || new FwmError('io', `the connection to ${address} failed: ${e.message}`);
    });
    socket.on('close', () => {
      chunks.end();
      if (!open) return;
      // the decoder finishes what was read, then reports the end (finish is idempotent)
      if (failure) finish(failure);
    });
  });
}

// transport_websocket.js - the WebSocket transport (the standard WebSocket API, so it runs in a
// browser; in Node, pass a compatible constructor such as the `ws` package's). fwm-serve's
// WebSocket endpoint carries msgpack-RPC in binary frames, one message per frame: each frame is
// decoded whole with @msgpack/msgpack, and a text frame, a frame over maxMessageBytes or a frame
// that is not exactly one msgpack message fails the connection (`bad_response`).
// This file imports nothing from Node.

import { Decoder } from '@msgpack/msgpack';
import { FwmError } from './errors.js';

/**
 * A transport opener for a ws:// or wss:// URL.
 * @param {string} url
 * @param {{connectTimeoutMs: number, maxMessageBytes: number, WebSocket?: any, protocols?: string | string[]}} options
 * @returns {import('./client.js').TransportOpener}
 */
export function webSocketTransport(url, options) {
  const WebSocketImpl = options.WebSocket || globalThis.WebSocket;
  if (typeof WebSocketImpl !== 'function') {
    throw new FwmError('client_argument', 'no WebSocket implementation: this runtime has no global WebSocket; ' +
      'pass one as the WebSocket option (in Node, the `ws` package\'s WebSocket)');
  }
  if (!/^wss?:\/\//.test(url)) {
    throw new FwmError('client_argument', `not a WebSocket URL: ${JSON.stringify(url)} (ws://HOST:PORT/PATH or wss://...)`);
  }
  const max = options.maxMessageBytes;
  const decoder = new Decoder({ maxStrLength: max, maxBinLength: max, maxArrayLength: max, maxMapLength: max,
    maxExtLength: max });
  return (handlers) => new Promise((resolve, reject) => {
    /** @type {any} */
    let ws;
    try {
      ws = options.protocols === undefined ? new WebSocketImpl(url) : new WebSocketImpl(url, options.protocols);
    } catch (e) {
      reject(new FwmError('connect', `cannot connect to ${url}: ${/** @type {Error} */ (e).message}`));
      return;
    }
    ws.binaryType = 'arraybuffer';
    let open = false;
    let done = false;
    const timer = options.connectTimeoutMs > 0 ? setTimeout(() => {
      if (open || done) return;
      done = true;
      ws.close();
      reject(new FwmError('connect', `cannot connect to ${url} within ${options.connectTimeoutMs} ms`));
    }, options.connectTimeoutMs) : undefined;

    /** @param {FwmError | null} error */
    const finish = (error) => {
      if (done) return;
      done = true;
      try { ws.close(1000); } catch { /* already closing */ }
      handlers.close(error);
    };

    ws.onopen = () => {
      if (done) return;
      if (timer) clearTimeout(timer);
      open = true;
      resolve({
        send: (bytes) => { if (!done) ws.send(bytes); },
        bufferedBytes: () => ws.bufferedAmount || 0,
        close: () => finish(null),
      });
    };
    ws.onerror = () => {
      if (!open && !done) {
        if (timer) clearTimeout(timer);
        done = true;
        reject(new FwmError('connect', `cannot connect to ${url}`));
      }
      // once open, the close event that follows reports it
    };
    ws.onclose = (/** @type {{code: number, reason: string}} */ event) => {
      if (!open) {
        if (!done) {
          if (timer) clearTimeout(timer);
          done = true;
          reject(new FwmError('connect', `cannot connect to ${url} (closed with code ${event.code})`));
        }
        return;
      }
      finish(new FwmError('io', `the server closed the connection (WebSocket close code ${event.code}` +
        `${event.reason ? ': ' + event.reason : ''})`));
    };
    ws.onmessage = (/** @type {{data: unknown}} */ event) => {
      if (done) return;
      const data = event.data;
      if (typeof data === 'string') {
        finish(new FwmError('bad_response', 'the server sent a text frame; msgpack-RPC travels in binary frames'));
        return;
      }
      /** @type {Uint8Array} */
      let bytes;
      if (data instanceof ArrayBuffer) bytes = new Uint8Array(data);
      else if (ArrayBuffer.isView(data)) bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
      else {
        finish(new FwmError('bad_response', 'the server sent a frame that is not binary data'));
        return;
      }
      if (bytes.byteLength > max) {
        finish(new FwmError('bad_response', `a frame from the server is ${bytes.byteLength} bytes, over ` +
          `${max} bytes (maxMessageBytes)`));
        return;
      }
      let message;
      try {
        message = decoder.decode(bytes);
      } catch (e) {
        finish(new FwmError('bad_response', 'a frame from the server is not exactly one msgpack message: ' +
          `${/** @type {Error} */ (e).message}`));
        return;
      }
      handlers.message(message);
    };
  });
}

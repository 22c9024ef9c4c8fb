// client.js - the transport-independent core of the fwm-serve client (its sessions: session.js):
// msgpack-RPC requests with msgid matching (many in flight on one connection), `token`
// notifications routed to the feed that asked for them, timeouts, byte limits on what is sent, and
// close/reconnect. The transports (transport_stream.js for TCP and Unix sockets in Node,
// transport_websocket.js for WebSocket) deliver decoded messages and take encoded ones;
// docs/PROTOCOL.md is the specification.

import { encode } from '@msgpack/msgpack';
import { FwmError } from './errors.js';
import { Session } from './session.js';

/** The defaults of every option of connect(). */
export const DEFAULTS = Object.freeze({
  timeoutMs: 30000,
  connectTimeoutMs: 10000,
  maxMessageBytes: 64 << 20,
  maxSendBytes: 4 << 20,
  maxSendBufferBytes: 16 << 20,
  maxPending: 65536,
});

const MSGID_MAX = 0xffffffff;

/**
 * @typedef {object} Transport  what a transport gives the client
 * @property {(bytes: Uint8Array) => void} send  send one encoded message
 * @property {() => number} bufferedBytes  bytes handed to send() and not yet written out
 * @property {() => void} close  close the connection (the transport then calls handlers.close)
 *
 * @typedef {object} TransportHandlers  what the client gives a transport
 * @property {(message: unknown) => void} message  one decoded msgpack message
 * @property {(error: FwmError | null) => void} close  the connection is gone (null: closed by us)
 *
 * @typedef {(handlers: TransportHandlers) => Promise<Transport>} TransportOpener
 */

/**
 * @typedef {object} Pending  one request waiting for its response
 * @property {number} msgid
 * @property {string} method
 * @property {(result: any) => void} resolve
 * @property {(error: FwmError) => void} reject
 * @property {((event: any) => void) | undefined} onToken
 * @property {string | undefined} tokensOf  the session whose `token` notifications belong to it
 * @property {number} timeoutMs
 * @property {ReturnType<typeof setTimeout> | undefined} timer
 * @property {boolean} abandoned  it timed out; kept only to absorb its tokens and response
 */

/** Drop the arguments left undefined or null (the server refuses unknown or nil ones). */
function cleanParams(params) {
  /** @type {Record<string, unknown>} */
  const out = {};
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null) out[k] = v;
  }
  return out;
}

/** One connection to fwm-serve. Use connect() from 'fwm-client' or 'fwm-client/browser'. */
export class Client {
  /**
   * @param {string} address
   * @param {TransportOpener} opener
   * @param {Record<string, any>} options
   */
  constructor(address, opener, options = {}) {
    this.address = address;
    this._opener = opener;
    this.options = /** @type {Record<string, any>} */ ({ ...DEFAULTS, ...options });
    for (const k of ['timeoutMs', 'connectTimeoutMs', 'maxMessageBytes', 'maxSendBytes', 'maxSendBufferBytes',
      'maxPending']) {
      const v = this.options[k];
      if (typeof v !== 'number' || !(v >= 0)) {
        throw new FwmError('client_argument', `option ${k} must be a number >= 0, not ${String(v)}`);
      }
    }
    /** The server's hello reply, from the last (re)connection. */
    this.server = /** @type {Record<string, any> | null} */ (null);
    /** @type {Transport | null} */
    this._transport = null;
    this._nextId = 1;
    /** @type {Map<number, Pending>} */
    this._pending = new Map();
    /** @type {Map<string, Pending[]>} feeds waiting for their tokens, per session, in request order */
    this._streams = new Map();
    this._closedError = /** @type {FwmError | null} */ (new FwmError('io', 'the connection is not open'));
    this._closedPromise = Promise.resolve();
    this._resolveClosed = /** @type {(value?: any) => void} */ (() => {});
  }

  /** Open the connection and say hello (with the token, if there is one). */
  async _open() {
    this._closedError = null;
    this._closedPromise = new Promise((resolve) => { this._resolveClosed = resolve; });
    /** @type {Transport} */
    let transport;
    try {
      transport = await this._opener({
        message: (m) => this._onMessage(m),
        close: (e) => this._onClose(e),
      });
    } catch (e) {
      this._onClose(e instanceof FwmError ? e : new FwmError('connect', `cannot connect to ${this.address}: ${e}`));
      throw this._closedError;
    }
    if (this._closedError) {  // closed while the opener ran
      transport.close();
      throw this._closedError;
    }
    this._transport = transport;
    const token = this.options.token;
    try {
      this.server = await this.call('hello', token ? { token } : {});
    } catch (e) {
      this._onClose(null);  // a wrong token, or a server that refused the connection
      throw e;
    }
    const limit = this.server && this.server.limits && this.server.limits.max_message_bytes;
    this._serverMaxMessageBytes = typeof limit === 'number' ? limit : undefined;
    return this;
  }

  /** True once the connection is closed (by either side). */
  get isClosed() { return this._closedError !== null; }

  /** Settles when the connection is closed (by either side); never rejects. */
  get closed() { return this._closedPromise; }

  /** Requests sent and not yet answered (timed-out ones included until their response comes). */
  get pendingCount() { return this._pending.size; }

  /** Close the connection: requests not yet answered fail with `io`. Sessions stay on the server. */
  async close() {
    if (!this._closedError) {
      this._onClose(null);
    }
    await this._closedPromise;
  }

  /** Close (if open) and connect again to the same address; Session objects keep working. */
  async reconnect() {
    await this.close();
    await this._open();
    return this;
  }

  /** The limit a request must fit in: the option, and the server's max_message_bytes from hello. */
  get sendLimit() {
    const own = this.options.maxSendBytes;
    const server = this._serverMaxMessageBytes;
    return server === undefined ? own : Math.min(own, server);
  }

  _allocId() {
    for (;;) {
      const id = this._nextId;
      this._nextId = id >= MSGID_MAX ? 1 : id + 1;
      if (!this._pending.has(id)) return id;
    }
  }

  /**
   * Send one request; resolves with its result, rejects with an FwmError. `onToken` sees each
   * `token` notification of a feed, in order, before the promise resolves.
   * @param {string} method
   * @param {Record<string, unknown>} [params]
   * @param {{onToken?: (event: any) => void, timeoutMs?: number}} [options]
   */
  call(method, params = {}, options = {}) {
    return new Promise((resolve, reject) => {
      if (this._closedError) {
        reject(new FwmError('io', `the connection is closed: ${this._closedError.message}`));
        return;
      }
      if (typeof method !== 'string' || method === '') {
        reject(new FwmError('client_argument', 'method must be a non-empty string'));
        return;
      }
      if (this._pending.size >= this.options.maxPending) {
        reject(new FwmError('client_argument',
          `${this._pending.size} requests are in flight, the limit (maxPending) is ${this.options.maxPending}`));
        return;
      }
      const p = cleanParams(params);
      const msgid = this._allocId();
      let bytes;
      try {
        bytes = encode([0, msgid, method, [p]]);
      } catch (e) {
        reject(new FwmError('client_argument', `cannot encode the ${method} request: ${e}`));
        return;
      }
      if (bytes.byteLength > this.sendLimit) {
        reject(new FwmError('client_argument', `the ${method} request is ${bytes.byteLength} bytes, over the ` +
          `limit of ${this.sendLimit} bytes (maxSendBytes, and the server's max_message_bytes)`));
        return;
      }
      const transport = this._transport;
      if (!transport) {
        reject(new FwmError('io', 'the connection is still being opened (await connect() or reconnect())'));
        return;
      }
      const buffered = transport.bufferedBytes();
      if (buffered + bytes.byteLength > this.options.maxSendBufferBytes) {
        reject(new FwmError('client_argument', `the send buffer holds ${buffered} bytes not yet written; the ` +
          `${method} request (${bytes.byteLength} bytes) would take it over maxSendBufferBytes ` +
          `(${this.options.maxSendBufferBytes}); wait for answers before sending more`));
        return;
      }
      const wantsTokens = method === 'feed' && p.notify !== false && typeof p.session === 'string';
      /** @type {Pending} */
      const pending = {
        msgid, method, resolve, reject,
        onToken: options.onToken,
        tokensOf: wantsTokens ? /** @type {string} */ (p.session) : undefined,
        timeoutMs: options.timeoutMs ?? this.options.timeoutMs,
        timer: undefined,
        abandoned: false,
      };
      this._pending.set(msgid, pending);
      if (pending.tokensOf !== undefined) {
        const queue = this._streams.get(pending.tokensOf);
        if (queue) queue.push(pending);
        else this._streams.set(pending.tokensOf, [pending]);
      }
      this._arm(pending);
      transport.send(bytes);
    });
  }

  /**
   * Send a request as a notification: executed by the server, never answered (errors included).
   * @param {string} method
   * @param {Record<string, unknown>} [params]
   */
  notify(method, params = {}) {
    if (this._closedError) throw new FwmError('io', `the connection is closed: ${this._closedError.message}`);
    const bytes = encode([2, method, [cleanParams(params)]]);
    if (bytes.byteLength > this.sendLimit) {
      throw new FwmError('client_argument', `the ${method} notification is ${bytes.byteLength} bytes, over the ` +
        `limit of ${this.sendLimit} bytes`);
    }
    /** @type {Transport} */ (this._transport).send(bytes);
  }

  /** (Re)start a request's timer: it runs from the request, and again from each of its tokens. */
  _arm(pending) {
    if (pending.timer !== undefined) clearTimeout(pending.timer);
    pending.timer = undefined;
    if (pending.timeoutMs > 0 && !pending.abandoned) {
      pending.timer = setTimeout(() => this._timeout(pending), pending.timeoutMs);
    }
  }

  _timeout(pending) {
    pending.timer = undefined;
    pending.abandoned = true;
    // A feed that streams keeps its place until its response comes, so that its late tokens are
    // not taken for those of the next feed on the session; any other request is forgotten.
    if (pending.tokensOf === undefined) this._pending.delete(pending.msgid);
    pending.reject(new FwmError('timeout', `no answer to ${pending.method} within ${pending.timeoutMs} ms`));
  }

  _finish(pending) {
    if (pending.timer !== undefined) clearTimeout(pending.timer);
    pending.timer = undefined;
    this._pending.delete(pending.msgid);
    if (pending.tokensOf !== undefined) {
      const queue = this._streams.get(pending.tokensOf);
      if (queue) {
        const i = queue.indexOf(pending);
        if (i >= 0) queue.splice(i, 1);
        if (queue.length === 0) this._streams.delete(pending.tokensOf);
      }
    }
  }

  /** Fail the connection: a broken message from the server. */
  _broken(why) {
    const error = new FwmError('bad_response', why);
    this._onClose(error);
  }

  _onMessage(message) {
    if (this._closedError) return;
    if (!Array.isArray(message) || message.length === 0) {
      this._broken(`a message from the server is not a msgpack-RPC array: ${JSON.stringify(message)}`);
      return;
    }
    if (message[0] === 1 && message.length === 4) {
      const pending = this._pending.get(message[1]);
      if (!pending) {
        // a late answer to a request that timed out, or an invalid_request with a nil msgid (this
        // client sends none that would earn one): handed to the onNotification hook, if any
        this._hook('response', message);
        return;
      }
      this._finish(pending);
      if (pending.abandoned) return;
      if (message[2] !== null && message[2] !== undefined) pending.reject(FwmError.fromWire(message[2]));
      else pending.resolve(message[3]);
      return;
    }
    if (message[0] === 2 && message.length === 3 && typeof message[1] === 'string') {
      const params = Array.isArray(message[2]) ? message[2][0] : undefined;
      if (message[1] === 'token' && params && typeof params.session === 'string') {
        const queue = this._streams.get(params.session);
        if (queue && queue.length > 0) {
          const pending = queue[0];
          if (pending.abandoned) return;
          this._arm(pending);
          if (pending.onToken) {
            try {
              pending.onToken(params);
            } catch (e) {
              // an exception of the callback fails its request, not the connection
              pending.abandoned = true;
              pending.reject(e instanceof FwmError ? e : new FwmError('client_argument',
                `the onToken callback threw: ${e}`, { cause: e }));
            }
          }
          return;
        }
      } else if (message[1] === 'error') {
        // the server refuses the connection (protocol, overloaded) and closes it after this
        this._onClose(FwmError.fromWire(params));
        return;
      }
      this._hook(message[1], message[2]);
      return;
    }
    this._broken(`a message from the server is neither a response nor a notification: ${JSON.stringify(message)}`);
  }

  _hook(kind, value) {
    const hook = this.options.onNotification;
    if (typeof hook === 'function') hook(kind, value);
  }

  /** The connection is gone: every request in flight fails with `error` (io when none). */
  _onClose(error) {
    if (this._closedError) return;
    this._closedError = error || new FwmError('io', 'the connection was closed by the client');
    const failure = error || this._closedError;
    const transport = this._transport;
    this._transport = null;
    const pending = [...this._pending.values()];
    this._pending.clear();
    this._streams.clear();
    for (const p of pending) {
      if (p.timer !== undefined) clearTimeout(p.timer);
      if (!p.abandoned) p.reject(failure);
    }
    if (transport) transport.close();
    this._resolveClosed();
  }

  // -- methods (docs/PROTOCOL.md) --

  /** The server's description: version, models, limits (and whether this connection is authenticated). */
  hello() { return this.call('hello'); }

  /** The server's counters. */
  stats() { return this.call('stats'); }

  /**
   * Open a session, primed as the model says (the bundled models' sessions have read "<eos>", as
   * every training story begins); `prime: false` starts from the zero state.
   * @param {{model?: string, topk?: number, prime?: boolean}} [options]
   */
  async open(options = {}) {
    const r = await this.call('open', {
      model: options.model, topk: options.topk, prime: options.prime === false ? false : undefined,
    });
    return new Session(this, r.session, r);
  }

  /**
   * Attach to an existing session (opened on any connection, before or after a reconnect).
   * @param {string} id
   */
  session(id) { return new Session(this, id); }

  /**
   * A new session from a state blob made by snapshot().
   * @param {Uint8Array} state
   * @param {{model?: string, topk?: number}} [options]
   */
  async restore(state, options = {}) {
    if (!(state instanceof Uint8Array)) {
      throw new FwmError('client_argument', 'restore: state must be a Uint8Array (the bytes snapshot() gave)');
    }
    const r = await this.call('restore', { state, model: options.model, topk: options.topk });
    return new Session(this, r.session, r);
  }

  /**
   * Every session on the server, in id order, fetched `page` at a time.
   * @param {{page?: number}} [options]
   */
  async *sessions(options = {}) {
    let after;
    for (;;) {
      const reply = await this.call('sessions', { after, limit: options.page ?? 100 });
      for (const item of reply.sessions) yield item;
      after = reply.next;
      if (after === null || after === undefined) return;
    }
  }
}

/**
 * Make a client over `opener` and connect it (used by the entry points).
 * @param {string} address
 * @param {TransportOpener} opener
 * @param {Record<string, any>} options
 */
export async function connectWith(address, opener, options) {
  const client = new Client(address, opener, options);
  await client._open();
  return client;
}

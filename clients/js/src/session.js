// session.js - Session: one session on the server (open, fork and restore make them; any
// connection may use one by its id), with the methods of docs/PROTOCOL.md that act on a session.
// Every call goes through its Client (client.js).

import { FwmError } from './errors.js';

/** A session on the server: its state (what it has read) persists between calls. */
export class Session {
  /**
   * @param {import('./client.js').Client} client
   * @param {string} id
   * @param {Record<string, any>} [info]  the reply that made it (open, fork, restore)
   */
  constructor(client, id, info) {
    this.client = client;
    this.id = id;
    this.info = info;
  }

  toString() { return `Session(${this.id})`; }

  /** The arguments of feed: a string is text, an array token ids. */
  _input(input) {
    if (typeof input === 'string') return { text: input };
    if (Array.isArray(input)) return { tokens: input };
    throw new FwmError('client_argument', 'feed: input must be text (a string) or token ids (an array of integers)');
  }

  /**
   * Read text or token ids; `onToken(event)` sees each token's {session, pos, token, word, topk}
   * in order. Without onToken no notifications are asked for (notify: false).
   * Resolves with {session, pos, fed, unknown}: `unknown` lists the [start, length] UTF-8 byte
   * spans of the text's words read as <unk> (unknownWords spells them). With `logprobs: true` also
   * `tokens` (the ids read) and `logprobs` (each one's natural-log probability given everything
   * the session read before it); a reply that would pass the server's max-output-bytes is refused
   * (too_large: feed fewer tokens per call), as is logprobs on a model whose hello entry says
   * `logprobs: false`, and nothing is fed then.
   * @param {string | number[]} input
   * @param {{topk?: number, onToken?: (event: any) => void, notify?: boolean, logprobs?: boolean,
   *   timeoutMs?: number}} [options]
   */
  feed(input, options = {}) {
    let args;
    try {
      args = this._input(input);
    } catch (e) {
      return Promise.reject(e);
    }
    const notify = options.notify ?? (options.onToken ? undefined : false);
    const logprobs = options.logprobs ? true : undefined;
    return this.client.call('feed', { session: this.id, ...args, topk: options.topk, notify, logprobs },
      { onToken: options.onToken, timeoutMs: options.timeoutMs });
  }

  /**
   * Read text or token ids, yielding each token's event as it streams in; the generator's return
   * value is the feed's result {session, pos, fed, unknown} (with `logprobs: true`, as feed's).
   * @param {string | number[]} input
   * @param {{topk?: number, logprobs?: boolean, timeoutMs?: number}} [options]
   */
  async *stream(input, options = {}) {
    /** @type {any[]} */
    const queue = [];
    /** @type {(() => void) | null} */
    let wake = null;
    let done = false;
    /** @type {any} */
    let result;
    /** @type {unknown} */
    let error = null;
    const request = this.client.call('feed', { session: this.id, ...this._input(input), topk: options.topk,
      logprobs: options.logprobs ? true : undefined },
      { onToken: (e) => { queue.push(e); if (wake) wake(); }, timeoutMs: options.timeoutMs });
    request.then((r) => { done = true; result = r; if (wake) wake(); },
      (e) => { done = true; error = e; if (wake) wake(); });
    let head = 0;
    for (;;) {
      if (head < queue.length) {
        const event = queue[head];
        queue[head++] = undefined;
        yield event;
        continue;
      }
      if (done) {
        if (error) throw error;
        return result;
      }
      await new Promise((resolve) => { wake = () => resolve(undefined); });
      wake = null;
    }
  }

  /**
   * Closed-book question answering over what the session has read: {session, pos, answer, prob,
   * topk, committed}. With commit the answer is fed too.
   * @param {string} question
   * @param {{commit?: boolean, topk?: number, timeoutMs?: number}} [options]
   */
  ask(question, options = {}) {
    return this.client.call('ask', { session: this.id, question, commit: options.commit ?? false, topk: options.topk },
      { timeoutMs: options.timeoutMs });
  }

  /**
   * The prediction after the last token read: {session, pos, topk}.
   * @param {{topk?: number}} [options]
   */
  predict(options = {}) {
    return this.client.call('predict', { session: this.id, topk: options.topk });
  }

  /**
   * Forget everything read: back to the start state, primed as a new session ({session, pos}: pos
   * counts the prime tokens), or to zero with `prime: false`.
   * @param {{prime?: boolean}} [options]
   */
  reset(options = {}) {
    return this.client.call('reset', { session: this.id, prime: options.prime === false ? false : undefined });
  }

  /**
   * What reading `input` (text or token ids; none: the memory as it is) would write into the memory
   * and what each chained read retrieves, on a copy: this session is not changed. Vectors are
   * Uint8Array of little-endian float32 (new Float32Array(v.buffer, v.byteOffset, v.byteLength / 4)
   * on a little-endian machine).
   * @param {string | number[] | undefined} input
   * @param {{topk?: number, memory?: boolean}} [options]
   */
  trace(input, options = {}) {
    const args = { session: this.id, topk: options.topk, memory: options.memory ? true : undefined };
    if (typeof input === 'string') args.text = input;
    else if (input !== undefined) args.tokens = input;
    return this.client.call('trace', args);
  }

  /** A new session with a copy of this one's state; the two then evolve independently. */
  async fork() {
    const r = await this.client.call('fork', { session: this.id });
    return new Session(this.client, r.session, r);
  }

  /**
   * The session's state as bytes (Client.restore makes a session of it).
   * @returns {Promise<Uint8Array>}
   */
  async snapshot() {
    const r = await this.client.call('snapshot', { session: this.id });
    if (!(r && r.state instanceof Uint8Array)) {
      throw new FwmError('bad_response', 'snapshot: the reply holds no binary state');
    }
    return r.state;
  }

  /** End the session on the server: {session, closed: true}. */
  close() { return this.client.call('close', { session: this.id }); }
}

/**
 * The words of `text` (as sent) at the byte spans a reply's `unknown` lists: the spans count UTF-8
 * bytes, not UTF-16 code units.
 * @param {string} text
 * @param {[number, number][]} spans
 * @returns {string[]}
 */
export function unknownWords(text, spans) {
  const bytes = new TextEncoder().encode(text);
  const decoder = new TextDecoder();
  return spans.map(([start, length]) => decoder.decode(bytes.subarray(start, start + length)));
}

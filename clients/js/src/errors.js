// errors.js - FwmError, the one error class of the client: an error answered by fwm-serve (with its
// protocol code and name, docs/PROTOCOL.md "Errors") or a failure on the client's side (codes 100
// and above, the same as the C client's: connect, io, timeout, bad_response, client_argument).

/** Protocol error codes by name (FWM_RPC_CODE_LIST in include/fwm/fwm_protocol.h). */
export const ERROR_CODES = Object.freeze({
  invalid_request: 1,
  unknown_method: 2,
  bad_params: 3,
  unknown_session: 4,
  unknown_word: 5,
  too_large: 6,
  session_limit: 7,
  overloaded: 8,
  model_mismatch: 9,
  unknown_model: 10,
  state_corrupt: 11,
  shutting_down: 12,
  internal: 13,
  protocol: 14,
  storage: 15,
  unauthorized: 16,
  moved: 17,
  session_lost: 18,
  outcome_unknown: 19,
  // the client's own; they never travel on the wire
  connect: 100,
  io: 101,
  timeout: 102,
  bad_response: 103,
  client_argument: 104,
});

/**
 * An error answered by the server or met by the client. `name` is the protocol name
 * ("unknown_word", "timeout", ...), `code` its number, `word` the unknown word of unknown_word.
 */
export class FwmError extends Error {
  /**
   * @param {string} name
   * @param {string} message
   * @param {{code?: number, word?: string, cause?: unknown}} [extra]
   */
  constructor(name, message, extra = {}) {
    super(message, extra.cause === undefined ? undefined : { cause: extra.cause });
    /** @type {string} */
    this.name = name;
    /** @type {number | undefined} */
    this.code = extra.code ?? ERROR_CODES[/** @type {keyof typeof ERROR_CODES} */ (name)];
    /** @type {string | undefined} */
    this.word = extra.word;
  }

  /**
   * The error map of a response or of the `error` notification: {code, name, message, word?}.
   * @param {unknown} error
   */
  static fromWire(error) {
    if (error === null || typeof error !== 'object' || Array.isArray(error)) {
      return new FwmError('bad_response', `the server sent an error that is not a map: ${String(error)}`);
    }
    const e = /** @type {Record<string, unknown>} */ (error);
    const name = typeof e.name === 'string' ? e.name : 'unknown';
    const message = typeof e.message === 'string' ? e.message : '';
    const code = typeof e.code === 'number' ? e.code : undefined;
    const word = typeof e.word === 'string' ? e.word : undefined;
    return new FwmError(name, message, { code, word });
  }
}

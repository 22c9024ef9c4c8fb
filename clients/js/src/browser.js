// browser.js - the browser entry point of fwm-client ('fwm-client/browser'): the client over the
// standard WebSocket API. It imports nothing from Node, so a bundler or a browser's import map
// can take it as it is.

import { connectWith, DEFAULTS } from './client.js';
import { webSocketTransport } from './transport_websocket.js';

export { Client, DEFAULTS } from './client.js';
export { Session, unknownWords } from './session.js';
export { FwmError, ERROR_CODES } from './errors.js';

/**
 * Connect to fwm-serve's WebSocket endpoint (ws://HOST:PORT/PATH) and say hello (with `token`).
 * @param {string} url
 * @param {Record<string, any>} [options]
 */
export async function connect(url, options = {}) {
  const o = /** @type {any} */ ({ ...DEFAULTS, ...options });
  return connectWith(url, webSocketTransport(url, o), o);
}

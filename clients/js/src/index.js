// index.js - the Node entry point of fwm-client: connect() over TCP (tcp://HOST:PORT), a Unix
// socket (unix:PATH) or WebSocket (ws:// or wss://, with the global WebSocket or the one passed as
// the WebSocket option). The token defaults to $FWM_AUTH_TOKEN, as in the other clients.

import { connectWith, DEFAULTS } from './client.js';
import { streamTransport } from './transport_stream.js';
import { webSocketTransport } from './transport_websocket.js';

export { Client, DEFAULTS } from './client.js';
export { Session, unknownWords } from './session.js';
export { FwmError, ERROR_CODES } from './errors.js';
export { parseStreamAddress } from './transport_stream.js';

/** Where fwm-serve listens by default. */
export const DEFAULT_ADDRESS = 'tcp://127.0.0.1:7411';

/**
 * Connect to fwm-serve and say hello (with the token, if any).
 * @param {string} [address]
 * @param {Record<string, any>} [options]
 */
export async function connect(address = DEFAULT_ADDRESS, options = {}) {
  const o = /** @type {any} */ ({ ...DEFAULTS, ...options });
  if (o.token === undefined && process.env.FWM_AUTH_TOKEN) o.token = process.env.FWM_AUTH_TOKEN;
  const opener = /^wss?:\/\//.test(address) ? webSocketTransport(address, o) : streamTransport(address, o);
  return connectWith(address, opener, o);
}

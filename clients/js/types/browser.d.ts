// browser.d.ts - the types of 'fwm-client/browser' (WebSocket only).
export * from './common.js';
import type { Client, Options } from './common.js';

/** Connect to fwm-serve's WebSocket endpoint (ws://HOST:PORT/PATH) and say hello. */
export declare function connect(url: string, options?: Options): Promise<Client>;

// index.d.ts - the types of 'fwm-client' (Node: TCP, Unix sockets, WebSocket).
export * from './common.js';
import type { Client, Options } from './common.js';

export declare const DEFAULT_ADDRESS: string;
/** Connect to fwm-serve (tcp://HOST:PORT, HOST:PORT, unix:PATH, ws://... or wss://...) and say hello. */
export declare function connect(address?: string, options?: Options): Promise<Client>;
export declare function parseStreamAddress(address: string): { path: string } | { host: string; port: number };

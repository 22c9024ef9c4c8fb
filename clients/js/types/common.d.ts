// common.d.ts - the types shared by both entry points of fwm-client: the client, sessions, the
// replies of docs/PROTOCOL.md, and FwmError. Hand-written; `npm run typecheck` checks them and the
// JSDoc of src/ with TypeScript (tsc --noEmit).

/** Protocol error names (codes 1..19 on the wire; 100.. are the client's own). */
export type ErrorName =
  | 'invalid_request' | 'unknown_method' | 'bad_params' | 'unknown_session' | 'unknown_word' | 'too_large'
  | 'session_limit' | 'overloaded' | 'model_mismatch' | 'unknown_model' | 'state_corrupt' | 'shutting_down'
  | 'internal' | 'protocol' | 'storage' | 'unauthorized' | 'moved' | 'session_lost'
  | 'outcome_unknown'
  | 'connect' | 'io' | 'timeout' | 'bad_response' | 'client_argument';

export declare const ERROR_CODES: Readonly<Record<ErrorName, number>>;

/** An error answered by the server (its code and name) or met by the client (codes 100..104). */
export declare class FwmError extends Error {
  constructor(name: string, message: string, extra?: { code?: number; word?: string; cause?: unknown });
  /** The protocol name: "unknown_word", "timeout", ... */
  name: ErrorName | string;
  /** The protocol code (ERROR_CODES[name]). */
  code: number | undefined;
  /** The unknown word, for unknown_word. */
  word: string | undefined;
  static fromWire(error: unknown): FwmError;
}

export interface Options {
  /** The server's token (fwm-serve --auth-token-file), sent with hello; Node: default $FWM_AUTH_TOKEN. */
  token?: string;
  /** How long a request may wait for its answer (from its sending, and from each of its tokens); 0: forever. Default 30000. */
  timeoutMs?: number;
  /** How long connecting may take. Default 10000. */
  connectTimeoutMs?: number;
  /** The largest message accepted from the server, in bytes; a larger one fails the connection. Default 64 MiB. */
  maxMessageBytes?: number;
  /** The largest request sent, in bytes (also bounded by the server's max_message_bytes from hello). Default 4 MiB. */
  maxSendBytes?: number;
  /** Bytes written and not yet taken by the network beyond which requests are refused. Default 16 MiB. */
  maxSendBufferBytes?: number;
  /** Requests in flight beyond which requests are refused. Default 65536. */
  maxPending?: number;
  /** Notifications other than tokens, and answers nobody waits for. */
  onNotification?: (kind: string, value: unknown) => void;
  /** WebSocket transport: the constructor (default globalThis.WebSocket; in Node, e.g. the `ws` package's). */
  WebSocket?: unknown;
  /** WebSocket transport: subprotocols to ask for. */
  protocols?: string | string[];
}

export declare const DEFAULTS: Readonly<Required<Pick<Options, 'timeoutMs' | 'connectTimeoutMs' | 'maxMessageBytes' |
  'maxSendBytes' | 'maxSendBufferBytes' | 'maxPending'>>>;

/** [word, probability], most probable first. */
export type Prediction = [string, number];

export interface TokenEvent { session: string; pos: number; token: number; word: string; topk: Prediction[] }
/** [start, length]: UTF-8 bytes of the text sent, a word read as <unk>. */
export type Span = [number, number];
export interface FeedResult {
  session: string; pos: number; fed: number; unknown: Span[];
  /** with logprobs: the ids read, and ln P(each | everything read before it) */
  tokens?: number[]; logprobs?: number[];
}
export interface AskResult { session: string; pos: number; answer: string; prob: number; topk: Prediction[]; committed: boolean; unknown: Span[] }
export interface PredictResult { session: string; pos: number; topk: Prediction[] }
export interface SessionInfo { session: string; model: string; pos: number | null; last_used_ms: number; resident: boolean }
export interface ModelInfo {
  name: string; architecture: string; layers: number; fingerprint: string; vocab_size: number; embedding: number; hidden: number; memory: [number, number, number];
  reads: number; residual: boolean; read_policy: string; parameters: number; session_bytes: number;
  state_blob_bytes: number; checksum_verified: boolean; default: boolean;
  /** "word" (catbAbI) or "text" (prose); whether unknown words read as <unk>; whether feed takes logprobs */
  tokenizer: string; has_unknown_token: boolean; logprobs: boolean;
}
export interface HelloResult {
  server: string; version: string; protocol: number; auth_required: boolean; authenticated: boolean;
  models?: ModelInfo[]; limits?: Record<string, number>; workers?: number; max_batch?: number;
  durability?: Record<string, unknown> | null;
}

export interface CallOptions { onToken?: (event: TokenEvent) => void; timeoutMs?: number }

export declare class Client {
  readonly address: string;
  readonly options: Options & typeof DEFAULTS;
  /** The hello reply of the last (re)connection. */
  server: HelloResult | null;
  readonly isClosed: boolean;
  /** Settles when the connection is closed, by either side. */
  readonly closed: Promise<void>;
  readonly pendingCount: number;
  /** The largest request that will be sent: maxSendBytes, and the server's max_message_bytes. */
  readonly sendLimit: number;
  call(method: string, params?: Record<string, unknown>, options?: CallOptions): Promise<any>;
  notify(method: string, params?: Record<string, unknown>): void;
  close(): Promise<void>;
  reconnect(): Promise<this>;
  hello(): Promise<HelloResult>;
  stats(): Promise<Record<string, any>>;
  open(options?: { model?: string; topk?: number; prime?: boolean }): Promise<Session>;
  session(id: string): Session;
  restore(state: Uint8Array, options?: { model?: string; topk?: number }): Promise<Session>;
  sessions(options?: { page?: number }): AsyncGenerator<SessionInfo, void, void>;
}

export declare class Session {
  constructor(client: Client, id: string, info?: Record<string, any>);
  readonly client: Client;
  readonly id: string;
  /** The reply that made it (open, fork, restore), if any. */
  readonly info: Record<string, any> | undefined;
  feed(input: string | number[], options?: { topk?: number; onToken?: (event: TokenEvent) => void; notify?: boolean; logprobs?: boolean; timeoutMs?: number }): Promise<FeedResult>;
  stream(input: string | number[], options?: { topk?: number; logprobs?: boolean; timeoutMs?: number }): AsyncGenerator<TokenEvent, FeedResult, void>;
  ask(question: string, options?: { commit?: boolean; topk?: number; timeoutMs?: number }): Promise<AskResult>;
  predict(options?: { topk?: number }): Promise<PredictResult>;
  reset(options?: { prime?: boolean }): Promise<{ session: string; pos: number }>;
  fork(): Promise<Session>;
  trace(input?: string | number[], options?: { topk?: number; memory?: boolean }): Promise<Record<string, any>>;
  snapshot(): Promise<Uint8Array>;
  close(): Promise<{ session: string; closed: true }>;
}

/** The words of `text` (as sent) at the UTF-8 byte spans a reply's `unknown` lists. */
export declare function unknownWords(text: string, spans: Span[]): string[];

// types_usage.ts - compiled only (npm run typecheck): the API as a TypeScript program uses it,
// through the package's own exports, so that the declarations under types/ stay usable.
import { connect, FwmError, ERROR_CODES, type TokenEvent, type AskResult } from 'fwm-client';
import { connect as connectBrowser } from 'fwm-client/browser';

export async function usage(): Promise<string> {
  const client = await connect('tcp://127.0.0.1:7411', { token: 'x', timeoutMs: 1000 });
  const s = await client.open({ topk: 3 });
  const words: string[] = [];
  await s.feed('Mary moved to the bathroom.', { onToken: (e: TokenEvent) => words.push(e.word) });
  for await (const e of s.stream([1, 2, 3])) words.push(`${e.pos}:${e.topk[0][0]}`);
  const a: AskResult = await s.ask('Where is Mary?', { commit: true });
  const child = await s.fork();
  const blob: Uint8Array = await child.snapshot();
  const restored = await client.restore(blob, { topk: 1 });
  for await (const info of client.sessions({ page: 10 })) words.push(info.session);
  await restored.close();
  await client.reconnect();
  const other = await connectBrowser('ws://127.0.0.1:8080/rpc');
  await other.close();
  try {
    await s.predict();
  } catch (e) {
    if (e instanceof FwmError && e.code === ERROR_CODES.unknown_session) return e.name;
  }
  await client.close();
  return `${a.answer} ${a.prob.toFixed(2)} ${words.length} ${client.server?.models?.[0].name}`;
}

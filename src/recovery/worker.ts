/**
 * The disposable owner-verification worker (RFC §12: 90 s, 512 MiB V8 old space, SQLite hard heap
 * ≤ 64 MiB), run as its own process by WorkerSession (worker-client.ts). It sets the SQLite heap
 * limit before opening anything, then reads JSON lines on stdin (owner-verify.ts WorkerMessage):
 * the workspace, then each database as soon as extraction has written and digest-checked it — so
 * owner checks overlap the rest of the extraction — then `end`, after which it reads the
 * root-level owners and prints one JSON report on stdout. No network, no lock, no lease.
 */
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { setSqliteHardHeapLimit } from '../store/index.js';
import { RECOVERY_LIMITS } from './limits.js';
import { verifyOwners, verifySqliteFile, type SqliteReport, type WorkerMessage, type WorkspaceRef } from './owner-verify.js';

const MAX_LINE = 64 * 1024;

async function main(): Promise<void> {
  const heap = setSqliteHardHeapLimit(RECOVERY_LIMITS.sqliteHardHeapBytes);
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })[Symbol.asyncIterator]();
  const next = async (): Promise<unknown> => {
    const r = await lines.next();
    if (r.done || r.value.length > MAX_LINE) throw new Error('protocol');
    return JSON.parse(r.value) as unknown;
  };
  const ref = (await next()) as WorkspaceRef;
  const sqlite: SqliteReport[] = [];
  let busy = 0;
  for (;;) {
    const msg = (await next()) as WorkerMessage;
    if ('end' in msg) break;
    if (sqlite.length >= RECOVERY_LIMITS.sqliteFiles) throw new Error('too many databases');
    const t = performance.now();
    sqlite.push(verifySqliteFile(ref, msg.sqlite));
    busy += performance.now() - t;
  }
  if (process.env.LOOPX_TEST_WORKER_HANG === '1') await new Promise(() => setInterval(() => undefined, 1_000));
  const t = performance.now();
  const report = verifyOwners(ref, sqlite, heap);
  busy += performance.now() - t;
  const answer = JSON.stringify({ ...report, busy_ms: Math.round(busy) });
  // Test hook: JSON whitespace pads the answer to exactly N characters (the 2 Mi-character bound's boundary).
  const pad = Number(process.env.LOOPX_TEST_WORKER_ANSWER_CHARS ?? 0);
  const out = pad > answer.length ? answer + ' '.repeat(pad - answer.length) : answer;
  // Wait until the pipe took every byte: process.exit drops a pending write (a pipe holds 64 KiB).
  await new Promise<void>((resolve, reject) => process.stdout.write(out, (e) => (e ? reject(e) : resolve())));
}

main().then(
  () => process.exit(0),
  (e: unknown) => {
    process.stderr.write(`${e instanceof Error ? e.name : 'error'}\n`);
    process.exit(70);
  },
);

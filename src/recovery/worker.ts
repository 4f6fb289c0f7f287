/**
 * The disposable owner-verification worker (RFC §12: 90 s, 512 MiB V8 old space, SQLite hard heap
 * ≤ 64 MiB). Run as its own process by runWorker() in worker-client.ts: it reads one JSON request
 * on stdin, sets the SQLite heap limit before opening anything, runs verifyOwners() and prints one
 * JSON report on stdout. It has no network, no lock, no lease; its exit ends everything it opened.
 */
import { setSqliteHardHeapLimit } from '../store/index.js';
import { RECOVERY_LIMITS } from './limits.js';
import { verifyOwners, type WorkerRequest } from './owner-verify.js';

async function readStdin(): Promise<string> {
  const parts: Buffer[] = [];
  let size = 0;
  for await (const chunk of process.stdin as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > 2 * 1024 * 1024) throw new Error('request too large');
    parts.push(chunk);
  }
  return Buffer.concat(parts).toString('utf8');
}

async function main(): Promise<void> {
  const req = JSON.parse(await readStdin()) as WorkerRequest;
  const heap = setSqliteHardHeapLimit(RECOVERY_LIMITS.sqliteHardHeapBytes);
  if (process.env.LOOPX_TEST_WORKER_HANG === '1') await new Promise(() => setInterval(() => undefined, 1_000));
  const report = verifyOwners(req, heap);
  process.stdout.write(JSON.stringify(report));
}

main().catch((e: unknown) => {
  process.stderr.write(`${e instanceof Error ? e.name : 'error'}\n`);
  process.exitCode = 70;
});

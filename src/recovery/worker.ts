/**
 * The disposable owner-verification worker (RFC §12: 90 s, 512 MiB V8 old space, SQLite hard heap
 * ≤ 64 MiB), run as its own process by WorkerSession (worker-client.ts). It sets the SQLite heap
 * limit before opening anything, then reads JSON lines on stdin (owner-verify.ts WorkerMessage):
 * the workspace, then each database as soon as extraction has written and digest-checked it — so
 * owner checks overlap the rest of the extraction — then `end`, after which it reads the
 * root-level owners and prints one JSON report on stdout. No network, no lock, no lease.
 *
 * It never outlives its caller: the caller holds stdin open until the worker has exited, so the
 * end of stdin means the caller died — SIGKILLed included — and the worker exits
 * (WORKER_EXIT.parentGone). That needs a free event loop; for the time a synchronous step holds
 * it (an integrity check of a large database), a watchdog thread sees the re-parenting and
 * SIGKILLs this process. A full scratch file system exits with WORKER_EXIT.noSpace, so it is never
 * reported as a damaged store.
 */
import { writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { createInterface } from 'node:readline';
import { Worker } from 'node:worker_threads';
import { isOutOfSpace, setSqliteHardHeapLimit } from '../store/index.js';
import { RECOVERY_LIMITS } from './limits.js';
import {
  WORKER_EXIT,
  verifyOwners,
  verifySqliteFile,
  type CrashRecoveryRef,
  type DocumentComponentRef,
  type SqliteReport,
  type WorkerMessage,
  type WorkspaceRef,
} from './owner-verify.js';

const MAX_LINE = 64 * 1024;
/** How often the watchdog thread re-reads the parent pid (a re-parented process has another). */
const PARENT_POLL_MS = 200;

// Plain JavaScript (it runs without the TypeScript loader); its own event loop keeps polling while
// the main thread is blocked, and SIGKILL of our own pid ends the whole process from a thread.
const WATCHDOG = `const { workerData } = require('node:worker_threads');
setInterval(() => { if (process.ppid !== workerData.parent) process.kill(process.pid, 'SIGKILL'); }, workerData.ms);`;

/** The parent-death watchdogs: the caller's end closes our stdin; a re-parent changes our ppid. */
function watchParent(input: ReturnType<typeof createInterface>): void {
  const gone = (): never => process.exit(WORKER_EXIT.parentGone);
  input.on('close', gone);
  process.stdin.on('error', gone);
  new Worker(WATCHDOG, {
    eval: true,
    execArgv: [],
    workerData: { parent: process.ppid, ms: PARENT_POLL_MS },
    resourceLimits: { maxOldGenerationSizeMb: 8 },
  }).unref();
}

/** The event loop's turn between two steps, so a watchdog event that arrived during a step is acted on. */
const yieldTurn = (): Promise<void> => new Promise((r) => setImmediate(r));

async function main(): Promise<void> {
  const heap = setSqliteHardHeapLimit(RECOVERY_LIMITS.sqliteHardHeapBytes);
  const input = createInterface({ input: process.stdin, crlfDelay: Infinity });
  const lines = input[Symbol.asyncIterator]();
  watchParent(input);
  const next = async (): Promise<unknown> => {
    const r = await lines.next();
    if (r.done || r.value.length > MAX_LINE) throw new Error('protocol');
    return JSON.parse(r.value) as unknown;
  };
  const ref = (await next()) as WorkspaceRef;
  const sqlite: SqliteReport[] = [];
  const components: DocumentComponentRef[] = [];
  const crash: CrashRecoveryRef[] = [];
  let busy = 0;
  for (;;) {
    const msg = (await next()) as WorkerMessage;
    if ('end' in msg) break;
    if ('component' in msg) {
      if (components.length >= RECOVERY_LIMITS.v1Components) throw new Error('too many components');
      components.push(msg.component);
      continue;
    }
    if ('crash' in msg) {
      if (crash.length >= RECOVERY_LIMITS.v1Components) throw new Error('too many components');
      crash.push(msg.crash);
      continue;
    }
    if (sqlite.length >= RECOVERY_LIMITS.sqliteFiles) throw new Error('too many databases');
    const t = performance.now();
    sqlite.push(
      verifySqliteFile(
        ref,
        msg.sqlite,
        msg.export,
        msg.export === undefined ? undefined : msg.component_id,
        msg.export_items ?? 'in_export',
      ),
    );
    busy += performance.now() - t;
    await yieldTurn();
  }
  const hang = process.env.LOOPX_TEST_WORKER_HANG;
  if (hang === '1' || hang === 'blocked') {
    // Tests latch on this file (in the scratch directory, our cwd) before they kill the caller.
    writeFileSync('worker-hanging', '');
    // 'blocked' holds the main thread as a long synchronous step would; '1' waits with it free.
    if (hang === 'blocked') Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
    await new Promise(() => setInterval(() => undefined, 1_000));
  }
  await yieldTurn();
  const t = performance.now();
  const report = verifyOwners(ref, sqlite, heap, components, crash);
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
    if (isOutOfSpace(e)) process.exit(WORKER_EXIT.noSpace);
    process.stderr.write(`${e instanceof Error ? e.name : 'error'}\n`);
    process.exit(WORKER_EXIT.failed);
  },
);

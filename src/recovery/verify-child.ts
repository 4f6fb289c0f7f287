/**
 * `executeVerify` as a disposable process of its own, for a long-lived caller (the daemon): the
 * hostile archive is decoded and extracted here, not in the caller, and this process starts the
 * owner worker as the command line does. Started by verify-process.ts with a minimal environment.
 *
 * stdin: one JSON line `{"archive", "manifest", "destination"}` (absolute paths). stdout: JSON
 * lines — `{"progress": VerifyProgress}` while it works, then exactly one `{"done": true}` (the
 * audit is published in the destination) or `{"error": {"kind", "code", "message", …}}`.
 * SIGTERM or SIGINT aborts the run: what it created is removed and it ends with
 * `verify_interrupted`.
 */
import { createInterface } from 'node:readline';
import { isLoopxError } from '../core/index.js';
import { executeVerify, verifyFailed, type VerifyInputs } from './verify.js';

const MAX_LINE = 64 * 1024;
const write = (doc: unknown): void => void process.stdout.write(`${JSON.stringify(doc)}\n`);

async function readInputs(): Promise<VerifyInputs> {
  const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })[Symbol.asyncIterator]();
  const r = await lines.next();
  if (r.done || r.value.length > MAX_LINE) throw new Error('protocol');
  const v = JSON.parse(r.value) as Partial<Record<keyof VerifyInputs, unknown>>;
  if (typeof v.archive !== 'string' || typeof v.manifest !== 'string' || typeof v.destination !== 'string')
    throw new Error('protocol');
  return { archive: v.archive, manifest: v.manifest, destination: v.destination };
}

async function main(): Promise<number> {
  // Handlers first: a stop requested at any moment reaches executeVerify as an abort.
  const ac = new AbortController();
  process.on('SIGTERM', () => ac.abort());
  process.on('SIGINT', () => ac.abort());
  const inputs = await readInputs();
  try {
    await executeVerify(inputs, { signal: ac.signal, onProgress: (p) => write({ progress: p }) });
    write({ done: true });
    return 0;
  } catch (e) {
    if (isLoopxError(e)) write({ error: { kind: e.kind, ...e.toJSON() } });
    else write({ error: { kind: 'internal', ...verifyFailed().toJSON() } });
    return 1;
  }
}

main().then(
  (code) => {
    process.exitCode = code;
  },
  () => {
    process.exitCode = 70;
  },
);

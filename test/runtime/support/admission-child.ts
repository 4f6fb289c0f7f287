/**
 * A child process for test/runtime/admission.test.ts, on one runtime root:
 *
 *   close <root> [timeout-ms]   closes admission, prints `closed <epoch> <drained>`, holds the gate
 *   write <root>                admits one writer, prints `admitted`, holds the ticket
 *
 * Each then answers its stdin line by line: `ping` → `pong`, `release` → releases, prints
 * `released` and exits. Stdin closing (the test gone) exits too; SIGKILL is the crash case.
 */
import { createInterface } from 'node:readline';
import { admit, closeAdmission } from '../../../src/runtime/index.js';

const [mode, root, timeout] = process.argv.slice(2);
if ((mode !== 'close' && mode !== 'write') || root === undefined) {
  process.stderr.write('usage: admission-child.ts close|write <root> [timeout-ms]\n');
  process.exit(2);
}

let release: () => void;
try {
  if (mode === 'close') {
    const closed = await closeAdmission(root, { timeoutMs: Number(timeout ?? 60_000) });
    release = () => closed.release();
    process.stdout.write(`closed ${closed.epoch} ${closed.drained}\n`);
  } else {
    const ticket = admit(root, 'test writer');
    release = () => ticket.release();
    process.stdout.write('admitted\n');
  }
} catch (e) {
  process.stdout.write(`refused ${(e as { code?: string }).code ?? 'internal'}\n`);
  process.exit(4);
}

for await (const line of createInterface({ input: process.stdin })) {
  if (line === 'ping') process.stdout.write('pong\n');
  if (line === 'release') {
    release();
    process.stdout.write('released\n');
    process.exit(0);
  }
}
process.exit(0);

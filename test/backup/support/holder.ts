// Child process for the capture-profile tests: holds something of a root until it is killed, and
// says "holding" once it does. `lock <file>`: an flock on the file (as the daemon holds
// locks/daemon.lock); `open <file>`: just an open descriptor (as any process using the root).
import { openSync } from 'node:fs';
import { tryLockExclusive } from '../../../src/core/index.js';

const [mode, file] = process.argv.slice(2) as ['lock' | 'open', string];
if (mode === 'lock') {
  if (tryLockExclusive(file) === undefined) throw new Error('the lock is held already');
} else openSync(file, 'r');
process.stdout.write('holding\n');
setInterval(() => undefined, 1_000);

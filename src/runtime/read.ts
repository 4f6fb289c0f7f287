/**
 * The runtime's read entry: what a command that only reads a run (`loopx run show`) loads instead
 * of the whole runtime (index.ts). A module of its own, importing only what reading needs, so that
 * the bundle gives such a command chunks of no more than that (scripts/bundle-cli.mjs); the lint
 * lets the CLI import it beside index.ts.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { refuseRecoveryWorkspaceRoot } from '../core/index.js';
import { openRunReader, type RunReader } from '../engine/index.js';
import { LAYOUT } from '../owners/index.js';
import { refuseRecoveryInProgress } from '../recovery/index.js';
import { withDrivenProbe } from './driven.js';
import type { RootAccess } from './root.js';

export { assertRuntimeRoot } from '../owners/index.js';

/**
 * `run show`'s read of a root: the same refusals and the same view as `withRootEngine(…, { readOnly:
 * true })`, through a run reader instead of an engine.
 */
export async function withRunReader<T>(a: RootAccess, fn: (reader: RunReader) => Promise<T> | T): Promise<T> {
  refuseRecoveryInProgress(a.root, { writer: false });
  refuseRecoveryWorkspaceRoot(a.root);
  return withDrivenProbe(a, async (isDriven) => {
    const reader = openRunReader({
      ...(existsSync(join(a.root, LAYOUT.engineDb)) ? { root: a.root } : {}),
      ...(isDriven ? { isDriven } : {}),
    });
    try {
      return await fn(reader);
    } finally {
      reader.close();
    }
  });
}

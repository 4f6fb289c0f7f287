/**
 * A root's runs, read without an engine: what `loopx run show` needs and no more — the run store
 * and the effect journal, each opened on first use, and the same reads (reads.ts) the engine
 * answers a read-only command with. No application, kernel, turn driver or snapshot transfer is
 * made, so a command that only reads a run does not load them (the bundle leaves them in chunks
 * it never opens).
 */
import { join } from 'node:path';
import { ensurePrivateDir, internal } from '../core/index.js';
import { LAYOUT } from '../owners/index.js';
import { EffectAccess } from './mutations.js';
import { RunReads, type RunView } from './reads.js';
import type { RunStore } from './run-store/contract.js';
import { memoryRunStore } from './run-store/memory.js';
import { openSqliteRunStore } from './run-store/sqlite.js';

/** A read of an engine (or run reader) after its `close()`: a bug of the caller. */
export const engineClosed = () => internal('engine_closed', 'The engine is closed.');

/** The run store of `root` (its `engine.db`), or an empty one in memory without a root: the engine's and the reader's. */
export const openRunStoreOf = (root: string | undefined): RunStore =>
  root !== undefined ? openSqliteRunStore(join(root, LAYOUT.engineDb)) : memoryRunStore();

export interface RunReader {
  show(runId: string): Promise<RunView>;
  close(): void;
}

/**
 * The runs of `root` (its `engine.db`; none when `root` is undefined: a root without one reads as
 * without runs), with `isDriven` telling whether a live driver holds a run now (none: never).
 */
export function openRunReader(options: {
  readonly root?: string;
  readonly isDriven?: (runId: string) => Promise<boolean>;
}): RunReader {
  const { root } = options;
  let store: RunStore | undefined;
  let closed = false;
  const effects = new EffectAccess(root !== undefined ? { root } : {});
  const storeOf = (): RunStore => {
    if (closed) throw engineClosed();
    if (store === undefined) {
      if (root !== undefined) ensurePrivateDir(root);
      store = openRunStoreOf(root);
    }
    return store;
  };
  const reads = new RunReads({ store: storeOf, effects, isDriven: options.isDriven ?? (async () => false) });
  return {
    show: (runId) => reads.show(runId),
    close: () => {
      if (closed) return;
      closed = true;
      store?.close();
      effects.close();
    },
  };
}

/**
 * Historical readback of a COPY of `engine.db` (a recovery workspace's run kernel): the runs it
 * held, read from a private scratch duplicate so the file itself is never opened by SQLite (a
 * read-only open of a WAL database still creates sidecars). Nothing read here is ownership: a run
 * in a copy is history, owned — if by anyone — by the root the run authority names.
 */
import { withSqliteCopy } from '../../store/index.js';
import type { RunHead } from './contract.js';

export interface HistoricalRun {
  readonly run_id: string;
  readonly lifecycle: string;
  readonly last_sequence: number;
  readonly completed_turns: number;
  readonly definition_id: string;
}

export interface HistoricalRuns {
  readonly readable: boolean;
  readonly runs: readonly HistoricalRun[];
}

export function readHistoricalRuns(copiedEngineDb: string, options: { scratchDir?: string } = {}): HistoricalRuns {
  return withSqliteCopy(
    copiedEngineDb,
    (db) => {
      try {
        const rows = db.prepare('SELECT head FROM runs ORDER BY run_id').all() as Array<{ head: string }>;
        const runs = rows
          .map((r) => JSON.parse(r.head) as RunHead)
          .map((h) => ({
            run_id: String(h.runId),
            lifecycle: String(h.lifecycle),
            last_sequence: Number(h.lastSequence),
            completed_turns: Number(h.completedTurns),
            definition_id: String(h.definition.id),
          }));
        return { readable: true, runs };
      } catch {
        // A damaged copy is unreadable history, never an error of the reader.
        return { readable: false, runs: [] };
      }
    },
    {
      ...(options.scratchDir !== undefined ? { scratchDir: options.scratchDir } : {}),
      onUnreadable: () => ({ readable: false, runs: [] }),
    },
  );
}

/** The root id a copied engine.db names (the root it was copied from); null when the copy holds none or does not read. */
export function readHistoricalRootId(copiedEngineDb: string, options: { scratchDir?: string } = {}): string | null {
  return withSqliteCopy(
    copiedEngineDb,
    (db) => {
      try {
        const row = db.prepare("SELECT value FROM meta WHERE key = 'root_id'").get() as { value?: unknown } | undefined;
        return typeof row?.value === 'string' && /^[A-Za-z0-9_-]{1,128}$/.test(row.value) ? row.value : null;
      } catch {
        return null;
      }
    },
    { ...(options.scratchDir !== undefined ? { scratchDir: options.scratchDir } : {}), onUnreadable: () => null },
  );
}

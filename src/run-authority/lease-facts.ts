/**
 * What others may read of the PostgreSQL run authority's leases (`run_leases`), without keys and
 * without taking any lease: which runs are held, by which instance, at which epoch, and until when
 * on the database clock. A cluster reads these to tell a claimable run from a driven one and to
 * show who drives what; the decisions stay in postgres.ts (a lease is taken and fenced there
 * only). Each answer is one statement: a fact of the instant it ran, a hint to whoever acts on it
 * — taking a lease is still the compare-and-swap of `acquireRun`.
 */
import { isLoopxError } from '../core/index.js';
import { pgFailure, type PgDatabase } from '../store/index.js';

export interface RunLeaseFact {
  readonly run_id: string;
  readonly epoch: number;
  readonly owner_instance: string;
  /** Not expired on the database clock: its owner may still write under it. */
  readonly live: boolean;
  /** Milliseconds until it expires (negative once expired). */
  readonly expires_in_ms: number;
}

export interface RunLeaseFacts {
  /** Every lease not released (live or expired), by run id. */
  unreleased(): Promise<RunLeaseFact[]>;
  /** Whether a live lease holds `runId` now. */
  isHeld(runId: string): Promise<boolean>;
}

/** The lease facts of the run authority in `db`'s schema (the pool is not its own). */
export function pgRunLeaseFacts(db: PgDatabase): RunLeaseFacts {
  const q = async <R extends Record<string, unknown>>(sql: string, params: readonly unknown[] = []): Promise<R[]> =>
    db.query<R>(sql, params).catch((e: unknown) => {
      throw isLoopxError(e) ? e : pgFailure(e, db.schema);
    });
  return {
    async unreleased() {
      const rows = await q<{
        run_id: string;
        epoch: string;
        owner_instance: string;
        live: boolean;
        expires_in: string;
      }>(
        `SELECT run_id, epoch, owner_instance, lease_expires_at > now() AS live, (extract(epoch FROM lease_expires_at - now()) * 1000)::bigint AS expires_in
           FROM run_leases WHERE NOT released ORDER BY run_id`,
      );
      return rows.map((l) => ({
        run_id: l.run_id,
        epoch: Number(l.epoch),
        owner_instance: l.owner_instance,
        live: l.live,
        expires_in_ms: Number(l.expires_in),
      }));
    },
    async isHeld(runId) {
      return (
        (await q('SELECT 1 FROM run_leases WHERE run_id = $1 AND NOT released AND lease_expires_at > now()', [runId]))
          .length > 0
      );
    },
  };
}

/**
 * The PostgreSQL run authority's lease facts (`pgRunLeaseFacts`), what a cluster reads instead of
 * the `run_leases` table: every unreleased lease with its epoch, owner and expiry on the database
 * clock, and whether a live lease holds a run — read without keys and without taking anything.
 */
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import {
  openPgRunAuthority,
  openRunAuthority,
  pgRunLeaseFacts,
  RUN_AUTHORITY_COMPONENT,
  RUN_AUTHORITY_PG_MIGRATIONS,
} from '../../src/run-authority/index.js';
import { migratePostgres } from '../../src/store/index.js';
import { describePg, pgDatabases } from '../support/pg.js';
import { cleanup, tempBase } from './support.js';

afterAll(cleanup);
const database = pgDatabases();

describePg('run lease facts on the real PostgreSQL server', () => {
  it('a held lease is a live fact with its epoch and owner; an expired one stays unreleased but not live; a released one is gone', async () => {
    const db = database();
    await migratePostgres(db, RUN_AUTHORITY_COMPONENT, RUN_AUTHORITY_PG_MIGRATIONS);
    const keys = openRunAuthority({ dir: join(tempBase(), 'authority'), create: true });
    const a = openPgRunAuthority({ db, keys, instanceId: 'inst_a', leaseMs: 60_000 });
    const b = openPgRunAuthority({ db, keys, instanceId: 'inst_b', leaseMs: 60_000 });
    const facts = pgRunLeaseFacts(db);
    try {
      expect(await facts.unreleased()).toEqual([]);
      expect(await facts.isHeld('run_a')).toBe(false);

      const first = await a.acquireRun('run_b');
      await first!.release();
      const leaseA = await a.acquireRun('run_a');
      const leaseB = await b.acquireRun('run_b');
      const held = await facts.unreleased();
      expect(held.map(({ expires_in_ms: _, ...f }) => f)).toEqual([
        { run_id: 'run_a', epoch: 1, owner_instance: 'inst_a', live: true },
        { run_id: 'run_b', epoch: 2, owner_instance: 'inst_b', live: true },
      ]);
      for (const f of held) expect(f.expires_in_ms).toBeGreaterThan(50_000);
      expect(await facts.isHeld('run_a')).toBe(true);

      // Expired on the database clock (as a dead owner's lease is): still unreleased, no longer live.
      await db.query(`UPDATE run_leases SET lease_expires_at = now() - interval '1 second' WHERE run_id = 'run_a'`);
      expect(await facts.isHeld('run_a')).toBe(false);
      const [expired] = await facts.unreleased();
      expect(expired).toMatchObject({ run_id: 'run_a', live: false });
      expect(expired!.expires_in_ms).toBeLessThan(0);

      await leaseB!.release();
      expect(await facts.isHeld('run_b')).toBe(false);
      expect((await facts.unreleased()).map((f) => f.run_id)).toEqual(['run_a']);
      await leaseA!.release();
    } finally {
      await a.close();
      await b.close();
    }
  });
});

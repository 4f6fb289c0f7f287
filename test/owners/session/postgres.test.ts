/**
 * The PostgreSQL session provider against the real server, beyond the conformance suite: a stale
 * executor in another pool fenced by the database (the session re-bound while its phase write is
 * in flight — refused with the code SQLite gives), a commit whose connection the server ended at
 * the commit point resolved by the owner's readback (unproved, then one retry applies once), a
 * commit that landed but whose answer was lost proved by readback, and a schema the port was not
 * migrated to, or rows damaged under it, refused typed.
 */
import { join } from 'node:path';
import { expect, it } from 'vitest';
import {
  openSqliteSessionPort,
  sessionStore,
  SESSION_PG_MIGRATIONS,
  openPgSessionPort,
  type SessionPort,
  type SessionStore,
} from '../../../src/owners/session/index.js';
import { PgCommitAmbiguous, migratePostgres, type PgDatabase } from '../../../src/store/index.js';
import { pgHarnesses } from '../conformance/pg-harness.js';
import { backendPid, blockedBy, hooked } from '../conformance/pg-hooks.js';
import { rejectionOf, tempDirs } from '../conformance/support.js';
import { describePg } from '../../support/pg.js';

const pg = pgHarnesses('session', SESSION_PG_MIGRATIONS);
const tempDir = tempDirs('loopx-session-pg-');

/** A session bound to run-A (execution generation 2) with turn 0 begun under it. */
async function boundTurn(store: SessionStore) {
  const s = await store.openSession({ goal_id: 'g1', goal_instance_id: 'gi_1' });
  await store.bindRun(s.session_id, 'run-A', 1);
  const { turn } = await store.beginTurn(s.session_id, 0, 2);
  return { s, turn };
}

/** What SQLite answers when the session is re-bound between the phase decision and its commit. */
async function sqliteRefusal(): Promise<string> {
  const path = join(tempDir(), 'sessions.db');
  const inner = openSqliteSessionPort(path);
  const other = sessionStore(openSqliteSessionPort(path));
  let race: (() => Promise<unknown>) | undefined;
  const racing: SessionPort = { ...inner, commit: async (w) => (await race?.(), (race = undefined), inner.commit(w)) };
  const mine = sessionStore(racing);
  const { s, turn } = await boundTurn(mine);
  race = () => other.bindRun(s.session_id, 'run-B', 2);
  const code = (await rejectionOf(() => mine.recordPhase(turn.turn_key, 'host_execute', 2))).code;
  inner.close();
  return code;
}

describePg('the PostgreSQL session provider on the real server', () => {
  it("fences a stale execution generation in the database: a re-bind by another pool while a turn's phase write is open is refused as in SQLite", async () => {
    const a = await pg.database();
    const other = sessionStore(openPgSessionPort(pg.pool(a.schema)));
    const h = hooked(a);
    const port = openPgSessionPort(h.db);
    const mine = sessionStore(port);
    const { s, turn } = await boundTurn(mine);

    // The other pool re-binds the session inside this pool's write transaction, after the decision read generation 2.
    h.arm('before', async (q) => {
      await q('SELECT 1');
      expect(await other.bindRun(s.session_id, 'run-B', 2)).toMatchObject({ execution_generation: 3, run_id: 'run-B' });
    });
    const refusal = await rejectionOf(() => mine.recordPhase(turn.turn_key, 'host_execute', 2));
    expect(refusal.code).toBe(await sqliteRefusal());
    expect(refusal.code).toBe('session_generation_stale');
    expect((await port.read({ turn_key: turn.turn_key })).turn).toMatchObject({ phases: [], execution_generation: 2 });

    // The port itself: the write the stale executor decided is refused by the rows, not by client state.
    const write = {
      op: 'append_phase',
      expected_execution_generation: 2,
      turn_key: turn.turn_key,
      position: 0,
      phase: { phase: 'host_execute', at: turn.created_at, ref: null },
    } as const;
    expect(await port.commit(write)).toEqual({ status: 'conflict', reason: 'changed' });
    expect(await a.query('SELECT count(*)::int AS n FROM turn_phases')).toEqual([{ n: 0 }]);
    // The turn's own generation is the fence: its new executor cannot continue it either.
    expect((await rejectionOf(() => other.recordPhase(turn.turn_key, 'host_execute', 3))).code).toBe(
      'turn_identity_mismatch',
    );
  });

  it('a bind waits for an open phase write holding the session: the phase lands under its generation, then the bind', async () => {
    const a = await pg.database();
    const other = sessionStore(openPgSessionPort(pg.pool(a.schema)));
    const h = hooked(a);
    const mine = sessionStore(openPgSessionPort(h.db));
    const { s, turn } = await boundTurn(mine);
    let bind: Promise<unknown> | undefined;
    h.arm('after', async (q) => {
      const pid = await backendPid(q);
      bind = other.bindRun(s.session_id, 'run-B', 2);
      // Latch: the bind's transaction is blocked by this one's lock.
      await blockedBy(a, pid);
    });
    expect((await mine.recordPhase(turn.turn_key, 'host_execute', 2)).phases).toHaveLength(1);
    expect(await bind).toMatchObject({ execution_generation: 3, run_id: 'run-B' });
    expect((await rejectionOf(() => mine.recordPhase(turn.turn_key, 'typed_result', 2))).code).toBe(
      'session_generation_stale',
    );
  }, 120_000);

  it('a settlement whose connection the server ended at the commit point is unproved, nothing landed, and one retry applies once', async () => {
    const a = await pg.database();
    const killer = pg.pool(a.schema);
    const h = hooked(a);
    const port = openPgSessionPort(h.db);
    const store = sessionStore(port);
    const { turn } = await boundTurn(store);
    const request = { settlement_id: 'st-cut', status: 'stopped' as const, expected_execution_generation: 2 };

    h.arm('after', async (q) => {
      const pid = await backendPid(q);
      await killer.query('SELECT pg_terminate_backend($1)', [pid]);
    });
    expect((await rejectionOf(() => store.settleTurn(turn.turn_key, request))).code).toBe('store_outcome_unproved');
    expect(await a.query('SELECT count(*)::int AS n FROM settlements')).toEqual([{ n: 0 }]);
    expect((await port.read({ turn_key: turn.turn_key })).turn?.status).toBe('in_progress');

    const first = await store.settleTurn(turn.turn_key, request);
    expect(first.replayed).toBe(false);
    expect(await store.settleTurn(turn.turn_key, request)).toEqual({ settlement: first.settlement, replayed: true });
    expect(await a.query('SELECT settlement_id FROM settlements')).toEqual([{ settlement_id: 'st-cut' }]);
  });

  it('a settlement that committed but whose answer was lost is proved landed by readback, once', async () => {
    const a = await pg.database();
    let armed = false;
    const lost: PgDatabase = {
      ...a,
      query: (sql, params) => a.query(sql, params),
      transaction: async (body, options) => {
        const value = await a.transaction(body, options);
        if (!options?.readOnly && armed) {
          armed = false;
          throw new PgCommitAmbiguous(new Error('the answer to COMMIT never arrived'));
        }
        return value;
      },
    };
    const store = sessionStore(openPgSessionPort(lost));
    const { turn } = await boundTurn(store);
    const request = { settlement_id: 'st-landed', status: 'stopped' as const, expected_execution_generation: 2 };
    armed = true;
    const settled = await store.settleTurn(turn.turn_key, request);
    expect(armed, 'the commit was cut').toBe(false);
    expect(settled.replayed).toBe(false);
    expect(await store.settleTurn(turn.turn_key, request)).toEqual({ settlement: settled.settlement, replayed: true });
    expect(await a.query('SELECT count(*)::int AS n FROM settlements')).toEqual([{ n: 1 }]);
  });

  it('refuses a schema it was not migrated to or one newer than it knows, and rows damaged under it', async () => {
    const unmigrated = pg.pool(pg.schema());
    const port = openPgSessionPort(unmigrated);
    expect((await rejectionOf(() => port.read({ session_id: 'ses_1' }))).code).toBe('pg_schema_not_migrated');
    await migratePostgres(unmigrated, 'session', SESSION_PG_MIGRATIONS);
    const store = sessionStore(port);
    const s = await store.openSession({ goal_id: 'g1', goal_instance_id: 'gi_1' });

    await unmigrated.query("UPDATE sessions SET updated_at = 'yesterday'");
    expect((await rejectionOf(() => store.getSession(s.session_id))).code).toBe('session_store_corrupt');
    await unmigrated.query("UPDATE loopx_schema_versions SET version = 99 WHERE component = 'session'");
    expect((await rejectionOf(() => openPgSessionPort(unmigrated).read({ session_id: s.session_id }))).code).toBe(
      'pg_schema_version_unknown',
    );
  });
});

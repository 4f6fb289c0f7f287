/**
 * The installation's fence against the real server, with one connection per actor and latches on
 * the server's own lock waits (no sleeps decide anything): a rotation waits for every writer
 * admitted before it and holds back every writer arriving during it, which is then refused; any
 * UPDATE of the row is ordered the same way; a writer at a stricter isolation level whose snapshot
 * predates a rotation fails; the live server a connection keeps is its own and is compared with
 * the row on every write; and a schema migrated by the first installation version keeps its
 * writers after `loopx db migrate`, its recording not mistaken for a restore.
 */
import { afterEach, expect, it } from 'vitest';
import {
  INSTALLATION_COMPONENT,
  INSTALLATION_MIGRATIONS,
  activateInstallation,
  admissionOf,
  admit,
  forgetAdmission,
  migratePostgres,
  openPostgres,
  readInstallation,
  rotateInstallation,
  type PgAdmission,
  type PgDatabase,
  type PgQuery,
} from '../../src/store/index.js';
import { PG_URL, describePg, pgSchemas } from '../support/pg.js';

const schemas = pgSchemas();
const opened: PgDatabase[] = [];
afterEach(async () => {
  for (const d of opened.splice(0)) await d.close().catch(() => undefined);
});

/** One connection on `schema` (a pool of one: its session settings are its own). */
function connection(schema: string): PgDatabase {
  const d = openPostgres({ url: PG_URL, schema, max: 1 });
  opened.push(d);
  return d;
}

async function installed(): Promise<{ schema: string; admin: PgDatabase; admission: PgAdmission }> {
  const schema = schemas();
  const admin = connection(schema);
  await migratePostgres(admin, INSTALLATION_COMPONENT, INSTALLATION_MIGRATIONS);
  return { schema, admin, admission: await admissionOf(admin) };
}

/** A transaction held open on `db` until `release()`: `q` runs in it, `pid` is its backend, `done` settles at its end. */
function hold(db: PgDatabase, isolation: 'read committed' | 'repeatable read' = 'read committed') {
  let release!: () => void;
  const released = new Promise<void>((r) => (release = r));
  let ready!: (v: { q: PgQuery; pid: number }) => void;
  const opening = new Promise<{ q: PgQuery; pid: number }>((r) => (ready = r));
  const done = db.transaction(
    async (q) => {
      const [row] = await q<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      ready({ q, pid: row!.pid });
      await released;
    },
    { isolation },
  );
  done.catch(() => undefined);
  return { opening, release, done };
}

/** Latch: the backend waiting for a lock the backend `pid` holds (polled; fails after a generous bound). */
async function blockedBy(admin: PgDatabase, pid: number): Promise<number> {
  for (let i = 0; i <= 1200; i++) {
    const [row] = await admin.query<{ pid: number }>(
      'SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid)) LIMIT 1',
      [pid],
    );
    if (row) return row.pid;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`no backend ever waited for ${pid}`);
}

const codeOf = (p: Promise<unknown>): Promise<unknown> =>
  p.then(
    () => 'admitted',
    (e: unknown) => (e as { code?: unknown }).code,
  );

describePg('the installation fences writers against rotations, on the real server', () => {
  it('a rotation waits for the writers admitted before it and refuses those arriving during it', async () => {
    const { schema, admin, admission } = await installed();
    const order: string[] = [];
    const before = hold(connection(schema));
    const { q: beforeQ, pid: beforePid } = await before.opening;
    await admit(beforeQ, admission);

    let minted!: (pid: number) => void;
    const mintedAt = new Promise<number>((r) => (minted = r));
    let mayCommit!: () => void;
    const commitLatch = new Promise<void>((r) => (mayCommit = r));
    const rotation = connection(schema).transaction(async (q) => {
      const v = (await readInstallation(q, true))!;
      const next = await rotateInstallation(q, v);
      const [row] = await q<{ pid: number }>('SELECT pg_backend_pid() AS pid');
      minted(row!.pid);
      await commitLatch;
      return next;
    });
    void rotation.then(() => order.push('rotation committed'));

    // The rotation's first transaction waits for the writer in flight; it commits first.
    await blockedBy(admin, beforePid);
    before.release();
    await before.done;
    order.push('writer committed');
    const rotatorPid = await mintedAt;

    // A writer arriving while the rotation is uncommitted waits for it, then is refused in the database.
    const arriving = codeOf(connection(schema).transaction((q) => admit(q, admission)));
    await blockedBy(admin, rotatorPid);
    mayCommit();
    const rotated = await rotation;
    expect(await arriving).toBe('LXR01'); // `rotating`: only the rotator's own connections are admitted
    expect(order).toEqual(['writer committed', 'rotation committed']);
    await admin.transaction((q) => activateInstallation(q, rotated));
    expect(await codeOf(connection(schema).transaction((q) => admit(q, admission)))).toBe('LXW01');
  });

  it('any UPDATE of the installation row waits for the writers in flight, not only a rotation', async () => {
    const { schema, admin, admission } = await installed();
    const writer = hold(connection(schema));
    const { q, pid } = await writer.opening;
    await admit(q, admission);
    let updated = false;
    const update = connection(schema)
      .query(`UPDATE loopx_installation SET rotated_at = 'by hand'`)
      .then(() => (updated = true));
    await blockedBy(admin, pid);
    expect(updated).toBe(false);
    writer.release();
    await writer.done;
    await update;
    expect(updated).toBe(true);
  });

  it('a writer at REPEATABLE READ whose snapshot predates a rotation fails instead of being admitted', async () => {
    const { schema, admission } = await installed();
    const writer = hold(connection(schema), 'repeatable read');
    const { q } = await writer.opening; // its first statement took the snapshot
    await connection(schema).transaction(async (r) => rotateInstallation(r, (await readInstallation(r, true))!));
    expect(await codeOf(admit(q, admission))).toBe('40001');
    writer.release();
  });

  it('the live server is read on every write, and no setting a client can make stands in for it', async () => {
    const { schema, admin, admission } = await installed();
    const writer = connection(schema);
    await writer.transaction((q) => admit(q, admission));
    const view = (await admin.transaction((q) => readInstallation(q)))!;
    const [port] = await admin.query<{ port: string }>(`SELECT current_setting('port') AS port`);
    expect(view.recorded_server).toEqual({ ...view.live_server });
    expect(view.live_server.port).toBe(Number(port!.port));

    // The recording moves (as on a copy taken elsewhere): the connection already admitted is refused on its next write.
    await admin.query(`UPDATE loopx_installation SET timeline = timeline + 1`);
    expect(await codeOf(writer.transaction((q) => admit(q, admission)))).toBe('LXR01');
    // A session claiming the moved recording is live (the setting the second installation version kept) is not believed.
    const spoofing = connection(schema);
    const [pid] = await spoofing.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    await spoofing.query(`SELECT set_config('loopx.live_server', $1, false)`, [
      `${pid!.pid}:${view.live_server.system_identifier}:${view.live_server.timeline + 1}:${view.live_server.database_oid}`,
    ]);
    expect(await codeOf(spoofing.transaction((q) => admit(q, admission)))).toBe('LXR01');
    await admin.query(`UPDATE loopx_installation SET timeline = timeline - 1`);
    expect(await codeOf(writer.transaction((q) => admit(q, admission)))).toBe('admitted');

    // A port not the server's (a copy on this host listens on another one): refused, and named.
    await admin.query(`UPDATE loopx_installation SET server_port = server_port + 1`);
    expect(await codeOf(writer.transaction((q) => admit(q, admission)))).toBe('LXR01');
    expect(await admin.transaction((q) => readInstallation(q))).toMatchObject({
      state: 'restored_pending_rotation',
      changed: ['server_port'],
    });
    await admin.query(`UPDATE loopx_installation SET server_port = server_port - 1`);
    expect(await codeOf(writer.transaction((q) => admit(q, admission)))).toBe('admitted');
  });

  it('a handle refused after a rotation reads its admission once more, and never goes back to the refused generation', async () => {
    const { schema, admin } = await installed();
    const daemon = connection(schema);
    const first = await admissionOf(daemon);
    expect(first.restore_generation).toBe(0);
    const rotated = await admin.transaction(async (q) => rotateInstallation(q, (await readInstallation(q, true))!));
    await admin.transaction((q) => activateInstallation(q, rotated));
    expect(await codeOf(daemon.transaction((q) => admit(q, first)))).toBe('LXW01');
    // Refused at generation 0: read again, once — at the rotated generation.
    forgetAdmission(daemon, 0);
    const again = await admissionOf(daemon);
    expect(again).toEqual(rotated);
    forgetAdmission(daemon, 0); // a second write refused at 0 forgets nothing more
    expect(await admissionOf(daemon)).toBe(again);
    expect(await codeOf(daemon.transaction((q) => admit(q, again)))).toBe('admitted');
    // The handle then reaches a server still holding generation 1's predecessor: refused, however it is read.
    await admin.query(`UPDATE loopx_installation SET store_identity = $1, restore_generation = 0`, [
      first.store_identity,
    ]);
    forgetAdmission(daemon, 1);
    const back = await admissionOf(daemon);
    expect(back.restore_generation).toBe(0);
    expect(back.refused?.code).toBe('store_superseded');
    expect(await codeOf(daemon.transaction((q) => admit(q, back)))).toBe('store_superseded');
  });

  it('a schema of the first installation version keeps its writers after loopx db migrate, and is not taken for a restore', async () => {
    const schema = schemas();
    const old = connection(schema);
    // What the first version's migrator left: its tables, its function, its row (timeline from the last checkpoint).
    await old.transaction(async (q) => {
      await q(`CREATE SCHEMA "${schema}"`);
      await q(`CREATE TABLE loopx_schema_versions (component TEXT PRIMARY KEY, version INTEGER NOT NULL CHECK (version >= 1),
                 applied_at TIMESTAMPTZ NOT NULL DEFAULT now())`);
      await q(INSTALLATION_MIGRATIONS.find((m) => m.version === 1)!.sql);
      await q(`INSERT INTO loopx_schema_versions (component, version) VALUES ('loopx', 1)`);
      await q(`INSERT INTO loopx_installation (store_identity, restore_generation, state, system_identifier, timeline, database_oid, table_oid, created_at)
               SELECT 'postgresql:${'ab'.repeat(16)}', 0, 'active', (SELECT system_identifier::text FROM pg_control_system()),
                 (SELECT timeline_id FROM pg_control_checkpoint()), (SELECT oid FROM pg_database WHERE datname = current_database()),
                 'loopx_installation'::regclass::oid, 'then'`);
    });
    const admission = await admissionOf(old);
    await old.transaction((q) => admit(q, admission));

    expect(await migratePostgres(connection(schema), INSTALLATION_COMPONENT, INSTALLATION_MIGRATIONS)).toEqual({
      from: 1,
      to: 3,
    });
    expect(await codeOf(old.transaction((q) => admit(q, admission)))).toBe('admitted');
    expect(await old.transaction((q) => readInstallation(q))).toMatchObject({ state: 'active', changed: [] });
  });
});

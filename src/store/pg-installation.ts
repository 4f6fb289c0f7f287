/**
 * The installation row of a loopx PostgreSQL schema: what makes a restored copy of the schema
 * distinguishable from the original, and what fences writers at the database.
 *
 *   loopx_installation   one row: the installation's store identity (`postgresql:<hex>`), its
 *                        restore generation (0, +1 per rotation), its state (`active`,
 *                        `restored_pending_rotation`, `rotating`, `superseded`), and the server it was
 *                        recorded on — system identifier, timeline, database OID, port — plus the
 *                        OID of this very table (a logical restore re-creates it, in any database)
 *   loopx_admit(identity, generation)   what every owner write runs first, inside its own
 *                        transaction: it raises a loopx SQLSTATE when the schema was restored (the
 *                        live server, timeline, database or table is not the recorded one, or the
 *                        state says so), was superseded by a restored copy, or was rotated since the
 *                        writer was admitted
 *
 * A writer is admitted once per process and pool (`admissionOf`): the identity and generation it
 * read when it first used the schema. It is never refreshed, so a process that opened the schema
 * before a rotation fails every later write in the database — restarting it admits it again. A
 * rotation mints the new identity and generation in state `rotating` — where only connections
 * started with the startup setting `loopx.rotation=<new identity>` (the rotator's own) are
 * admitted, to revoke the authority the state grants — and then makes it `active`.
 *
 * Ordering (installation migration 2): a writer's admission takes the table `IN ROW SHARE MODE`
 * and then reads the row plainly; anything that changes the row — a rotation, its activation, a
 * supersede, and any other UPDATE or DELETE through the `loopx_installation_exclusive` trigger —
 * holds the table `IN EXCLUSIVE MODE` until it commits. The two modes conflict, so a writer
 * admitted under the old row commits before the change can, and a writer arriving during the
 * change waits for its commit; its read, a statement of its own in READ COMMITTED, then takes a
 * snapshot that holds the committed change (a transaction at a stricter isolation level, whose
 * snapshot may be older, locks the row `FOR SHARE` as well and fails on a change instead). ROW
 * SHARE is a fast-path lock, kept in the backend's own memory while nothing holds EXCLUSIVE: no
 * tuple written, no WAL, no MultiXact, as the `FOR SHARE` of migration 1 needed with concurrent
 * writers; plain readers (`db status`, a backup's snapshot) take ACCESS SHARE, which EXCLUSIVE
 * lets through.
 *
 * The live server (installation migration 3) is read by the server on every admission, never
 * kept: its system identifier, its timeline, the database's OID, the port it was started on, and
 * the row's own `tableoid`. None of them is a value a client can set — no session setting, no
 * startup option — so a connection cannot claim another server's facts. A physical copy
 * (`pg_basebackup`, a file-system snapshot) keeps the system identifier, the OIDs and, started
 * without recovery, the timeline; it cannot listen on the original's port on the same host, and a
 * point-in-time restore or a promoted standby writes on a new timeline. What the server's facts
 * cannot tell apart is a copy started without recovery on another host, on the original's port:
 * that one is told apart only once either side is rotated. The root records the installation it is
 * bound to (`binding` of `openPostgres`), so a server holding an older one than the root — the old
 * primary after a failover, a copy from before a rotation — is refused as superseded
 * (`admissionOf`), even when the server's own facts still match its row.
 */
import { randomBytes } from 'node:crypto';
import { rejected, type LoopxError } from '../core/index.js';
import type { InstallationBinding, PgDatabase, PgMigration, PgQuery, PgServerIdentity } from './postgres.js';
import { formatStoreIdentity } from './providers.js';

/** The component `loopx db migrate` records the installation tables under. */
export const INSTALLATION_COMPONENT = 'loopx';

export const INSTALLATION_STATES = ['active', 'restored_pending_rotation', 'rotating', 'superseded'] as const;
export type InstallationState = (typeof INSTALLATION_STATES)[number];

/**
 * The live server's timeline: the one its WAL is written on now (the first 8 hex digits of the
 * current WAL file's name), which a promotion or a point-in-time restore moves at once; on a
 * standby, which writes nothing, its last restartpoint's. Every recording and comparison reads it
 * (`serverIdentity` too); migration 2's text holds it, so a change to it is a new migration.
 */
export const LIVE_TIMELINE = `CASE WHEN pg_is_in_recovery() THEN (SELECT timeline_id FROM pg_control_checkpoint())::bigint
    ELSE ('x' || substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8))::bit(32)::bigint END`;

/**
 * The restore generation of the schema's installation (0 while it has none), for a component whose
 * own numbering must move past every earlier incarnation's (the run authority's lease epochs).
 */
export const INSTALLATION_GENERATION = `coalesce((SELECT restore_generation FROM loopx_installation), 0)`;

/**
 * The port the server was started on: a postmaster setting, which no session and no startup option
 * can change (a connection through a proxy sees the server's, not the proxy's).
 */
const LIVE_PORT = `current_setting('port')::bigint`;

/** The live server as the admission check compares it, the same facts every recording takes (one expression list). */
const LIVE_SERVER = `(SELECT system_identifier::text FROM pg_control_system()) AS system_identifier,
  ${LIVE_TIMELINE} AS timeline,
  (SELECT oid::bigint FROM pg_database WHERE datname = current_database()) AS database_oid,
  'loopx_installation'::regclass::oid::bigint AS table_oid,
  ${LIVE_PORT} AS server_port`;

/** Migration 1's live server, kept as it was applied (its text never changes). */
const LIVE_SERVER_V1 = `(SELECT system_identifier::text FROM pg_control_system()) AS system_identifier,
  (SELECT timeline_id FROM pg_control_checkpoint()) AS timeline,
  (SELECT oid::bigint FROM pg_database WHERE datname = current_database()) AS database_oid,
  'loopx_installation'::regclass::oid::bigint AS table_oid`;

/** Append-only, applied by `migratePostgres` before any component's own steps. */
export const INSTALLATION_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    sql: `CREATE TABLE loopx_installation (
       singleton BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (singleton),
       store_identity TEXT NOT NULL,
       restore_generation BIGINT NOT NULL CHECK (restore_generation >= 0),
       state TEXT NOT NULL CHECK (state IN ('active', 'restored_pending_rotation', 'rotating', 'superseded')),
       system_identifier TEXT NOT NULL,
       timeline BIGINT NOT NULL,
       database_oid BIGINT NOT NULL,
       table_oid BIGINT NOT NULL,
       created_at TEXT NOT NULL,
       rotated_at TEXT,
       superseded_by TEXT);
     CREATE FUNCTION loopx_admit(p_identity TEXT, p_generation BIGINT) RETURNS void LANGUAGE plpgsql AS $fn$
     DECLARE
       r RECORD;
       live RECORD;
     BEGIN
       SELECT * INTO r FROM loopx_installation FOR SHARE;
       IF NOT FOUND THEN
         RAISE EXCEPTION 'loopx: this schema has no installation row' USING ERRCODE = 'LXI01';
       END IF;
       IF r.state = 'superseded' THEN
         RAISE EXCEPTION 'loopx: superseded by a restored copy' USING ERRCODE = 'LXS01';
       END IF;
       SELECT ${LIVE_SERVER_V1} INTO live;
       IF r.state = 'restored_pending_rotation'
          OR (r.state = 'rotating' AND coalesce(current_setting('loopx.rotation', true), '') <> r.store_identity)
          OR r.system_identifier <> live.system_identifier OR r.timeline <> live.timeline
          OR r.database_oid <> live.database_oid OR r.table_oid <> live.table_oid THEN
         RAISE EXCEPTION 'loopx: restored, pending rotation' USING ERRCODE = 'LXR01';
       END IF;
       IF r.store_identity <> p_identity OR r.restore_generation <> p_generation THEN
         RAISE EXCEPTION 'loopx: admitted before a rotation' USING ERRCODE = 'LXW01';
       END IF;
     END
     $fn$;`,
  },
  {
    // Writers ordered against rotations by table locks instead of a shared row lock; the live server read once per connection.
    version: 2,
    sql: `CREATE OR REPLACE FUNCTION loopx_admit(p_identity TEXT, p_generation BIGINT) RETURNS void LANGUAGE plpgsql AS $fn$
     DECLARE
       r RECORD;
       live TEXT[] := string_to_array(current_setting('loopx.live_server', true), ':');
     BEGIN
       LOCK TABLE loopx_installation IN ROW SHARE MODE;
       IF current_setting('transaction_isolation') = 'read committed' THEN
         SELECT i.*, i.tableoid::bigint AS live_table_oid INTO r FROM loopx_installation i;
       ELSE
         SELECT i.*, i.tableoid::bigint AS live_table_oid INTO r FROM loopx_installation i FOR SHARE;
       END IF;
       IF NOT FOUND THEN
         RAISE EXCEPTION 'loopx: this schema has no installation row' USING ERRCODE = 'LXI01';
       END IF;
       IF r.state = 'superseded' THEN
         RAISE EXCEPTION 'loopx: superseded by a restored copy' USING ERRCODE = 'LXS01';
       END IF;
       IF live IS NULL OR live[1] IS DISTINCT FROM pg_backend_pid()::text THEN
         SELECT ARRAY[pg_backend_pid()::text, (SELECT system_identifier::text FROM pg_control_system()), (${LIVE_TIMELINE})::text,
                      (SELECT oid::text FROM pg_database WHERE datname = current_database())] INTO live;
         IF NOT pg_is_in_recovery() THEN
           PERFORM set_config('loopx.live_server', array_to_string(live, ':'), false);
         END IF;
       END IF;
       IF r.state = 'restored_pending_rotation'
          OR (r.state = 'rotating' AND coalesce(current_setting('loopx.rotation', true), '') <> r.store_identity)
          OR r.system_identifier <> live[2] OR r.timeline::text <> live[3]
          OR r.database_oid::text <> live[4] OR r.table_oid <> r.live_table_oid THEN
         RAISE EXCEPTION 'loopx: restored, pending rotation' USING ERRCODE = 'LXR01';
       END IF;
       IF r.store_identity <> p_identity OR r.restore_generation <> p_generation THEN
         RAISE EXCEPTION 'loopx: admitted before a rotation' USING ERRCODE = 'LXW01';
       END IF;
     END
     $fn$;
     CREATE FUNCTION loopx_installation_exclusive() RETURNS trigger LANGUAGE plpgsql AS $fn$
     BEGIN
       EXECUTE format('LOCK TABLE %I.%I IN EXCLUSIVE MODE', TG_TABLE_SCHEMA, TG_TABLE_NAME);
       RETURN NULL;
     END
     $fn$;
     CREATE TRIGGER loopx_installation_exclusive BEFORE UPDATE OR DELETE ON loopx_installation
       FOR EACH STATEMENT EXECUTE FUNCTION loopx_installation_exclusive();`,
  },
  {
    // The live server read by the server on every admission (no session setting a client could set), and its port recorded.
    version: 3,
    sql: `ALTER TABLE loopx_installation ADD COLUMN server_port BIGINT;
     UPDATE loopx_installation SET server_port = ${LIVE_PORT};
     CREATE OR REPLACE FUNCTION loopx_admit(p_identity TEXT, p_generation BIGINT) RETURNS void LANGUAGE plpgsql AS $fn$
     DECLARE
       r RECORD;
       live RECORD;
     BEGIN
       LOCK TABLE loopx_installation IN ROW SHARE MODE;
       IF current_setting('transaction_isolation') = 'read committed' THEN
         SELECT i.*, i.tableoid::bigint AS live_table_oid INTO r FROM loopx_installation i;
       ELSE
         SELECT i.*, i.tableoid::bigint AS live_table_oid INTO r FROM loopx_installation i FOR SHARE;
       END IF;
       IF NOT FOUND THEN
         RAISE EXCEPTION 'loopx: this schema has no installation row' USING ERRCODE = 'LXI01';
       END IF;
       IF r.state = 'superseded' THEN
         RAISE EXCEPTION 'loopx: superseded by a restored copy' USING ERRCODE = 'LXS01';
       END IF;
       SELECT (SELECT system_identifier::text FROM pg_control_system()) AS system_identifier, (${LIVE_TIMELINE}) AS timeline,
              (SELECT oid::bigint FROM pg_database WHERE datname = current_database()) AS database_oid,
              ${LIVE_PORT} AS server_port INTO live;
       IF r.state = 'restored_pending_rotation'
          OR (r.state = 'rotating' AND coalesce(current_setting('loopx.rotation', true), '') <> r.store_identity)
          OR r.system_identifier <> live.system_identifier OR r.timeline <> live.timeline
          OR r.database_oid <> live.database_oid OR r.table_oid <> r.live_table_oid
          OR r.server_port IS DISTINCT FROM live.server_port THEN
         RAISE EXCEPTION 'loopx: restored, pending rotation' USING ERRCODE = 'LXR01';
       END IF;
       IF r.store_identity <> p_identity OR r.restore_generation <> p_generation THEN
         RAISE EXCEPTION 'loopx: admitted before a rotation' USING ERRCODE = 'LXW01';
       END IF;
     END
     $fn$;`,
  },
];

/**
 * What a writer was admitted under: the installation's identity and restore generation when it
 * first used the schema — and, for a schema the opener's root left behind (`binding`), the refusal
 * every write gets (`admit` throws it; reads go on).
 */
export interface PgAdmission extends InstallationBinding {
  readonly refused?: LoopxError;
}

/** A server as an installation records it: the facts a restore changes, and the port it listens on (null: recorded before ports were). */
export interface InstallationServer extends PgServerIdentity {
  readonly port: number | null;
}

/** The installation row with the live server beside it (what `loopx db status` shows and a rotation plans from). */
export interface InstallationView extends PgAdmission {
  readonly recorded_state: InstallationState;
  /** `restored_pending_rotation` when the live server, database or table is not the recorded one. */
  readonly state: InstallationState;
  readonly recorded_server: InstallationServer;
  readonly live_server: InstallationServer;
  /** Which of the recorded facts differ from the live ones (empty when none). */
  readonly changed: readonly ('system_identifier' | 'timeline' | 'database_oid' | 'table_oid' | 'server_port')[];
  readonly created_at: string;
  readonly rotated_at: string | null;
  readonly superseded_by: string | null;
}

/** Mints the row when the schema has none (the first migration of the schema). Runs in the migrator's transaction. */
export async function ensureInstallation(q: PgQuery): Promise<void> {
  await q(
    `INSERT INTO loopx_installation (store_identity, restore_generation, state, system_identifier, timeline, database_oid, table_oid,
       server_port, created_at)
     SELECT $1, 0, 'active', l.system_identifier, l.timeline, l.database_oid, l.table_oid, l.server_port, $2 FROM (SELECT ${LIVE_SERVER}) l
     ON CONFLICT (singleton) DO NOTHING`,
    [mintInstallationIdentity(), new Date().toISOString()],
  );
}

export const mintInstallationIdentity = (): string =>
  formatStoreIdentity('postgresql', randomBytes(16).toString('hex'));

const num = (v: unknown): number => Number(v);

/**
 * Held to the end of `q`'s transaction: every writer admitted before has committed, and none is
 * admitted until this transaction commits (the header's ordering; a schema still at migration 1,
 * whose writers lock the row `FOR SHARE`, is ordered by it the same way).
 */
const excludeWriters = async (q: PgQuery): Promise<void> => {
  await q('LOCK TABLE loopx_installation IN EXCLUSIVE MODE');
};

/** The row and the live server, read in `q`'s transaction (`lock`: writers excluded and the row `FOR UPDATE`, for a rotation). */
export async function readInstallation(q: PgQuery, lock = false): Promise<InstallationView | undefined> {
  if (lock) await excludeWriters(q);
  const [r] =
    await q(`SELECT i.*, l.system_identifier AS live_system_identifier, l.timeline AS live_timeline, l.database_oid AS live_database_oid,
       l.table_oid AS live_table_oid, l.server_port AS live_server_port FROM loopx_installation i, (SELECT ${LIVE_SERVER}) l${lock ? ' FOR UPDATE OF i' : ''}`);
  if (!r) return undefined;
  const changed: InstallationView['changed'][number][] = [];
  if (r.system_identifier !== r.live_system_identifier) changed.push('system_identifier');
  if (num(r.timeline) !== num(r.live_timeline)) changed.push('timeline');
  if (num(r.database_oid) !== num(r.live_database_oid)) changed.push('database_oid');
  if (num(r.table_oid) !== num(r.live_table_oid)) changed.push('table_oid');
  // A row recorded before ports were (a schema not yet migrated to installation migration 3) says nothing of its port.
  const port = r.server_port === undefined || r.server_port === null ? null : num(r.server_port);
  if (port !== null && port !== num(r.live_server_port)) changed.push('server_port');
  const recorded = r.state as InstallationState;
  return {
    store_identity: String(r.store_identity),
    restore_generation: num(r.restore_generation),
    recorded_state: recorded,
    state: recorded === 'active' && changed.length > 0 ? 'restored_pending_rotation' : recorded,
    recorded_server: {
      system_identifier: String(r.system_identifier),
      timeline: num(r.timeline),
      database_oid: num(r.database_oid),
      port,
    },
    live_server: {
      system_identifier: String(r.live_system_identifier),
      timeline: num(r.live_timeline),
      database_oid: num(r.live_database_oid),
      port: num(r.live_server_port),
    },
    changed,
    created_at: String(r.created_at),
    rotated_at: r.rotated_at === null ? null : String(r.rotated_at),
    superseded_by: r.superseded_by === null ? null : String(r.superseded_by),
  };
}

/** The installation and the live server, read in a read-only snapshot of its own (`loopx db status`, a rotation's plan); none is `store_installation_missing`. */
export function installationView(db: PgDatabase): Promise<InstallationView> {
  return db.transaction(
    async (q) => {
      const v = await readInstallation(q);
      if (v === undefined) throw installationMissing(db.schema);
      return v;
    },
    { isolation: 'repeatable read', readOnly: true },
  );
}

/** In a rotation's transaction: a new identity, the next generation, the live server recorded — `rotating`, admitting only the rotator. */
export async function rotateInstallation(q: PgQuery, from: PgAdmission): Promise<PgAdmission> {
  const next = { store_identity: mintInstallationIdentity(), restore_generation: from.restore_generation + 1 };
  await excludeWriters(q);
  const moved = await q(
    `UPDATE loopx_installation i SET store_identity = $1, restore_generation = $2, state = 'rotating', system_identifier = l.system_identifier,
       timeline = l.timeline, database_oid = l.database_oid, table_oid = l.table_oid, server_port = l.server_port, rotated_at = $3,
       superseded_by = NULL
     FROM (SELECT ${LIVE_SERVER}) l WHERE i.store_identity = $4 AND i.restore_generation = $5 RETURNING i.store_identity`,
    [
      next.store_identity,
      next.restore_generation,
      new Date().toISOString(),
      from.store_identity,
      from.restore_generation,
    ],
  );
  if (moved.length !== 1) throw installationMoved();
  return next;
}

/** The rotation's last step: the rotated installation admits writers. */
export async function activateInstallation(q: PgQuery, rotated: PgAdmission): Promise<void> {
  await excludeWriters(q);
  const moved = await q(
    `UPDATE loopx_installation SET state = 'active' WHERE state = 'rotating' AND store_identity = $1 AND restore_generation = $2 RETURNING singleton`,
    [rotated.store_identity, rotated.restore_generation],
  );
  if (moved.length !== 1) throw installationMoved();
}

/** The startup setting that admits a connection to a `rotating` installation: the rotator's own pool only. */
export const rotationSetting = (rotated: PgAdmission): Record<string, string> => ({
  'loopx.rotation': rotated.store_identity,
});

/** On the original service, once its restored copy is rotated: every later write there is refused. */
export async function supersedeInstallation(q: PgQuery, by: string): Promise<boolean> {
  await excludeWriters(q);
  const rows = await q(
    `UPDATE loopx_installation SET state = 'superseded', superseded_by = $1 WHERE state <> 'superseded' RETURNING singleton`,
    [by],
  );
  return rows.length === 1;
}

/** Whether the schema behind `db` holds a loopx installation (any state). */
export async function installationExists(db: PgDatabase): Promise<boolean> {
  const [r] = await db.query<{ present: boolean }>('SELECT to_regclass($1) IS NOT NULL AS present', [
    `"${db.schema}".loopx_installation`,
  ]);
  return r?.present === true;
}

const admissions = new WeakMap<PgDatabase, Promise<PgAdmission>>();
/** The admission each database handle holds now, once read (what `forgetAdmission` compares). */
const held = new WeakMap<PgDatabase, PgAdmission>();
/** The least restore generation a handle may be admitted at again (`forgetAdmission`: never back). */
const floors = new WeakMap<PgDatabase, number>();

/**
 * What this process's writers on `db` are admitted under — read once, on first use, and kept
 * (a failed read is not kept). A schema already refusing writers refuses here too, typed.
 */
export function admissionOf(db: PgDatabase): Promise<PgAdmission> {
  let a = admissions.get(db);
  if (a === undefined) {
    a = db
      .transaction(
        async (q) => {
          const view = await readInstallation(q);
          if (view === undefined) throw installationMissing(db.schema);
          const admission = { store_identity: view.store_identity, restore_generation: view.restore_generation };
          const refused = bindingRefusal(db, admission);
          const out = refused === undefined ? admission : { ...admission, refused };
          held.set(db, out);
          return out;
        },
        { isolation: 'repeatable read', readOnly: true },
      )
      .catch((e: unknown) => {
        admissions.delete(db);
        throw e;
      });
    admissions.set(db, a);
  }
  return a;
}

/**
 * The root's record of its installation against the schema's: a schema at an older restore
 * generation than the root is bound to is an incarnation the root left behind — the old primary
 * after a failover and its rotation, a copy from before a rotation — whose own facts may all still
 * match its row (`store_superseded`); one at the same generation under another identity is a sibling
 * copy rotated elsewhere. A newer one (rotated through another root sharing the schema) is admitted.
 */
function bindingRefusal(db: PgDatabase, admission: PgAdmission): LoopxError | undefined {
  if (admission.restore_generation < (floors.get(db) ?? 0)) return storeSuperseded(db.schema);
  switch (bindingOf(db.binding, admission)) {
    case 'older':
      return storeSuperseded(db.schema);
    case 'other':
      return restoredPendingRotation(db.schema, undefined, db.reference);
    default:
      return undefined;
  }
}

/** Throws the refusal an admission carries (a schema the opener's root left behind): before any write's first statement. */
export function assertAdmitted(admission: PgAdmission): void {
  if (admission.refused !== undefined) throw admission.refused;
}

/** How a schema's installation stands to the one a root is bound to (`loopx db status`). */
export function bindingOf(
  bound: InstallationBinding | undefined,
  row: PgAdmission,
): 'unbound' | 'bound' | 'older' | 'newer' | 'other' {
  if (bound === undefined) return 'unbound';
  if (row.restore_generation < bound.restore_generation) return 'older';
  if (row.restore_generation > bound.restore_generation) return 'newer';
  return row.store_identity === bound.store_identity ? 'bound' : 'other';
}

/**
 * After a write admitted at `refusedGeneration` was refused `store_writer_stale` (the schema was
 * rotated since): the next write through `db` reads its admission anew — once, however many
 * writes were refused alike — and is never admitted again at that generation or an older one (a
 * pool that still reaches the old server after an address moved finds it superseded). Only for a
 * process whose every authority the rotation revoked (a cluster daemon: its run leases), so
 * nothing it believed it held is written under the new identity without being taken again.
 */
export function forgetAdmission(db: PgDatabase, refusedGeneration: number): void {
  if ((floors.get(db) ?? 0) <= refusedGeneration) floors.set(db, refusedGeneration + 1);
  if (held.get(db)?.restore_generation === refusedGeneration) {
    admissions.delete(db);
    held.delete(db);
  }
}

/** The first statement of every owner write: the installation checked in the write's own transaction. */
export async function admit(q: PgQuery, admission: PgAdmission): Promise<void> {
  assertAdmitted(admission);
  await q('SELECT loopx_admit($1, $2)', [admission.store_identity, admission.restore_generation]);
}

/**
 * The typed refusal for a loopx SQLSTATE raised by `loopx_admit`, or undefined for any other error.
 * `goalId`: the writer is that Goal's work store, whose schema `loopx db rotate --goal` rotates.
 */
export function installationRefusal(
  e: unknown,
  schema: string,
  goalId?: string,
  reference?: string,
  admitted?: PgAdmission,
): LoopxError | undefined {
  switch ((e as { code?: unknown })?.code) {
    case 'LXR01':
      return restoredPendingRotation(schema, goalId, reference);
    case 'LXS01':
      return storeSuperseded(schema);
    case 'LXW01':
      return writerStale(schema, admitted);
    case 'LXI01':
      return installationMissing(schema);
    default:
      return undefined;
  }
}

/** `reference`: the `env:NAME` the refused process reached the copy through (the root's own), named again in the next action. */
export const restoredPendingRotation = (
  schema: string,
  goalId?: string,
  reference = 'env:LOOPX_DATABASE_URL',
): LoopxError =>
  rejected(
    'store_restored_pending_rotation',
    `Schema ${schema} is a restored copy (or sits on another server than it was recorded on); no write is admitted before its identity is rotated.`,
    {
      nextAction:
        goalId === undefined
          ? `name the restored database’s URL again to preview its rotation: loopx db rotate --database-url ${reference}`
          : `name the restored database’s URL again to preview its rotation: loopx db rotate --goal ${goalId} --database-url ${reference}`,
      details: goalId === undefined ? { schema } : { schema, goal_id: goalId },
    },
  );

export const storeSuperseded = (schema: string): LoopxError =>
  rejected(
    'store_superseded',
    `Schema ${schema} on this server was superseded (by a restored copy, or a standby promoted in a failover); it admits no write.`,
    {
      nextAction: 'point this process at the database the root was rotated to, and start it again',
      details: { schema },
    },
  );

/** `admitted`: the admission the refused write carried (its generation is in the details: `forgetAdmission`). */
export const writerStale = (schema: string, admitted?: PgAdmission): LoopxError =>
  rejected(
    'store_writer_stale',
    `Schema ${schema} was rotated after this process first used it; its writes are no longer admitted.`,
    {
      nextAction: 'start the process again (it is admitted under the rotated identity)',
      details: admitted === undefined ? { schema } : { schema, admitted_generation: admitted.restore_generation },
    },
  );

export const installationMissing = (schema: string): LoopxError =>
  rejected('store_installation_missing', `Schema ${schema} has no loopx installation row.`, {
    nextAction: 'apply the migrations: loopx db migrate',
    details: { schema },
  });

const installationMoved = (): LoopxError =>
  rejected('store_rotation_raced', 'The installation changed while it was being rotated; nothing was rotated.', {
    nextAction: 'preview the rotation again: loopx db rotate',
  });

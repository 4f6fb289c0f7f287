/**
 * `loopx db status` and `loopx db rotate`: the installation of a root's PostgreSQL schema as the
 * database says it is, and the mandatory rotation after an administrative restore.
 *
 * A restored schema (its recorded server, timeline, database or table is not the live one) admits
 * no write until it is rotated. Rotating asks for the database URL reference again (a restored
 * copy is never trusted through the reference it was copied with), previews a plan — what was
 * detected, the next restore generation, the authority the Goals' work stores grant — bound by a
 * digest, and only with `--confirm <digest>`:
 *   1. mints a new store identity and the next restore generation in state `rotating`, with the
 *      live server recorded (every writer admitted before is refused from then on);
 *   2. revokes every active lease and writer fence of the Goals' work (the rotator's pool alone is
 *      admitted while `rotating`);
 *   3. supersedes the original service when the root's previous reference still reaches it (its
 *      writers are refused there, in its database);
 *   4. admits writers (`active`) and records the reference in the root's configuration.
 * Interrupted, it is run again and resumes at the step it reached (each step reads back first).
 */
import { randomBytes } from 'node:crypto';
import { canonicalJson, conflict, faultPoint, rejected, sha256Hex, usageError, type LoopxError } from '../core/index.js';
import { config as configOwner, STORE_CONFIG_NAMESPACE, work as workOwner } from '../owners/index.js';
import {
  activateInstallation,
  databaseUrlFrom,
  installationMissing,
  openPostgres,
  readInstallation,
  rotateInstallation,
  rotationSetting,
  supersedeInstallation,
  type InstallationView,
  type PgAdmission,
  type PgDatabase,
} from '../store/index.js';
import { withAdmission } from './admission.js';
import { readStoreConfig, type StoreConfig } from './store-config.js';

export const ROTATION_PLAN_SCHEMA = 'loopx_db_rotation_plan_v0';

type PgConfig = Extract<StoreConfig, { provider: 'postgresql' }>;

/** `loopx db status`: the installation and the server it sits on now. */
export interface DbStatus {
  readonly provider: string;
  readonly schema: string | null;
  readonly installation: Omit<InstallationView, 'created_at' | 'rotated_at' | 'superseded_by'> | null;
}

/** What `loopx db rotate` would do, bound by `digest`. */
export interface RotationPlan {
  readonly schema_version: typeof ROTATION_PLAN_SCHEMA;
  readonly schema: string;
  /** The reference the root is bound to after the rotation, and the one it was bound to (the original service's). */
  readonly database_url: string;
  readonly previous_database_url: string | null;
  readonly state: InstallationView['state'];
  readonly restore_detected: boolean;
  readonly changed: InstallationView['changed'];
  readonly store_identity: string;
  readonly restore_generation: number;
  readonly next_restore_generation: number;
  readonly goals: readonly workOwner.GrantedAuthority[];
  readonly digest: string;
}

export type OriginalFence = 'superseded' | 'already_superseded' | 'not_named' | 'unreachable' | 'not_the_original';

export interface RotationResult {
  readonly schema: string;
  readonly database_url: string;
  readonly store_identity: string;
  readonly restore_generation: number;
  readonly revoked: readonly (workOwner.GrantedAuthority & { readonly result: 'revoked' | 'already' | 'none' })[];
  readonly original: OriginalFence;
}

async function withDb<T>(config: PgConfig, reference: string, fn: (db: PgDatabase) => Promise<T>, settings?: Record<string, string>): Promise<T> {
  const db = openPostgres({ url: databaseUrlFrom(reference), schema: config.schema, max: 2, ...(settings ? { settings } : {}) });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

const pgConfigOf = async (root: string): Promise<PgConfig> => {
  const config = await readStoreConfig(root);
  if (config.provider !== 'postgresql') throw notOnPostgres();
  return config;
};

const installationOf = (db: PgDatabase): Promise<InstallationView> =>
  db.transaction(
    async (q) => {
      const v = await readInstallation(q);
      if (v === undefined) throw installationMissing(db.schema);
      return v;
    },
    { isolation: 'repeatable read', readOnly: true },
  );

/** `loopx db status`. */
export async function dbStatus(root: string): Promise<DbStatus> {
  const config = await readStoreConfig(root);
  if (config.provider !== 'postgresql') return { provider: config.provider, schema: null, installation: null };
  return withDb(config, config.database_url, async (db) => {
    const { created_at: _c, rotated_at: _r, superseded_by: _s, ...installation } = await installationOf(db);
    return { provider: config.provider, schema: config.schema, installation };
  });
}

/** The plan for binding the root to `reference` (its own when omitted — refused when a restore is detected). */
export async function planRotation(root: string, reference?: string): Promise<RotationPlan> {
  const config = await pgConfigOf(root);
  const bind = reference ?? config.database_url;
  return withDb(config, bind, async (db) => {
    const v = await installationOf(db);
    if (v.state === 'superseded') throw supersededHere(config.schema);
    // A rotation interrupted midway (`rotating`) already re-recorded the server: it resumes with the reference it is given, or the root's.
    const restoreDetected = v.state === 'restored_pending_rotation';
    if (restoreDetected && reference === undefined) throw urlRequired();
    const body = {
      schema_version: ROTATION_PLAN_SCHEMA,
      schema: config.schema,
      database_url: bind,
      previous_database_url: bind === config.database_url ? null : config.database_url,
      state: v.state,
      restore_detected: restoreDetected,
      changed: v.changed,
      store_identity: v.store_identity,
      restore_generation: v.restore_generation,
      next_restore_generation: v.state === 'rotating' ? v.restore_generation : v.restore_generation + 1,
      goals: await workOwner.grantedAuthority(db),
    } as const;
    return { ...body, digest: sha256Hex(canonicalJson(body)) };
  });
}

/** `loopx db rotate --confirm <digest>`: the plan's digest must be the one previewed. */
export async function rotateStore(root: string, confirm: string, reference?: string): Promise<RotationResult> {
  const plan = await planRotation(root, reference);
  if (plan.digest !== confirm) throw confirmMismatch(plan.database_url);
  const config = await pgConfigOf(root);
  return withAdmission(root, 'db rotate', () =>
    withDb(config, plan.database_url, async (db) => {
      // 1. The new identity and generation, `rotating` (resumed as they are when a run was interrupted).
      const rotated = await db.transaction(async (q): Promise<PgAdmission> => {
        const v = await readInstallation(q, true);
        if (v === undefined) throw installationMissing(config.schema);
        if (v.store_identity !== plan.store_identity || v.restore_generation !== plan.restore_generation || v.state !== plan.state) throw planStale(plan.database_url);
        return v.state === 'rotating' ? { store_identity: v.store_identity, restore_generation: v.restore_generation } : rotateInstallation(q, v);
      });
      // 2. The authority the Goals' work grants, revoked on the rotator's own admitted pool.
      faultPoint('db.rotate.after-mint');
      const rotationId = `g${rotated.restore_generation}:${rotated.store_identity.slice(-32)}`;
      const revoked = await withDb(config, plan.database_url, (own) => workOwner.revokeGrantedAuthority(own, rotationId), rotationSetting(rotated));
      faultPoint('db.rotate.after-revoke');
      // 3. The original service, when the previous reference still reaches it.
      const original = await fenceOriginal(config, plan, rotated);
      // 4. Writers admitted; the root bound to the reference it was rotated through.
      await db.transaction((q) => activateInstallation(q, rotated));
      if (plan.previous_database_url !== null) bindReference(root, plan.database_url);
      return { schema: config.schema, database_url: plan.database_url, ...rotated, revoked, original };
    }),
  );
}

async function fenceOriginal(config: PgConfig, plan: RotationPlan, rotated: PgAdmission): Promise<OriginalFence> {
  if (plan.previous_database_url === null) return 'not_named';
  try {
    return await withDb(config, plan.previous_database_url, (db) =>
      db.transaction(async (q): Promise<OriginalFence> => {
        const v = await readInstallation(q, true);
        if (v === undefined || v.store_identity !== plan.store_identity || v.restore_generation !== plan.restore_generation) return 'not_the_original';
        if (v.recorded_state === 'superseded') return 'already_superseded';
        return (await supersedeInstallation(q, rotated.store_identity)) ? 'superseded' : 'already_superseded';
      }),
    );
  } catch {
    // The original is gone, refuses the role, or its reference no longer resolves: nothing of it can be written by loopx through the root.
    return 'unreachable';
  }
}

function bindReference(root: string, reference: string): void {
  const store = configOwner.openFileConfigStore(root);
  const current = store.read();
  const ns = current.value.namespaces[STORE_CONFIG_NAMESPACE]!;
  store.apply({
    expectedRevision: current.revision,
    transactionId: `store-rebind-${randomBytes(8).toString('hex')}`,
    changes: { [STORE_CONFIG_NAMESPACE]: { ...ns, database_url: reference } },
  });
}

const notOnPostgres = (): LoopxError =>
  usageError('db_not_postgresql', 'This root keeps its Goal state in SQLite files; it has no database to rotate.', 'use it on a root whose Goal state lives in PostgreSQL');

const supersededHere = (schema: string): LoopxError =>
  rejected('db_rotation_superseded', `Schema ${schema} on this server was superseded by a restored copy; it is never rotated back.`, {
    nextAction: 'rotate the restored copy instead: loopx db rotate --database-url env:LOOPX_DATABASE_URL',
    details: { schema },
  });

const urlRequired = (): LoopxError =>
  rejected('db_rotation_url_required', 'The schema is a restored copy; name the database URL again to rotate it (a copied reference is never trusted).', {
    nextAction: 'name the database URL again to preview the rotation: loopx db rotate --database-url env:LOOPX_DATABASE_URL',
  });

const confirmMismatch = (reference: string): LoopxError =>
  conflict('db_rotation_confirm_mismatch', 'The confirmed digest is not the digest of the rotation plan now.', {
    nextAction: `preview the plan again: loopx db rotate --database-url ${reference}`,
  });

const planStale = (reference: string): LoopxError =>
  conflict('db_rotation_plan_stale', 'The installation changed after the plan was made; nothing was rotated.', {
    nextAction: `preview the plan again: loopx db rotate --database-url ${reference}`,
  });

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
 *   4. records the reference and the rotated installation in the root's configuration, then admits
 *      writers (`active`);
 *   5. raises, at each receiver the schema's Goals delivered to, the Goal's fence to the rotated
 *      installation's, so a process left on the superseded one is refused there.
 * Interrupted, it is run again and resumes at the step it reached (each step reads back first).
 *
 * The same holds for the schema a Goal chose for its work alone (`goal create --work-provider`):
 * `--goal <id>` rotates the schema where that Goal's work lives (its own, or the root's when it has
 * none), and rebinds every Goal record of this root that names that schema through the same
 * reference. A schema several Goals or roots share is one installation: rotating it revokes the
 * authority every Goal's work store in it grants.
 */
import { randomBytes } from 'node:crypto';
import {
  canonicalJson,
  conflict,
  faultPoint,
  isLoopxError,
  rejected,
  sha256Hex,
  usageError,
  type LoopxError,
} from '../core/index.js';
import {
  config as configOwner,
  goal as goalOwner,
  isServiceLocation,
  sameService,
  STORE_CONFIG_NAMESPACE,
  work as workOwner,
} from '../owners/index.js';
import {
  activateInstallation,
  bindingOf,
  databaseUrlFrom,
  installationMissing,
  installationView,
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
import { raiseReceiverFences, type RaisedFence } from './receiver-fences.js';
import { withAuthority, withRootOwners } from './root.js';
import { bindInstallation, goalWorkSchemas, readStoreConfig } from './store-config.js';

export const ROTATION_PLAN_SCHEMA = 'loopx_db_rotation_plan_v0';

type InstallationStatus = Omit<InstallationView, 'created_at' | 'rotated_at' | 'superseded_by'>;

/** `loopx db status`: the installation and the server it sits on now — the root's, and each schema Goals chose for their work alone. */
export interface DbStatus {
  readonly provider: string;
  readonly schema: string | null;
  readonly installation: InstallationStatus | null;
  /**
   * How the schema's installation stands to the one the root is bound to (null on SQLite):
   * `older` is an incarnation the root left behind (its state is shown `superseded`: its writers
   * are refused), `unbound` a root that recorded none yet (`loopx db migrate` records it).
   */
  readonly binding: ReturnType<typeof bindingOf> | null;
  readonly goal_work_schemas: readonly {
    readonly database_url: string;
    readonly schema: string;
    readonly goals: readonly string[];
    /** null when it could not be read; `refusal` says why. */
    readonly installation: InstallationStatus | null;
    readonly refusal: string | null;
  }[];
}

/** The schema a rotation rotates: the root's, or the one a Goal's work lives in (`goal_id`), with the reference it is bound through. */
interface RotationTarget {
  readonly goal_id: string | null;
  readonly schema: string;
  readonly database_url: string;
  /** Binds the root (or every Goal record naming this schema through this reference) to `reference`. */
  rebind(reference: string): void;
  /** The root's target only: records the rotated installation as the one the root is bound to. */
  bind?(rotated: PgAdmission): void;
  /** The root's target only: the installation the root is bound to now (undefined: none recorded). */
  readonly binding?: PgAdmission;
}

/** What `loopx db rotate` would do, bound by `digest`. */
export interface RotationPlan {
  readonly schema_version: typeof ROTATION_PLAN_SCHEMA;
  /** The Goal whose work schema is rotated (`--goal`), or null for the root's. */
  readonly goal_id: string | null;
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
  /** Each Goal work store's head in the copy being rotated: what it holds. */
  readonly copy_heads: readonly { readonly goal_id: string; readonly cursor: number }[];
  /** The work the original committed after the copy was taken, when the original could be compared. */
  readonly later_writes: LaterWrites;
  readonly digest: string;
}

/**
 * The writes a rotation would abandon: the original's work commits past the copy's heads.
 * `compared` — the previous reference reaches the original and `count` is exact; otherwise
 * `count` is null and the rotation cannot say: the original is not named (the root already
 * points at the copy), cannot be reached, or is another installation.
 */
export interface LaterWrites {
  readonly original: 'compared' | 'not_named' | 'unreachable' | 'not_the_original';
  readonly count: number | null;
  readonly goals: readonly workOwner.LaterWork[];
}

export type OriginalFence = 'superseded' | 'already_superseded' | 'not_named' | 'unreachable' | 'not_the_original';

export interface RotationResult {
  readonly goal_id: string | null;
  readonly schema: string;
  readonly database_url: string;
  readonly store_identity: string;
  readonly restore_generation: number;
  readonly revoked: readonly (workOwner.GrantedAuthority & { readonly result: 'revoked' | 'already' | 'none' })[];
  readonly original: OriginalFence;
  /** The copy's heads the rotation admitted writers on. */
  readonly copy_heads: RotationPlan['copy_heads'];
  /** The original's later work commits the operator abandoned (`--abandon-later-writes`); null when they could not be counted. */
  readonly abandoned_later_writes: number | null;
  /** Each receiver a Goal of the schema delivered to, and whether it now refuses the superseded installation's deliveries. */
  readonly receivers: readonly RaisedFence[];
}

async function withDb<T>(
  at: { readonly schema: string },
  reference: string,
  fn: (db: PgDatabase) => Promise<T>,
  settings?: Record<string, string>,
): Promise<T> {
  const db = openPostgres({
    url: databaseUrlFrom(reference),
    schema: at.schema,
    max: 2,
    ...(settings ? { settings } : {}),
  });
  try {
    return await fn(db);
  } finally {
    await db.close();
  }
}

/** Where `--goal` (or, without it, the root) keeps the schema a rotation rotates. */
async function targetOf(root: string, goalId?: string): Promise<RotationTarget> {
  const config = await readStoreConfig(root);
  const rootTarget = (): RotationTarget => {
    if (!isServiceLocation(config)) throw notOnPostgres(goalId);
    return {
      goal_id: goalId ?? null,
      schema: config.schema,
      database_url: config.database_url,
      rebind: (reference) => bindReference(root, reference),
      bind: (rotated) => bindInstallation(root, rotated),
      ...(config.installation === undefined ? {} : { binding: config.installation }),
    };
  };
  if (goalId === undefined) return rootTarget();
  if ((await withRootOwners(root, (owners) => owners.goals.get(goalId))) === undefined)
    throw goalOwner.goalNotFound(goalId);
  const location = workOwner.readWorkLocation(root, goalId);
  if (location === null) return rootTarget();
  if (!isServiceLocation(location)) throw notOnPostgres(goalId);
  const sharing = workOwner
    .recordedWorkLocations(root)
    .filter(({ location: l }) => sameService(l, location))
    .map((r) => r.goal_id);
  return {
    goal_id: goalId,
    schema: location.schema,
    database_url: location.database_url,
    rebind: (reference) => {
      for (const id of sharing) workOwner.rebindWorkLocation(root, id, reference);
    },
  };
}

const statusOf = async (db: PgDatabase): Promise<InstallationStatus> => {
  const { created_at: _c, rotated_at: _r, superseded_by: _s, ...installation } = await installationView(db);
  return installation;
};

/** `loopx db status`. */
export async function dbStatus(root: string): Promise<DbStatus> {
  const config = await readStoreConfig(root);
  const goal_work_schemas: DbStatus['goal_work_schemas'][number][] = [];
  for (const g of goalWorkSchemas(root, config)) {
    try {
      goal_work_schemas.push({ ...g, installation: await withDb(g, g.database_url, statusOf), refusal: null });
    } catch (e) {
      if (!isLoopxError(e)) throw e;
      goal_work_schemas.push({ ...g, installation: null, refusal: e.code });
    }
  }
  if (!isServiceLocation(config))
    return { provider: config.provider, schema: null, installation: null, binding: null, goal_work_schemas };
  const installation = await withDb(config, config.database_url, statusOf);
  const binding = bindingOf(config.installation, installation);
  return {
    provider: config.provider,
    schema: config.schema,
    installation: binding === 'older' ? { ...installation, state: 'superseded' } : installation,
    binding,
    goal_work_schemas,
  };
}

/** The plan for binding the target's schema to `reference` (its own when omitted — refused when a restore is detected). */
export async function planRotation(root: string, reference?: string, goalId?: string): Promise<RotationPlan> {
  return planFor(await targetOf(root, goalId), reference);
}

async function planFor(target: RotationTarget, reference: string | undefined): Promise<RotationPlan> {
  const bind = reference ?? target.database_url;
  return withDb(target, bind, async (db) => {
    const v = await installationView(db);
    const heads = await workOwner.workStoreHeads(db);
    if (v.state === 'superseded') throw supersededHere(target);
    // A server holding an older installation than the root is bound to (the old primary after a failover) is never
    // rotated into the root's database: that would abandon everything written on the newer one.
    const standing = bindingOf(target.binding, v);
    if (standing === 'older' || standing === 'other') throw olderInstallation(target, standing);
    // A rotation interrupted midway (`rotating`) already re-recorded the server: it resumes with the reference it is given, or the target's.
    const restoreDetected = v.state === 'restored_pending_rotation';
    if (restoreDetected && reference === undefined) throw urlRequired(target);
    const body = {
      schema_version: ROTATION_PLAN_SCHEMA,
      goal_id: target.goal_id,
      schema: target.schema,
      database_url: bind,
      previous_database_url: bind === target.database_url ? null : target.database_url,
      state: v.state,
      restore_detected: restoreDetected,
      changed: v.changed,
      store_identity: v.store_identity,
      restore_generation: v.restore_generation,
      next_restore_generation: v.state === 'rotating' ? v.restore_generation : v.restore_generation + 1,
      goals: await workOwner.grantedAuthority(db),
      copy_heads: heads.map((h) => ({ goal_id: h.goal_id, cursor: h.cursor })),
      later_writes: await laterWritesOf(target, bind === target.database_url ? null : target.database_url, v, heads),
    } as const;
    return { ...body, digest: sha256Hex(canonicalJson(body)) };
  });
}

/** The original's work past the copy's heads, read (never written) through the previous reference — see `LaterWrites`. */
async function laterWritesOf(
  target: RotationTarget,
  previous: string | null,
  copy: InstallationView,
  heads: readonly workOwner.WorkStoreHead[],
): Promise<LaterWrites> {
  if (previous === null) return { original: 'not_named', count: null, goals: [] };
  let original: workOwner.WorkStoreHead[] | 'not_the_original';
  try {
    original = await withDb(target, previous, async (odb) => {
      const o = await installationView(odb);
      // The original is the installation the copy was taken of: the same identity and generation (superseded or not).
      if (o.store_identity !== copy.store_identity || o.restore_generation !== copy.restore_generation)
        return 'not_the_original' as const;
      return workOwner.workStoreHeads(odb);
    });
  } catch {
    return { original: 'unreachable', count: null, goals: [] };
  }
  if (original === 'not_the_original') return { original, count: null, goals: [] };
  const goals = workOwner.laterWork(heads, original);
  return { original: 'compared', count: goals.reduce((n, g) => n + g.later, 0), goals };
}

/** `loopx db rotate --confirm <digest>`: the plan's digest must be the one previewed. */
export async function rotateStore(
  root: string,
  confirm: string,
  reference?: string,
  goalId?: string,
  abandonLaterWrites?: number,
  access: { readonly authorityDir?: string } = {},
): Promise<RotationResult> {
  const target = await targetOf(root, goalId);
  const plan = await planFor(target, reference);
  if (plan.digest !== confirm) throw confirmMismatch(target, plan.database_url);
  // Later writes of the original are never dropped silently: only on the operator's count of them.
  const later = plan.later_writes.count;
  // Counted: exactly that count, or none when there is nothing to abandon; not counted (unknown): whatever was named.
  const named = later === null ? true : later > 0 ? abandonLaterWrites === later : (abandonLaterWrites ?? 0) === 0;
  if (!named) throw laterWritesHeld(target, plan, abandonLaterWrites);
  return withAdmission(root, 'db rotate', () =>
    withDb(target, plan.database_url, async (db) => {
      // 1. The new identity and generation, `rotating` (resumed as they are when a run was interrupted).
      const rotated = await db.transaction(async (q): Promise<PgAdmission> => {
        const v = await readInstallation(q, true);
        if (v === undefined) throw installationMissing(target.schema);
        if (
          v.store_identity !== plan.store_identity ||
          v.restore_generation !== plan.restore_generation ||
          v.state !== plan.state
        )
          throw planStale(target, plan.database_url);
        return v.state === 'rotating'
          ? { store_identity: v.store_identity, restore_generation: v.restore_generation }
          : rotateInstallation(q, v);
      });
      // 2. The authority the Goals' work grants, revoked on the rotator's own admitted pool.
      faultPoint('db.rotate.after-mint');
      const rotationId = `g${rotated.restore_generation}:${rotated.store_identity.slice(-32)}`;
      const revoked = await withDb(
        target,
        plan.database_url,
        (own) => workOwner.revokeGrantedAuthority(own, rotationId),
        rotationSetting(rotated),
      );
      faultPoint('db.rotate.after-revoke');
      // This user's work marks moved to the copy's heads: the confirmed plan makes them the stores' truth.
      const goals = await goalsIn(root, target, await workOwner.workStoreHeads(db));
      await rewindWorkMarks(goals, access);
      // 3. The original service, when the previous reference still reaches it.
      const original = await fenceOriginal(target, plan, rotated);
      // 4. The root (or the Goals' records) bound to the reference it was rotated through and to the rotated
      // installation — before writers are admitted, so no crash leaves a root admitted on the old one — then writers admitted.
      if (plan.previous_database_url !== null) target.rebind(plan.database_url);
      target.bind?.(rotated);
      await db.transaction((q) => activateInstallation(q, rotated));
      // 5. The receivers told of the rotated installation's fence.
      const receivers = await raiseReceiverFences(
        root,
        goals.map((g) => g.goal.goal_id),
      );
      return {
        goal_id: target.goal_id,
        schema: target.schema,
        database_url: plan.database_url,
        ...rotated,
        revoked,
        original,
        copy_heads: plan.copy_heads,
        abandoned_later_writes: later,
        receivers,
      };
    }),
  );
}

/** A Goal of this root whose work lives in the rotated schema, and its store's head there. */
interface GoalInSchema {
  readonly goal: goalOwner.GoalRecord;
  readonly head: workOwner.WorkStoreHead;
}

async function goalsIn(
  root: string,
  target: RotationTarget,
  heads: readonly workOwner.WorkStoreHead[],
): Promise<GoalInSchema[]> {
  const byKey = new Map(heads.map((h) => [h.store_key, h]));
  const goals = await withRootOwners(root, (owners) => owners.goals.list());
  return goals.flatMap((goal) => {
    // Where the Goal's work lives: its own record, or its root's store (rows keyed by the Goal id).
    const location = workOwner.goalWorkLocation(root, goal.goal_id);
    const key =
      isServiceLocation(location) && location.schema === target.schema
        ? (location as { store_key?: string }).store_key
        : undefined;
    const head = key === undefined ? undefined : byKey.get(key);
    return head === undefined || head.goal_id !== goal.goal_id ? [] : [{ goal, head }];
  });
}

/**
 * The run authority's marks of this root's Goal work stores in the rotated schema, set to the
 * heads the copy has now (after the revocation). A mark ahead of them — the writes the original
 * made after the copy, which the operator abandoned — would otherwise refuse every later writer as
 * `root_rolled_back`. Other users' authorities keep their marks: their writers of those Goals stay
 * refused `root_rolled_back` (a rewind for them is not built yet).
 */
async function rewindWorkMarks(
  goals: readonly GoalInSchema[],
  access: { readonly authorityDir?: string },
): Promise<void> {
  const marks = goals.map(({ goal, head }) => ({
    goal_id: goal.goal_id,
    goal_instance_id: goal.goal_instance_id,
    store_identity: head.store_identity,
    cursor: head.cursor,
    provider_revision: head.provider_revision,
  }));
  if (marks.length === 0) return;
  await withAuthority(access, async (authority) => {
    // A mark bound to another lifetime stays as it is (its writers stay refused `goal_identity_mismatch`): a resumed rotation never sticks on it.
    for (const m of marks)
      await authority.rewindWorkMark(m).catch((e: unknown) => {
        if (!isLoopxError(e) || e.code !== 'goal_identity_mismatch') throw e;
      });
  });
}

async function fenceOriginal(
  target: { readonly schema: string },
  plan: RotationPlan,
  rotated: PgAdmission,
): Promise<OriginalFence> {
  if (plan.previous_database_url === null) return 'not_named';
  try {
    return await withDb(target, plan.previous_database_url, (db) =>
      db.transaction(async (q): Promise<OriginalFence> => {
        const v = await readInstallation(q, true);
        if (
          v === undefined ||
          v.store_identity !== plan.store_identity ||
          v.restore_generation !== plan.restore_generation
        )
          return 'not_the_original';
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

const olderInstallation = (target: RotationTarget, standing: 'older' | 'other'): LoopxError =>
  rejected(
    'db_rotation_older_installation',
    standing === 'older'
      ? `Schema ${target.schema} on this server holds an older installation than the root is bound to (an old primary after a failover, or a copy from before a rotation); rotating it would abandon the newer one.`
      : `Schema ${target.schema} on this server holds another installation of the generation the root is bound to (a copy rotated elsewhere); rotating it would abandon the root's.`,
    {
      nextAction:
        'see which installation the root is bound to, and point the reference at that database: loopx db status',
      details: { schema: target.schema },
    },
  );

const notOnPostgres = (goalId: string | undefined): LoopxError =>
  usageError(
    'db_not_postgresql',
    goalId === undefined
      ? 'This root keeps its Goal state in SQLite files; it has no database to rotate.'
      : `Goal ${goalId} keeps its work in SQLite files; it has no database to rotate.`,
    goalId === undefined
      ? 'use it on a root whose Goal state lives in PostgreSQL'
      : 'name a Goal whose work lives in PostgreSQL',
  );

// Each next action names `--goal` when the target is a Goal's work schema: both forms are written out, so each parses as printed.
const supersededHere = (t: RotationTarget): LoopxError =>
  rejected(
    'db_rotation_superseded',
    `Schema ${t.schema} on this server was superseded by a restored copy; it is never rotated back.`,
    {
      nextAction:
        t.goal_id === null
          ? `rotate the restored copy instead (its URL in a variable of your own): loopx db rotate --database-url env:LOOPX_RESTORED_URL`
          : `rotate the restored copy instead (its URL in a variable of your own): loopx db rotate --goal ${t.goal_id} --database-url env:LOOPX_RESTORED_URL`,
      details: { schema: t.schema },
    },
  );

const urlRequired = (t: RotationTarget): LoopxError =>
  rejected(
    'db_rotation_url_required',
    'The schema is a restored copy; name the database URL again to rotate it (a copied reference is never trusted).',
    {
      nextAction:
        t.goal_id === null
          ? `name the database URL again to preview the rotation: loopx db rotate --database-url ${t.database_url}`
          : `name the database URL again to preview the rotation: loopx db rotate --goal ${t.goal_id} --database-url ${t.database_url}`,
    },
  );

const confirmMismatch = (t: RotationTarget, reference: string): LoopxError =>
  conflict('db_rotation_confirm_mismatch', 'The confirmed digest is not the digest of the rotation plan now.', {
    nextAction:
      t.goal_id === null
        ? `preview the plan again: loopx db rotate --database-url ${reference}`
        : `preview the plan again: loopx db rotate --goal ${t.goal_id} --database-url ${reference}`,
  });

const planStale = (t: RotationTarget, reference: string): LoopxError =>
  conflict('db_rotation_plan_stale', 'The installation changed after the plan was made; nothing was rotated.', {
    nextAction:
      t.goal_id === null
        ? `preview the plan again: loopx db rotate --database-url ${reference}`
        : `preview the plan again: loopx db rotate --goal ${t.goal_id} --database-url ${reference}`,
  });

const laterWritesHeld = (t: RotationTarget, plan: RotationPlan, given: number | undefined): LoopxError => {
  const n = plan.later_writes.count ?? 0;
  return rejected(
    'db_rotation_later_writes',
    given === undefined
      ? `The original database holds ${n} work write(s) made after this copy was taken; rotating the copy abandons them (to keep them, back up the original again and restore that copy instead).`
      : `The original database holds ${n} work write(s) made after this copy was taken, not ${given}; nothing was rotated.`,
    {
      nextAction:
        t.goal_id === null
          ? `abandon them knowingly: loopx db rotate --database-url ${plan.database_url} --confirm ${plan.digest} --abandon-later-writes ${n}`
          : `abandon them knowingly: loopx db rotate --goal ${t.goal_id} --database-url ${plan.database_url} --confirm ${plan.digest} --abandon-later-writes ${n}`,
      details: { later_writes: n, goals: plan.later_writes.goals.map((g) => ({ goal_id: g.goal_id, later: g.later })) },
    },
  );
};

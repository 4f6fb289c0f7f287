/**
 * The audit's components read from the owners' reports (RFC §5): the configuration, one component
 * per SQLite file, one per Goal (found, or registered and missing) with the findings that belong to
 * no readable Goal, and the remainder no owner reads. v0 audits are made of these sections; v1
 * audits add the databases and the remainder no manifest component declares. Each section claims
 * the members it covers, so no member is reported twice; none decides what its owner decides.
 */
import { canonicalJson, sha256Hex } from '../core/index.js';
import {
  MACHINE,
  OWNERS,
  OWNER_LIST,
  UNOWNED_STORES,
  config as configOwner,
  goal as goalOwner,
  type OwnerRecovery,
} from '../owners/index.js';
import type { AuditComponent, AuditFinding, AuditInputs, Classification, Severity } from './audit.js';
import type { ExtractionFacts } from './extract.js';
import {
  checkpointOf,
  documentOwner,
  goalsOf,
  ownerOfSqlite,
  registryGoalsOf,
  workOf,
  type GoalFacts,
  type RegistryGoalFacts,
  type WorkerFinding,
  type WorkerReport,
} from './owner-verify.js';

/** A content digest over members' paths and digests. */
const digestOf = (parts: readonly { path: string; sha256: string }[]): string =>
  sha256Hex(canonicalJson(parts.map((p) => [p.path, p.sha256])));

/** The next actions the audit's own components and findings name. */
export const NEXT = {
  legacy:
    'create a new backup with a producer that records owner revisions and capture profiles (a newer loopx); until then treat this audit as held',
  best: 'treat the captured state as a best-effort online copy: no cross-owner point in time was recorded',
  readable:
    'read it from the inert workspace; adoption into a live root is a separate step: keep the workspace until then',
  historical:
    'keep it as history; the owner reconciles it only when this state is adopted into a live root, never by replay',
  unknown: 'inspect these bytes in the workspace by hand; no loopx owner reads them',
  broken: 'restore this owner from another backup; this copy could not be read',
  symlink: 'the link was extracted inert and is never followed by loopx; inspect it by hand',
} as const;

/** Owner names a public summary may show: the OWNERS table's, the unowned stores', and the coordinators'. */
const ROOT = 'runtime-root';
/** Archive paths of an owner's members (a directory member covers everything under it). */
const memberMatcher = (paths: readonly { path: string; kind: string }[]): ((p: string) => boolean) => {
  const exact = new Set(paths.filter((m) => m.kind !== 'directory').map((m) => `${ROOT}/${m.path}`));
  const dirs = paths.filter((m) => m.kind === 'directory').map((m) => `${ROOT}/${m.path}/`);
  return (p) => exact.has(p) || dirs.some((d) => p.startsWith(d));
};
const ownerRow = (name: string): OwnerRecovery | undefined => OWNER_LIST.find((o) => o.name === name);
const unownedRow = (name: string) => UNOWNED_STORES.find((s) => s.name === name);
/** The owners kept once per Goal (their databases live under the Goal's directory). */
const GOAL_SCOPED = OWNER_LIST.filter((o) => o.scope === 'goal');
/** Per goal-scoped owner (the work owner), its database report for each Goal. */
type StoresByGoal = ReadonlyArray<{
  readonly owner: (typeof GOAL_SCOPED)[number];
  readonly byGoal: ReadonlyMap<string, WorkerReport['sqlite'][number]>;
}>;

/** What every section of the audit adds to: the inputs, the components and findings so far, the labels. */
export interface AuditContext {
  readonly inputs: AuditInputs;
  readonly report: WorkerReport;
  readonly files: ReadonlyMap<string, ExtractionFacts['files'][number]>;
  readonly claimed: Set<string>;
  readonly components: AuditComponent[];
  readonly findings: AuditFinding[];
  readonly add: (
    code: string,
    severity: Severity,
    component: string | null,
    owner: string,
    next: string,
    subject?: string | null,
  ) => void;
  readonly fromOwner: (component: string, owner: string, list: readonly WorkerFinding[]) => void;
  /** v1: an owner's `hold` stays a hold (v0 audits recorded it as a warning and keep doing so). */
  readonly fromOwnerKeepingHolds: (component: string, owner: string, list: readonly WorkerFinding[]) => void;
  readonly scopeOf: (goalId: string) => string;
  readonly idOf: (prefix: string, key: string) => string;
  readonly base: { readonly producer_version: string; readonly capture_profile: null; readonly cursor: null };
  /** v1: databases whose component the recovery set declares (the v0 database section skips them). */
  readonly covered?: ReadonlySet<string>;
  readonly dbIdByPath: Map<string, string>;
}

/** 1. The configuration: the checkpoint plus the registry and machine configuration it was built from. */
export function configurationComponent(ctx: AuditContext): void {
  const { report: r, files, claimed, components, add, fromOwner, base } = ctx;
  const cfg = documentOwner(r, OWNERS.config);
  const reg = documentOwner(r, OWNERS.registry);
  const checkpoint = checkpointOf(r);
  const registryGoals = registryGoalsOf(r);
  const isConfigMember = memberMatcher([...OWNERS.config.members(MACHINE), ...OWNERS.registry.members(MACHINE)]);
  const configMembers = [...files.keys()].filter((p) => p === configOwner.CHECKPOINT_FILE || isConfigMember(p)).sort();
  configMembers.forEach((p) => claimed.add(p));
  // The configuration checkpoint carries the registry's Goal rows: the counts must agree.
  const countMismatch = checkpoint.ok && reg.ok && checkpoint.goal_count !== registryGoals.length;
  if (countMismatch)
    add(
      'configuration_goal_count_mismatch',
      'error',
      'configuration',
      OWNERS.config.name,
      'the checkpoint and the registry disagree; use another backup of this root',
    );
  const configOk = checkpoint.ok && (cfg.facts.config_ok as boolean) && reg.ok && !countMismatch;
  fromOwner('configuration', OWNERS.config.name, cfg.findings);
  fromOwner('configuration', OWNERS.registry.name, reg.findings);
  components.push({
    ...base,
    component_id: 'configuration',
    owner_kind: OWNERS.config.name,
    logical_scope: 'machine',
    required: OWNERS.config.requiredForGoal,
    archive_members: configMembers,
    member_count: configMembers.length,
    schema_version: 'loopx_configuration_backup_v0',
    source_identity: null,
    source_revision: cfg.revision,
    content_digest: checkpoint.sha256 ?? digestOf(configMembers.map((p) => files.get(p)!)),
    dependency_ids: [],
    verification_profile: OWNERS.config.verificationProfile,
    verification: configOk ? 'verified' : 'invalid',
    classification: configOk ? 'recovered_readable' : 'unknown_unrecoverable',
    next_action: configOk ? NEXT.readable : NEXT.broken,
    readback: {
      checkpoint_goal_count: checkpoint.goal_count,
      machine_configuration_present: checkpoint.machine_configuration_present,
      configuration_revision: cfg.facts.configuration_revision,
      configuration_receipts: cfg.facts.configuration_receipts,
      registry_revision: reg.revision,
      registry_goals: registryGoals,
    },
  });
}

/** 2. One component per SQLite file, classified by its owner in the OWNERS table. */
export function databaseComponents(ctx: AuditContext): void {
  const { report: r, files, claimed, components, add, fromOwner, scopeOf, idOf, base, dbIdByPath } = ctx;
  for (const s of r.sqlite) {
    if (ctx.covered?.has(s.path)) continue;
    const id = idOf('database', s.path);
    dbIdByPath.set(s.path, id);
    claimed.add(s.path);
    const f = files.get(s.path)!;
    const row = ownerRow(s.owner);
    const unowned = unownedRow(s.owner);
    const known = row !== undefined || unowned !== undefined;
    // An unowned store has no reader here: sound bytes are history.
    const readable = s.integrity === 'ok' && (s.readback?.ok ?? unowned !== undefined);
    const classification: Classification =
      !readable || !known ? 'unknown_unrecoverable' : (row?.classification ?? 'historical_only');
    if (s.readback) fromOwner(id, s.owner, s.readback.findings);
    if (!known) add('owner_unknown', 'warning', id, 'unknown', NEXT.unknown, s.path);
    components.push({
      ...base,
      component_id: id,
      owner_kind: s.owner,
      logical_scope: s.goal_id ? scopeOf(s.goal_id) : 'machine',
      required: (row?.requiredForGoal ?? false) && row?.optionalInV0Audits !== true,
      archive_members: [s.path],
      member_count: 1,
      schema_version: null,
      source_identity: workOf(s)?.store_identity ?? null,
      source_revision: null,
      content_digest: f.sha256,
      dependency_ids: [],
      verification_profile: row?.verificationProfile ?? unowned?.verificationProfile ?? 'sqlite.integrity_check',
      verification: s.integrity !== 'ok' ? 'invalid' : !known ? 'unknown' : readable ? 'verified' : 'invalid',
      classification,
      next_action:
        classification === 'recovered_readable'
          ? NEXT.readable
          : classification === 'historical_only'
            ? NEXT.historical
            : !known
              ? NEXT.unknown
              : NEXT.broken,
      readback: {
        integrity: s.integrity,
        wal_header: s.wal_header,
        ...(s.readback ? { counts: s.readback.counts } : {}),
        ...s.facts,
      },
    });
  }
}

/**
 * Findings that belong to no readable Goal: goal findings of a goal.json that did not decode or of
 * the goals directory, goal-scoped stores without a goal.json, and declared databases that are not SQLite.
 */
function orphanGoalFindings(
  ctx: AuditContext,
  gl: ReturnType<typeof documentOwner>,
  storesByGoal: StoresByGoal,
  found: ReadonlySet<string>,
  registered: ReadonlySet<string>,
): void {
  const { inputs: a, report: r, add, idOf, dbIdByPath } = ctx;
  const ownerless = gl.findings.filter((f) => {
    const gid = goalOwner.goalOfSubject(f.subject);
    return gid === undefined || !found.has(gid);
  });
  for (const f of ownerless) {
    const gid = goalOwner.goalOfSubject(f.subject);
    add(
      f.code,
      f.severity === 'error' ? 'error' : 'warning',
      gid !== undefined && registered.has(gid) ? idOf('goal', gid) : null,
      OWNERS.goal.name,
      f.next_action,
      f.subject,
    );
  }
  for (const { owner, byGoal } of storesByGoal) {
    for (const [goalId, w] of byGoal) {
      if (!found.has(goalId))
        add(
          `${owner.name}_without_goal`,
          'warning',
          dbIdByPath.get(w.path)!,
          OWNERS.goal.name,
          `the ${owner.name} store has no goal.json beside it; read it as history only`,
          goalId,
        );
    }
  }
  // Every database the producer declared must be one the worker read as SQLite.
  const verifiedDbs = new Set(r.sqlite.map((x) => x.path));
  for (const snap of a.manifest.execution.sqlite_snapshots) {
    if (!verifiedDbs.has(snap.archive_path))
      add(
        'sqlite_snapshot_not_sqlite',
        'error',
        null,
        ownerOfSqlite(snap.archive_path).owner,
        'the manifest declares a database the archive does not hold as SQLite; use another backup',
        snap.archive_path,
      );
  }
}

/** A Goal's component, linked to the configuration: readable, or else missing or invalid. */
function pushGoalComponent(
  ctx: AuditContext,
  goalId: string,
  fields: Partial<AuditComponent>,
  members: string[],
  readable: boolean,
  missing: boolean,
): void {
  const { files, components, scopeOf, idOf, base } = ctx;
  components.push({
    ...base,
    component_id: idOf('goal', goalId),
    owner_kind: OWNERS.goal.name,
    logical_scope: scopeOf(goalId),
    required: OWNERS.goal.requiredForGoal,
    archive_members: members,
    member_count: members.length,
    schema_version: 'loopx_goal_v0',
    source_identity: null,
    source_revision: null,
    content_digest: digestOf(members.map((p) => files.get(p)!)),
    dependency_ids: ['configuration'],
    verification_profile: OWNERS.goal.verificationProfile,
    verification: readable ? 'verified' : missing ? 'missing' : 'invalid',
    classification: readable ? 'recovered_readable' : 'unknown_unrecoverable',
    next_action: readable ? NEXT.readable : NEXT.broken,
    readback: {},
    ...fields,
  });
}

/** A Goal's goal-scoped stores: whether every one read back, whether one is missing (a finding each), and their facts. */
function goalStores(
  ctx: AuditContext,
  goalId: string,
  id: string,
  storesByGoal: StoresByGoal,
): { ok: boolean; missing: boolean; facts: Record<string, unknown> } {
  const { add, dbIdByPath } = ctx;
  let storesOk = true;
  let storeMissing = false;
  const storeFacts: Record<string, unknown> = {};
  for (const { owner, byGoal } of storesByGoal) {
    const w = byGoal.get(goalId);
    storesOk &&= w !== undefined && w.integrity === 'ok' && (w.readback?.ok ?? false);
    if (w === undefined) {
      storeMissing = true;
      const file = owner.members({ goal_id: goalId })[0]!.path.split('/').at(-1);
      add(
        `goal_${owner.name}_missing`,
        'error',
        id,
        owner.name,
        `restore the Goal's ${file} from another backup`,
        goalId,
      );
    }
    storeFacts[`${owner.name}_database`] = w ? dbIdByPath.get(w.path) : null;
    storeFacts[owner.name] = w?.facts[owner.name] ?? null;
  }
  return { ok: storesOk, missing: storeMissing, facts: storeFacts };
}

/** A Goal the goal owner read: its members, its own findings, its stores and whether the registry routes to it. */
function foundGoalComponent(
  ctx: AuditContext,
  g: GoalFacts,
  gl: ReturnType<typeof documentOwner>,
  storesByGoal: StoresByGoal,
  registered: ReadonlySet<string>,
): void {
  const { files, claimed, add, fromOwner, idOf } = ctx;
  const id = idOf('goal', g.goal_id);
  const isGoalMember = memberMatcher(OWNERS.goal.members({ goal_id: g.goal_id }));
  const members = [...files.keys()].filter((p) => isGoalMember(p) && !claimed.has(p)).sort();
  members.forEach((p) => claimed.add(p));
  const own = gl.findings.filter((f) => goalOwner.goalOfSubject(f.subject) === g.goal_id);
  fromOwner(id, OWNERS.goal.name, own);
  const stores = goalStores(ctx, g.goal_id, id, storesByGoal);
  if (!registered.has(g.goal_id))
    add(
      'goal_unregistered',
      'warning',
      id,
      OWNERS.registry.name,
      'the registry does not route to this Goal; read it as history only',
      g.goal_id,
    );
  const readable = stores.ok && !own.some((f) => f.severity === 'error');
  pushGoalComponent(
    ctx,
    g.goal_id,
    {
      source_identity: g.goal_instance_id,
      readback: {
        goal_id: g.goal_id,
        goal_instance_id: g.goal_instance_id,
        lifecycle: g.lifecycle,
        docs: g.docs,
        ...stores.facts,
      },
    },
    members,
    readable,
    stores.missing,
  );
}

/** Registered, but the goal owner read no goal.json for it: missing (or unreadable), never recovered. */
function missingGoalComponent(ctx: AuditContext, g: RegistryGoalFacts): void {
  ctx.add(
    'registry_goal_missing',
    'error',
    ctx.idOf('goal', g.goal_id),
    OWNERS.goal.name,
    'restore this Goal from another backup; the registry routes to it but its goal.json was not read',
    g.goal_id,
  );
  pushGoalComponent(
    ctx,
    g.goal_id,
    { source_identity: g.goal_instance_id, readback: { goal_id: g.goal_id, goal_instance_id: g.goal_instance_id } },
    [],
    false,
    true,
  );
}

/** 3. One component per Goal — found by the goal owner, or named by the registry and missing — linked to the configuration. Returns the dependency links made. */
export function goalComponents(ctx: AuditContext): number {
  const r = ctx.report;
  const gl = documentOwner(r, OWNERS.goal);
  const goalRecords = goalsOf(r);
  const registryGoals = registryGoalsOf(r);
  // Per goal-scoped owner (the work owner), its report for each Goal.
  const storesByGoal: StoresByGoal = GOAL_SCOPED.map((o) => ({
    owner: o,
    byGoal: new Map(r.sqlite.filter((s) => s.owner === o.name).map((s) => [s.goal_id!, s])),
  }));
  const registered = new Set(registryGoals.map((g) => g.goal_id));
  const found = new Set(goalRecords.map((g) => g.goal_id));
  for (const g of goalRecords) foundGoalComponent(ctx, g, gl, storesByGoal, registered);
  const missing = registryGoals.filter((g) => !found.has(g.goal_id));
  for (const g of missing) missingGoalComponent(ctx, g);
  orphanGoalFindings(ctx, gl, storesByGoal, found, registered);
  // Each Goal component links to the configuration.
  return goalRecords.length + missing.length;
}

/** 4. The remainder: bytes no owner reads. */
export function remainderComponent(ctx: AuditContext): void {
  const { inputs: a, files, claimed, components, add, base } = ctx;
  const rest = [...files.keys()].filter((p) => !claimed.has(p)).sort();
  if (rest.length > 0) {
    components.push({
      ...base,
      component_id: 'unclassified',
      owner_kind: 'unknown',
      logical_scope: 'machine',
      required: false,
      archive_members: rest,
      member_count: rest.length,
      schema_version: null,
      source_identity: null,
      source_revision: null,
      content_digest: digestOf(rest.map((p) => files.get(p)!)),
      dependency_ids: [],
      verification_profile: 'member.sha256',
      verification: 'unknown',
      classification: 'unknown_unrecoverable',
      next_action: NEXT.unknown,
      readback: {},
    });
  }
  for (const s of a.extraction.symlinks) add('member_symlink_inert', 'warning', null, 'backup', NEXT.symlink, s);
}

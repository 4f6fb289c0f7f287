/**
 * The `loopx_state_recovery_audit_v0` receipt (RFC §5 audit schema, §10 operational contract):
 * built from the manifest, the extraction facts and the worker's owner readback; content-addressed
 * (`recovery_id` = SHA-256 of the canonical JSON of everything else); written once, owner-only,
 * never replaced. The public summary is derived from it by dropping everything private: member
 * names, Goal ids, owner subjects — it keeps component ids, redacted scopes, counts, digests and
 * codes. A v0 archive is always held; execution authority is never granted.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { canonicalJson, sha256Hex, LOOPX_VERSION, RECOVERY_AUDIT_FILE, RECOVERY_WORKSPACE_DIR } from '../core/index.js';
import { BACKUP_SCHEMA, BACKUP_SCHEMA_V1, type BackupManifest, type CaptureProfile } from '../backup/index.js';
import { v1Sections } from './audit-v1.js';
import { isV1 } from './recovery-set.js';
import type { ExtractionFacts } from './extract.js';
import { RECOVERY_LIMITS } from './limits.js';
import { capacityRefusal } from './members.js';
import { MACHINE, OWNERS, OWNER_LIST, UNOWNED_STORES, config as configOwner, goal as goalOwner, type OwnerRecovery } from '../owners/index.js';
import { checkpointOf, documentOwner, goalsOf, ownerOfSqlite, registryGoalsOf, workOf, type FindingLite, type OwnerKind, type WorkerReport } from './owner-verify.js';

export const AUDIT_SCHEMA = 'loopx_state_recovery_audit_v0';
export const AUDIT_FILE = RECOVERY_AUDIT_FILE;
export const WORKSPACE_DIR = RECOVERY_WORKSPACE_DIR;

export type Classification = 'recovered_readable' | 'historical_only' | 'unknown_unrecoverable';
export type VerificationStatus = 'verified' | 'invalid' | 'missing' | 'ambiguous' | 'unsupported' | 'unknown';
export type Severity = 'error' | 'hold' | 'warning';

export interface AuditComponent {
  readonly component_id: string;
  readonly owner_kind: OwnerKind | 'backup';
  /** `machine` or `goal:<sha256(goal_id)[0..12]>` — never a Goal id. */
  readonly logical_scope: string;
  readonly required: boolean;
  /** Private: exact archive paths. */
  readonly archive_members: readonly string[];
  readonly member_count: number;
  readonly schema_version: string | null;
  readonly producer_version: string;
  /** Not recorded by v0 producers: null, never fabricated. v1: the component's achieved profile. */
  readonly capture_profile: CaptureProfile | null;
  readonly source_identity: string | null;
  readonly source_revision: string | null;
  readonly cursor: number | null;
  /** v1: null where the owner held no state or could not capture it. */
  readonly content_digest: string | null;
  readonly dependency_ids: readonly string[];
  readonly verification_profile: string;
  readonly verification: VerificationStatus;
  readonly classification: Classification;
  readonly next_action: string;
  /** Private: what the owner read back (ids and counts; never payloads). */
  readonly readback: Record<string, unknown>;
}

export interface AuditFinding {
  readonly code: string;
  readonly severity: Severity;
  readonly component: string | null;
  readonly owner: string;
  readonly next_action: string;
  /** Private: the owner's subject (ids, relative names). */
  readonly subject: string | null;
}

export interface RecoveryAudit {
  readonly schema_version: typeof AUDIT_SCHEMA;
  readonly recovery_id: string;
  readonly backup: {
    readonly schema_version: typeof BACKUP_SCHEMA | typeof BACKUP_SCHEMA_V1;
    readonly backup_id: string;
    readonly archive_sha256: string;
    readonly external_manifest_sha256: string;
    readonly embedded_manifest_sha256: string;
    readonly producer_version: string;
    readonly created_at: string;
  };
  readonly workspace: { readonly isolation: 'inert'; readonly registered: false; readonly directory: typeof WORKSPACE_DIR };
  readonly phase: 'audited' | 'held';
  readonly operator_state: 'restored_inert' | 'audit_held';
  readonly next_action: string;
  readonly capture: { readonly requested_profile: CaptureProfile | null; readonly achieved_profile: CaptureProfile | 'legacy_best_effort'; readonly producer_claim: string };
  readonly fences: { readonly source_established: false; readonly destination_established: false };
  readonly verifier: { readonly producer: 'loopx'; readonly version: string; readonly limits: Record<string, number> };
  readonly components: readonly AuditComponent[];
  readonly findings: readonly AuditFinding[];
  readonly counts: {
    readonly components: { readonly required: number; readonly optional: number; readonly by_owner: Record<string, { required: number; optional: number }> };
    readonly verification: Record<VerificationStatus, number>;
    readonly assets: Record<Classification, number>;
    readonly members: { readonly total: number; readonly files: number; readonly directories: number; readonly symlinks: number; readonly sqlite_files: number };
    readonly findings: Record<Severity, number>;
    readonly dependency_links: number;
  };
  readonly measurements: {
    readonly archive_bytes: number;
    readonly expanded_bytes: number;
    readonly regular_file_bytes: number;
    readonly durations_ms: { readonly archive_processing: number; readonly owner_read: number; readonly total: number };
  };
  /** v1: whether the set qualifies a one-Goal local adoption (a complete, verified closure captured at a qualifying point). */
  readonly activation_eligible: boolean;
  /** v1: the Goals (by logical scope) whose closure qualifies. */
  readonly activation?: { readonly eligible_scopes: readonly string[] };
  /** v1: the last durable owner receipt of this recovery (none before adoption). */
  readonly last_durable_receipt?: null;
  /** v1: whether the operator may run this step again (verify always may, into a new destination). */
  readonly retryable?: boolean;
  readonly execution_authority_granted: false;
}

export interface AuditInputs {
  readonly manifest: BackupManifest;
  readonly archiveSha256: string;
  readonly archiveSize: number;
  readonly manifestSha256: string;
  readonly extraction: ExtractionFacts;
  readonly report: WorkerReport;
  readonly durations: { archive_processing: number; owner_read: number; total: number };
}

/**
 * Public labels of Goals and databases: keyed (v0: a random per-audit key that is never stored;
 * v1: a key derived from the archive's private inventory, so verifying one archive twice gives the
 * same labels), so a short, guessable Goal id or path cannot be recovered from a public summary by
 * trying candidates (an unkeyed hash could be). The private audit maps each label to its names.
 */
function labeller(m: BackupManifest): { scopeOf(goalId: string): string; idOf(prefix: string, key: string): string } {
  // v1: keyed by the archive's private inventory (its components name private Goal ids and the
  // producer's own keyed tags), so two verifications of one archive agree and nothing public derives it.
  const key = isV1(m)
    ? createHmac('sha256', 'loopx-audit-labels/v1')
        .update(canonicalJson([m.components, m.goal_closures]))
        .digest()
    : randomBytes(32);
  const mac = (s: string): string => createHmac('sha256', key).update(s).digest('hex').slice(0, 12);
  return { scopeOf: (goalId) => `goal:${mac(`goal\0${goalId}`)}`, idOf: (prefix, name) => `${prefix}-${mac(`${prefix}\0${name}`)}` };
}
const digestOf = (parts: readonly { path: string; sha256: string }[]): string => sha256Hex(canonicalJson(parts.map((p) => [p.path, p.sha256])));

const NEXT = {
  legacy: 'create a new backup with a producer that records owner revisions and capture profiles (a newer loopx); until then treat this audit as held',
  best: 'treat the captured state as a best-effort online copy: no cross-owner point in time was recorded',
  readable: 'read it from the inert workspace; adoption into a live root is a separate step: keep the workspace until then',
  historical: 'keep it as history; the owner reconciles it only when this state is adopted into a live root, never by replay',
  unknown: 'inspect these bytes in the workspace by hand; no loopx owner reads them',
  broken: 'restore this owner from another backup; this copy could not be read',
  symlink: 'the link was extracted inert and is never followed by loopx; inspect it by hand',
} as const;

/** Holds a recovery of the Goal into a new root settles (its session step), and the words that say so. */
const ADOPTION_SETTLES: Readonly<Record<string, string>> = {
  session_binding_historical: 'readmit the session by recovering its Goal into a new root with loopx recover plan; it continues there under a new execution generation, never here',
  turn_unsettled:
    "settle the turn by recovering its Goal into a new root with loopx recover plan; the recovery reconciles the turn's effects under their original operation ids first",
};

/** The hold codes a recovery of their Goal into a new root settles by itself (its session step). */
export const SETTLED_BY_RECOVERY: readonly string[] = Object.keys(ADOPTION_SETTLES);

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
type StoresByGoal = ReadonlyArray<{ readonly owner: (typeof GOAL_SCOPED)[number]; readonly byGoal: ReadonlyMap<string, WorkerReport['sqlite'][number]> }>;

/** What every section of the audit adds to: the inputs, the components and findings so far, the labels. */
interface AuditContext {
  readonly a: AuditInputs;
  readonly r: WorkerReport;
  readonly files: ReadonlyMap<string, ExtractionFacts['files'][number]>;
  readonly claimed: Set<string>;
  readonly components: AuditComponent[];
  readonly findings: AuditFinding[];
  readonly add: (code: string, severity: Severity, component: string | null, owner: string, next: string, subject?: string | null) => void;
  readonly fromOwner: (component: string, owner: string, list: readonly FindingLite[]) => void;
  /** v1: an owner's `hold` stays a hold (v0 audits recorded it as a warning and keep doing so). */
  readonly fromOwnerKeepingHolds: (component: string, owner: string, list: readonly FindingLite[]) => void;
  readonly scopeOf: (goalId: string) => string;
  readonly idOf: (prefix: string, key: string) => string;
  readonly base: { readonly producer_version: string; readonly capture_profile: null; readonly cursor: null };
  /** v1: databases whose component the recovery set declares (the v0 database section skips them). */
  readonly covered?: ReadonlySet<string>;
  readonly dbIdByPath: Map<string, string>;
}

/** 1. The configuration: the checkpoint plus the registry and machine configuration it was built from. */
function configurationComponent(ctx: AuditContext): void {
  const { r, files, claimed, components, add, fromOwner, base } = ctx;
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
    add('configuration_goal_count_mismatch', 'error', 'configuration', OWNERS.config.name, 'the checkpoint and the registry disagree; use another backup of this root');
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
function databaseComponents(ctx: AuditContext): void {
  const { r, files, claimed, components, add, fromOwner, scopeOf, idOf, base, dbIdByPath } = ctx;
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
    const classification: Classification = !readable || !known ? 'unknown_unrecoverable' : (row?.classification ?? 'historical_only');
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
      next_action: classification === 'recovered_readable' ? NEXT.readable : classification === 'historical_only' ? NEXT.historical : !known ? NEXT.unknown : NEXT.broken,
      readback: { integrity: s.integrity, wal_header: s.wal_header, ...(s.readback ? { counts: s.readback.counts } : {}), ...s.facts },
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
  const { a, r, add, idOf, dbIdByPath } = ctx;
  const ownerless = gl.findings.filter((f) => {
    const gid = goalOwner.goalOfSubject(f.subject);
    return gid === undefined || !found.has(gid);
  });
  for (const f of ownerless) {
    const gid = goalOwner.goalOfSubject(f.subject);
    add(f.code, f.severity === 'error' ? 'error' : 'warning', gid !== undefined && registered.has(gid) ? idOf('goal', gid) : null, OWNERS.goal.name, f.next_action, f.subject);
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

/** 3. One component per Goal — found by the goal owner, or named by the registry and missing — linked to the configuration. Returns the dependency links made. */
function goalComponents(ctx: AuditContext): number {
  const { r, files, claimed, components, add, fromOwner, scopeOf, idOf, base, dbIdByPath } = ctx;
  const gl = documentOwner(r, OWNERS.goal);
  const goalRecords = goalsOf(r);
  const registryGoals = registryGoalsOf(r);
  // Per goal-scoped owner (the work owner), its report for each Goal.
  const storesByGoal: StoresByGoal = GOAL_SCOPED.map((o) => ({ owner: o, byGoal: new Map(r.sqlite.filter((s) => s.owner === o.name).map((s) => [s.goal_id!, s])) }));
  const registered = new Set(registryGoals.map((g) => g.goal_id));
  const found = new Set(goalRecords.map((g) => g.goal_id));
  let links = 0;
  const goalComponent = (goalId: string, fields: Partial<AuditComponent>, members: string[], readable: boolean, missing: boolean): void => {
    links++;
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
  };
  for (const g of goalRecords) {
    const id = idOf('goal', g.goal_id);
    const isGoalMember = memberMatcher(OWNERS.goal.members({ goal_id: g.goal_id }));
    const members = [...files.keys()].filter((p) => isGoalMember(p) && !claimed.has(p)).sort();
    members.forEach((p) => claimed.add(p));
    const own = gl.findings.filter((f) => goalOwner.goalOfSubject(f.subject) === g.goal_id);
    fromOwner(id, OWNERS.goal.name, own);
    let storesOk = true;
    let storeMissing = false;
    const storeFacts: Record<string, unknown> = {};
    for (const { owner, byGoal } of storesByGoal) {
      const w = byGoal.get(g.goal_id);
      storesOk &&= w !== undefined && w.integrity === 'ok' && (w.readback?.ok ?? false);
      if (w === undefined) {
        storeMissing = true;
        const file = owner.members({ goal_id: g.goal_id })[0]!.path.split('/').at(-1);
        add(`goal_${owner.name}_missing`, 'error', id, owner.name, `restore the Goal's ${file} from another backup`, g.goal_id);
      }
      storeFacts[`${owner.name}_database`] = w ? dbIdByPath.get(w.path) : null;
      storeFacts[owner.name] = w?.facts[owner.name] ?? null;
    }
    if (!registered.has(g.goal_id)) add('goal_unregistered', 'warning', id, OWNERS.registry.name, 'the registry does not route to this Goal; read it as history only', g.goal_id);
    const readable = storesOk && !own.some((f) => f.severity === 'error');
    goalComponent(
      g.goal_id,
      { source_identity: g.goal_instance_id, readback: { goal_id: g.goal_id, goal_instance_id: g.goal_instance_id, lifecycle: g.lifecycle, docs: g.docs, ...storeFacts } },
      members,
      readable,
      storeMissing,
    );
  }
  for (const g of registryGoals) {
    if (found.has(g.goal_id)) continue;
    // Registered, but the goal owner read no goal.json for it: missing (or unreadable), never recovered.
    const id = idOf('goal', g.goal_id);
    add('registry_goal_missing', 'error', id, OWNERS.goal.name, 'restore this Goal from another backup; the registry routes to it but its goal.json was not read', g.goal_id);
    goalComponent(g.goal_id, { source_identity: g.goal_instance_id, readback: { goal_id: g.goal_id, goal_instance_id: g.goal_instance_id } }, [], false, true);
  }
  orphanGoalFindings(ctx, gl, storesByGoal, found, registered);
  return links;
}

/** 4. The remainder: bytes no owner reads. */
function remainderComponent(ctx: AuditContext): void {
  const { a, files, claimed, components, add, base } = ctx;
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

/** The counts of the components and findings, as the audit records them. */
function countsOf(components: readonly AuditComponent[], findings: readonly AuditFinding[]) {
  const byOwner: Record<string, { required: number; optional: number }> = {};
  const verification: Record<VerificationStatus, number> = { verified: 0, invalid: 0, missing: 0, ambiguous: 0, unsupported: 0, unknown: 0 };
  const assets: Record<Classification, number> = { recovered_readable: 0, historical_only: 0, unknown_unrecoverable: 0 };
  for (const c of components) {
    const o = (byOwner[c.owner_kind] ??= { required: 0, optional: 0 });
    if (c.required) o.required++;
    else o.optional++;
    verification[c.verification]++;
    assets[c.classification]++;
  }
  const severities: Record<Severity, number> = { error: 0, hold: 0, warning: 0 };
  for (const f of findings) severities[f.severity]++;

  return { byOwner, verification, assets, severities };
}

/** What the v0 or the v1 sections decide for the audit's top-level fields. */
interface Sections {
  readonly links: number;
  readonly capture: RecoveryAudit['capture'];
  readonly eligibleScopes: readonly string[] | null;
}

/** v0: every archive is held (owner revisions and capture profiles are incomplete), and eligible for nothing. */
function v0Sections(ctx: AuditContext): Sections {
  ctx.add('legacy_manifest_incomplete', 'hold', null, 'backup', NEXT.legacy);
  ctx.add('legacy_best_effort', 'hold', null, 'backup', NEXT.best);
  configurationComponent(ctx);
  databaseComponents(ctx);
  const links = goalComponents(ctx);
  remainderComponent(ctx);
  if (ctx.components.length > RECOVERY_LIMITS.components) throw capacityRefusal('components', ctx.components.length, RECOVERY_LIMITS.components);
  if (links > RECOVERY_LIMITS.dependencyLinks) throw capacityRefusal('dependencyLinks', links, RECOVERY_LIMITS.dependencyLinks);
  return { links, capture: { requested_profile: null, achieved_profile: 'legacy_best_effort', producer_claim: ctx.a.manifest.capture.profile }, eligibleScopes: null };
}

/** v1: the manifest's components (owner-verified with their exports), then the stores no component declares and the remainder. */
function v1AuditSections(ctx: AuditContext): Sections {
  const v1 = v1Sections({ ...ctx, fromOwner: ctx.fromOwnerKeepingHolds });
  // A database a component already covers (a Goal document that is a SQLite file, say) is not reported twice.
  databaseComponents({ ...ctx, covered: new Set([...(ctx.covered ?? []), ...ctx.claimed]) });
  remainderComponent(ctx);
  if (ctx.components.length > V1_LIMITS.components) throw capacityRefusal('components', ctx.components.length, V1_LIMITS.components);
  if (v1.links > V1_LIMITS.dependencyLinks) throw capacityRefusal('dependencyLinks', v1.links, V1_LIMITS.dependencyLinks);
  return { links: v1.links, capture: v1.capture, eligibleScopes: v1.eligibleScopes };
}

/**
 * v1 inventories: every owner boundary once per root and the Goal boundaries once per Goal (6 + 2 ×
 * 128), the unowned run kernel, the remainder; each Goal component links to three others at most.
 */
const V1_LIMITS = { components: 2 * RECOVERY_LIMITS.goals + 16, dependencyLinks: 4 * RECOVERY_LIMITS.goals + 16 } as const;

/** The audit's findings and the three ways sections add to them. */
function findingSink() {
  const findings: AuditFinding[] = [];
  const add = (code: string, severity: Severity, component: string | null, owner: string, next: string, subject: string | null = null): void => {
    findings.push({ code, severity, component, owner, next_action: next, subject });
  };
  const fromOwner = (component: string, owner: string, list: readonly FindingLite[]): void => {
    for (const f of list) add(f.code, f.severity === 'error' ? 'error' : 'warning', component, owner, f.next_action, f.subject);
  };
  const fromOwnerKeepingHolds = (component: string, owner: string, list: readonly FindingLite[]): void => {
    for (const f of list) add(f.code, f.severity === 'error' || f.severity === 'hold' ? f.severity : 'warning', component, owner, f.next_action, f.subject);
  };
  return { findings, add, fromOwner, fromOwnerKeepingHolds };
}

/** Build the audit (its recovery_id computed last, over everything else). */
export function buildAudit(a: AuditInputs): RecoveryAudit {
  const { scopeOf, idOf } = labeller(a.manifest);
  const m = a.manifest;
  const r = a.report;
  const { findings, add, fromOwner, fromOwnerKeepingHolds } = findingSink();

  const files = new Map(a.extraction.files.map((f) => [f.path, f]));
  const claimed = new Set<string>(['manifest.json']);
  const components: AuditComponent[] = [];
  const base = { producer_version: m.producer_version, capture_profile: null, cursor: null } as const;
  const v1 = isV1(m);
  const covered = new Set(r.sqlite.filter((x) => x.component !== undefined).map((x) => x.path));
  const ctx: AuditContext = { a, r, files, claimed, components, findings, add, fromOwner, fromOwnerKeepingHolds, scopeOf, idOf, base, dbIdByPath: new Map(), covered };
  const sections = v1 ? v1AuditSections(ctx) : v0Sections(ctx);

  const { byOwner, verification, assets, severities } = countsOf(components, findings);
  const eligible = sections.eligibleScopes !== null && sections.eligibleScopes.length > 0 && severities.error === 0;
  // In an audit its Goals can be adopted from, what the session owner holds is settled by that
  // adoption: its next action names it (a legacy audit, never adopted, keeps the owner's words).
  if (eligible) for (const [i, f] of findings.entries()) if (ADOPTION_SETTLES[f.code] !== undefined) findings[i] = { ...f, next_action: ADOPTION_SETTLES[f.code]! };
  const held = !v1 || severities.error > 0 || severities.hold > 0;
  const next = !v1 ? NEXT.legacy : ((findings.find((f) => f.severity === 'error') ?? findings.find((f) => f.severity === 'hold'))?.next_action ?? NEXT.readable);

  const body: Omit<RecoveryAudit, 'recovery_id'> = {
    schema_version: AUDIT_SCHEMA,
    backup: {
      schema_version: m.schema_version,
      backup_id: m.backup_id,
      archive_sha256: a.archiveSha256,
      external_manifest_sha256: a.manifestSha256,
      embedded_manifest_sha256: a.extraction.embeddedManifestSha256,
      producer_version: m.producer_version,
      created_at: m.created_at,
    },
    workspace: { isolation: 'inert', registered: false, directory: WORKSPACE_DIR },
    phase: held ? 'held' : 'audited',
    operator_state: held ? 'audit_held' : 'restored_inert',
    next_action: next,
    capture: sections.capture,
    fences: { source_established: false, destination_established: false },
    verifier: {
      producer: 'loopx',
      version: LOOPX_VERSION,
      limits: v1 ? { ...limitsRecord(), v1_components: V1_LIMITS.components, v1_dependency_links: V1_LIMITS.dependencyLinks } : limitsRecord(),
    },
    components,
    findings,
    counts: {
      components: {
        required: components.filter((c) => c.required).length,
        optional: components.filter((c) => !c.required).length,
        by_owner: byOwner,
      },
      verification,
      assets,
      members: {
        total: a.extraction.members,
        files: a.extraction.files.length + 1,
        directories: a.extraction.directories,
        symlinks: a.extraction.symlinks.length,
        sqlite_files: r.sqlite.length,
      },
      findings: severities,
      dependency_links: sections.links,
    },
    measurements: {
      archive_bytes: a.archiveSize,
      expanded_bytes: a.extraction.expandedBytes,
      regular_file_bytes: a.extraction.regularBytes,
      durations_ms: a.durations,
    },
    activation_eligible: eligible,
    ...(v1 ? { activation: { eligible_scopes: eligible ? sections.eligibleScopes! : [] }, last_durable_receipt: null, retryable: true } : {}),
    execution_authority_granted: false,
  };
  const { schema_version, ...fields } = body;
  return { schema_version, recovery_id: recoveryIdOf(body), ...fields };
}

function limitsRecord(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(RECOVERY_LIMITS)) out[k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = v;
  return out;
}

export const recoveryIdOf = (body: object): string => {
  const rest = { ...(body as Record<string, unknown>) };
  delete rest.recovery_id;
  return sha256Hex(canonicalJson(rest));
};

export { auditBytes, publishableAuditBytes, showAudit } from './audit-io.js';

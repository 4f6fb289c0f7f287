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
import type { WorkerFinding, OwnerKind, WorkerReport } from './owner-verify.js';
import {
  NEXT,
  configurationComponent,
  databaseComponents,
  goalComponents,
  remainderComponent,
  type AuditContext,
} from './audit-components.js';

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
    /** Read from a repository: which one (its id, never its URL), and whether the backup was encrypted there. */
    readonly repository?: BackupRepository;
  };
  readonly workspace: {
    readonly isolation: 'inert';
    readonly registered: false;
    readonly directory: typeof WORKSPACE_DIR;
  };
  readonly phase: 'audited' | 'held';
  readonly operator_state: 'restored_inert' | 'audit_held';
  readonly next_action: string;
  readonly capture: {
    readonly requested_profile: CaptureProfile | null;
    readonly achieved_profile: CaptureProfile | 'legacy_best_effort';
    readonly producer_claim: string;
  };
  readonly fences: { readonly source_established: false; readonly destination_established: false };
  readonly verifier: { readonly producer: 'loopx'; readonly version: string; readonly limits: Record<string, number> };
  readonly components: readonly AuditComponent[];
  readonly findings: readonly AuditFinding[];
  readonly counts: {
    readonly components: {
      readonly required: number;
      readonly optional: number;
      readonly by_owner: Record<string, { required: number; optional: number }>;
    };
    readonly verification: Record<VerificationStatus, number>;
    readonly assets: Record<Classification, number>;
    readonly members: {
      readonly total: number;
      readonly files: number;
      readonly directories: number;
      readonly symlinks: number;
      readonly sqlite_files: number;
    };
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

/** Where a backup was read from when it came from a repository: its id, and whether it was stored encrypted. */
export interface BackupRepository {
  readonly repository_id: string;
  readonly encrypted: boolean;
}

export interface AuditInputs {
  readonly manifest: BackupManifest;
  readonly repository?: BackupRepository;
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
  return {
    scopeOf: (goalId) => `goal:${mac(`goal\0${goalId}`)}`,
    idOf: (prefix, name) => `${prefix}-${mac(`${prefix}\0${name}`)}`,
  };
}

/** Holds a recovery of the Goal into a new root settles (its session step), and the words that say so. */
const ADOPTION_SETTLES: Readonly<Record<string, string>> = {
  session_binding_historical:
    'readmit the session by recovering its Goal into a new root with loopx recover plan; it continues there under a new execution generation, never here',
  turn_unsettled:
    "settle the turn by recovering its Goal into a new root with loopx recover plan; the recovery reconciles the turn's effects under their original operation ids first",
};

/** The hold codes a recovery of their Goal into a new root settles by itself (its session step). */
export const SETTLED_BY_RECOVERY: readonly string[] = Object.keys(ADOPTION_SETTLES);

/** The counts of the components and findings, as the audit records them. */
function countsOf(components: readonly AuditComponent[], findings: readonly AuditFinding[]) {
  const byOwner: Record<string, { required: number; optional: number }> = {};
  const verification: Record<VerificationStatus, number> = {
    verified: 0,
    invalid: 0,
    missing: 0,
    ambiguous: 0,
    unsupported: 0,
    unknown: 0,
  };
  const assets: Record<Classification, number> = {
    recovered_readable: 0,
    historical_only: 0,
    unknown_unrecoverable: 0,
  };
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
  if (ctx.components.length > RECOVERY_LIMITS.components)
    throw capacityRefusal('components', ctx.components.length, RECOVERY_LIMITS.components);
  if (links > RECOVERY_LIMITS.dependencyLinks)
    throw capacityRefusal('dependencyLinks', links, RECOVERY_LIMITS.dependencyLinks);
  return {
    links,
    capture: {
      requested_profile: null,
      achieved_profile: 'legacy_best_effort',
      producer_claim: ctx.inputs.manifest.capture.profile,
    },
    eligibleScopes: null,
  };
}

/** v1: the manifest's components (owner-verified with their exports), then the stores no component declares and the remainder. */
function v1AuditSections(ctx: AuditContext): Sections {
  const v1 = v1Sections({ ...ctx, fromOwner: ctx.fromOwnerKeepingHolds });
  // A database a component already covers (a Goal document that is a SQLite file, say) is not reported twice.
  databaseComponents({ ...ctx, covered: new Set([...(ctx.covered ?? []), ...ctx.claimed]) });
  remainderComponent(ctx);
  if (ctx.components.length > V1_LIMITS.components)
    throw capacityRefusal('components', ctx.components.length, V1_LIMITS.components);
  if (v1.links > V1_LIMITS.dependencyLinks)
    throw capacityRefusal('dependencyLinks', v1.links, V1_LIMITS.dependencyLinks);
  return { links: v1.links, capture: v1.capture, eligibleScopes: v1.eligibleScopes };
}

/** v1 inventories (limits.ts `v1Components`, `v1DependencyLinks`). */
const V1_LIMITS = {
  components: RECOVERY_LIMITS.v1Components,
  dependencyLinks: RECOVERY_LIMITS.v1DependencyLinks,
} as const;

/** The audit's findings and the three ways sections add to them. */
function findingSink() {
  const findings: AuditFinding[] = [];
  const add = (
    code: string,
    severity: Severity,
    component: string | null,
    owner: string,
    next: string,
    subject: string | null = null,
  ): void => {
    findings.push({ code, severity, component, owner, next_action: next, subject });
  };
  const fromOwner = (component: string, owner: string, list: readonly WorkerFinding[]): void => {
    for (const f of list)
      add(f.code, f.severity === 'error' ? 'error' : 'warning', component, owner, f.next_action, f.subject);
  };
  const fromOwnerKeepingHolds = (component: string, owner: string, list: readonly WorkerFinding[]): void => {
    for (const f of list)
      add(
        f.code,
        f.severity === 'error' || f.severity === 'hold' ? f.severity : 'warning',
        component,
        owner,
        f.next_action,
        f.subject,
      );
  };
  return { findings, add, fromOwner, fromOwnerKeepingHolds };
}

/** The context the sections add to: the extracted files by path, the labels, no component or finding yet. */
function auditContext(inputs: AuditInputs): AuditContext {
  const { scopeOf, idOf } = labeller(inputs.manifest);
  const m = inputs.manifest;
  const { findings, add, fromOwner, fromOwnerKeepingHolds } = findingSink();
  return {
    inputs: inputs,
    report: inputs.report,
    files: new Map(inputs.extraction.files.map((f) => [f.path, f])),
    claimed: new Set<string>(['manifest.json']),
    components: [],
    findings,
    add,
    fromOwner,
    fromOwnerKeepingHolds,
    scopeOf,
    idOf,
    base: { producer_version: m.producer_version, capture_profile: null, cursor: null } as const,
    dbIdByPath: new Map(),
    covered: new Set(inputs.report.sqlite.filter((x) => x.component !== undefined).map((x) => x.path)),
  };
}

/**
 * In an audit its Goals can be adopted from, what the session owner holds is settled by that
 * adoption: its next action names it (a legacy audit, never adopted, keeps the owner's words).
 */
function nameAdoptionSettles(findings: AuditFinding[]): void {
  for (const [i, f] of findings.entries())
    if (ADOPTION_SETTLES[f.code] !== undefined) findings[i] = { ...f, next_action: ADOPTION_SETTLES[f.code]! };
}

/** The backup the audit is of, as its manifests and extraction name it. */
function backupOf(inputs: AuditInputs): RecoveryAudit['backup'] {
  const m = inputs.manifest;
  return {
    schema_version: m.schema_version,
    backup_id: m.backup_id,
    archive_sha256: inputs.archiveSha256,
    external_manifest_sha256: inputs.manifestSha256,
    embedded_manifest_sha256: inputs.extraction.embeddedManifestSha256,
    producer_version: m.producer_version,
    created_at: m.created_at,
    ...(inputs.repository !== undefined ? { repository: { ...inputs.repository } } : {}),
  };
}

/** The audit's counts: components by requirement and owner, verification, assets, members, findings and links. */
function auditCounts(
  inputs: AuditInputs,
  components: readonly AuditComponent[],
  tallies: ReturnType<typeof countsOf>,
  links: number,
): RecoveryAudit['counts'] {
  return {
    components: {
      required: components.filter((c) => c.required).length,
      optional: components.filter((c) => !c.required).length,
      by_owner: tallies.byOwner,
    },
    verification: tallies.verification,
    assets: tallies.assets,
    members: {
      total: inputs.extraction.members,
      files: inputs.extraction.files.length + 1,
      directories: inputs.extraction.directories,
      symlinks: inputs.extraction.symlinks.length,
      sqlite_files: inputs.report.sqlite.length,
    },
    findings: tallies.severities,
    dependency_links: links,
  };
}

/** Build the audit (its recovery_id computed last, over everything else). */
export function buildAudit(inputs: AuditInputs): RecoveryAudit {
  const ctx = auditContext(inputs);
  const { components, findings } = ctx;
  const v1 = isV1(inputs.manifest);
  const sections = v1 ? v1AuditSections(ctx) : v0Sections(ctx);

  const tallies = countsOf(components, findings);
  const { severities } = tallies;
  const eligible = sections.eligibleScopes !== null && sections.eligibleScopes.length > 0 && severities.error === 0;
  if (eligible) nameAdoptionSettles(findings);
  const held = !v1 || severities.error > 0 || severities.hold > 0;
  const next = !v1
    ? NEXT.legacy
    : ((findings.find((f) => f.severity === 'error') ?? findings.find((f) => f.severity === 'hold'))?.next_action ??
      NEXT.readable);

  const body: Omit<RecoveryAudit, 'recovery_id'> = {
    schema_version: AUDIT_SCHEMA,
    backup: backupOf(inputs),
    workspace: { isolation: 'inert', registered: false, directory: WORKSPACE_DIR },
    phase: held ? 'held' : 'audited',
    operator_state: held ? 'audit_held' : 'restored_inert',
    next_action: next,
    capture: sections.capture,
    fences: { source_established: false, destination_established: false },
    verifier: {
      producer: 'loopx',
      version: LOOPX_VERSION,
      limits: v1
        ? { ...limitsRecord(), v1_components: V1_LIMITS.components, v1_dependency_links: V1_LIMITS.dependencyLinks }
        : limitsRecord(),
    },
    components,
    findings,
    counts: auditCounts(inputs, components, tallies, sections.links),
    measurements: {
      archive_bytes: inputs.archiveSize,
      expanded_bytes: inputs.extraction.expandedBytes,
      regular_file_bytes: inputs.extraction.regularBytes,
      durations_ms: inputs.durations,
    },
    activation_eligible: eligible,
    ...(v1
      ? {
          activation: { eligible_scopes: eligible ? sections.eligibleScopes! : [] },
          last_durable_receipt: null,
          retryable: true,
        }
      : {}),
    execution_authority_granted: false,
  };
  const { schema_version, ...fields } = body;
  return { schema_version, recovery_id: recoveryIdOf(body), ...fields };
}

function limitsRecord(): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [k, v] of Object.entries(RECOVERY_LIMITS)) {
    if (k === 'v1Components' || k === 'v1DependencyLinks') continue; // a v1 audit's own (V1_LIMITS)
    out[k.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = v;
  }
  return out;
}

export const recoveryIdOf = (body: object): string => {
  const rest = { ...(body as Record<string, unknown>) };
  delete rest.recovery_id;
  return sha256Hex(canonicalJson(rest));
};

export { auditBytes, publishableAuditBytes, showAudit } from './audit-io.js';

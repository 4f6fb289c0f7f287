/**
 * The audit of a `loopx_state_backup_v1` recovery set, checked exhaustively: one audit component per
 * manifest component (same id: keyed by the producer per archive, so two verifications of one
 * archive give the same ids and two archives never share them), each with its members present, its
 * export verified by its owner against the copy (`verifyOffline` with the export), its content
 * digest recomputed and its revision and cursor read back; the dependency graph (missing,
 * duplicate, cyclic, unknown-owner and cross-Goal references, in a deterministic order); every
 * Goal's required closure; the profile as the producer recorded it — never recomputed upward, and
 * lowered with an error finding where the manifest claims more than its weakest required component.
 *
 * It decides nothing an owner decides and grants nothing: `execution_authority_granted` stays
 * false; `activation_eligible` only says the set qualifies for a one-Goal local adoption.
 */
import {
  ARCHIVE_OBSERVATION,
  DOWNGRADE_NEXT,
  weakestProfile,
  type CaptureProfile,
  type ManifestComponent,
  type RecoverySetCapture,
} from '../backup/index.js';
import { OWNERS, OWNER_LIST, config as configOwner } from '../owners/index.js';
import type { ComponentReport, WorkerReport } from './owner-verify.js';
import { componentsOf, observedAsMembers } from './recovery-set.js';
import type { AuditComponent, AuditInputs, Classification, Severity, VerificationStatus } from './audit.js';

/** The finding codes this module adds, defined once. */
export const V1_CODES = {
  memberMissing: 'component_member_missing',
  notVerified: 'component_not_verified',
  digestMismatch: 'component_content_digest_mismatch',
  revisionMismatch: 'component_revision_mismatch',
  ownerUnknown: 'component_owner_unknown',
  duplicate: 'component_duplicate',
  dependencyMissing: 'dependency_missing',
  dependencyCycle: 'dependency_cycle',
  dependencyCrossGoal: 'dependency_cross_goal',
  closureIncomplete: 'goal_closure_incomplete',
  overclaimed: 'capture_profile_overclaimed',
  notPointInTime: 'capture_not_point_in_time',
  crashUnproved: 'crash_recovery_unproved',
  crashMismatch: 'crash_recovery_mismatch',
  observationDigest: 'crash_observation_digest_mismatch',
} as const;

const NEXT = {
  broken: 'use another backup of this root; keep this one for inspection',
  readable:
    'read it from the inert workspace; adoption into a live root is a separate step: keep the workspace until then',
  historical: 'keep it as history; its owner reconciles it when this Goal is adopted into a new root, never by replay',
  absent: 'nothing to recover: the owner held no state here when the backup was made',
  newer: 'verify this backup with the loopx version that made it',
  closure: 'restore this Goal from a backup that holds every component of its closure',
  online: 'to adopt this Goal, back up again with --profile quiescent (or crash-consistent, with the root stopped)',
} as const;

export interface V1Context {
  readonly inputs: AuditInputs;
  readonly report: WorkerReport;
  readonly files: ReadonlyMap<string, { readonly path: string; readonly sha256: string }>;
  readonly claimed: Set<string>;
  readonly components: AuditComponent[];
  readonly add: (
    code: string,
    severity: Severity,
    component: string | null,
    owner: string,
    next: string,
    subject?: string | null,
  ) => void;
  readonly fromOwner: (
    component: string,
    owner: string,
    list: readonly { code: string; severity: string; subject: string; next_action: string }[],
  ) => void;
}

export interface V1Result {
  readonly capture: {
    readonly requested_profile: CaptureProfile;
    readonly achieved_profile: CaptureProfile;
    readonly producer_claim: string;
  };
  readonly links: number;
  /** Logical scopes of the Goals whose closure is complete, verified and captured at a qualifying point. */
  readonly eligibleScopes: readonly string[];
}

/** Every v1 component's report from the worker, by component id. */
function reportsOf(report: WorkerReport): Map<string, ComponentReport> {
  const out = new Map<string, ComponentReport>();
  for (const s of report.sqlite) if (s.component) out.set(s.component.component_id, s.component);
  for (const c of report.components ?? []) out.set(c.component_id, c);
  return out;
}

/** Readback for the private audit: the owner's counts and, for Goals and their work, what a person recognises. */
function readbackOf(
  c: ManifestComponent,
  rep: ComponentReport | undefined,
  report: WorkerReport,
): Record<string, unknown> {
  const base: Record<string, unknown> = {
    state: c.state,
    ...(rep ? { counts: rep.counts, revision: rep.revision, cursor: rep.cursor } : {}),
  };
  if (!OWNER_LIST.some((o) => o.name === c.owner_kind))
    return { ...base, claimed_owner_kind: c.owner_kind.slice(0, 64) };
  if (c.goal_id === null) return base;
  const db = report.sqlite.find((s) => s.component?.component_id === c.component_id);
  const goal = (
    report.owners.find((o) => o.owner === OWNERS.goal.name)?.facts.goals as { goal_id: string }[] | undefined
  )?.find((g) => g.goal_id === c.goal_id);
  return {
    ...base,
    goal_id: c.goal_id,
    ...(db ? db.facts : (rep?.facts ?? {})),
    ...(c.owner_kind === OWNERS.goal.name && goal ? { goal } : {}),
  };
}

/** The owner label an audit may carry: a known owner's name, else `unknown`. */
const ownerLabel = (kind: string): string => (OWNER_LIST.some((o) => o.name === kind) ? kind : 'unknown');

/**
 * Crash-consistent sets: each captured component's crash recovery, replayed by its owner from the
 * archived observed bytes, must arrive at the state the producer captured; the observed bytes must
 * be the ones the manifest recorded. Returns the problems and what the replay read back.
 */
function crashChecks(
  ctx: V1Context,
  c: ManifestComponent,
  rep: ComponentReport | undefined,
): { problems: Checked['problems']; readback: Record<string, unknown> } {
  const set = ctx.inputs.manifest.capture as RecoverySetCapture;
  const obs = set.failure_observation;
  if (!obs || c.state !== 'captured') return { problems: [], readback: {} };
  // Observed bytes archived as the component's own members: their verification is the recovery.
  const replay = observedAsMembers(set, c)
    ? {
        revision: rep?.revision ?? null,
        cursor: rep?.cursor ?? null,
        files: obs.component_files[c.component_id]!.length,
      }
    : (ctx.report.crash ?? []).find((x) => x.component_id === c.component_id);
  if (obs.component_files[c.component_id] === undefined || replay === undefined)
    return { problems: [{ code: V1_CODES.crashUnproved, severity: 'error', next: NEXT.broken }], readback: {} };
  const problems: Checked['problems'] = [];
  const byPath = new Map(obs.files.map((f) => [f.path, f]));
  for (const path of obs.component_files[c.component_id]!) {
    const f = byPath.get(path);
    if (f === undefined || ctx.files.get(f.archive_member)?.sha256 !== f.sha256)
      problems.push({ code: V1_CODES.observationDigest, severity: 'error', next: NEXT.broken });
  }
  if (replay.revision === null || replay.revision !== c.source_revision)
    problems.push({ code: V1_CODES.crashMismatch, severity: 'error', next: NEXT.broken });
  return {
    problems: [...new Map(problems.map((p) => [p.code, p])).values()],
    readback: { crash_recovery: { revision: replay.revision, cursor: replay.cursor, files: replay.files } },
  };
}

type Checked = { verification: VerificationStatus; problems: { code: string; severity: Severity; next: string }[] };

/** One component's checks: members, owner verification with its export, digest, revision/cursor readback. */
function checkComponent(ctx: V1Context, c: ManifestComponent, rep: ComponentReport | undefined): Checked {
  const problems: Checked['problems'] = [];
  if (!OWNER_LIST.some((o) => o.name === c.owner_kind))
    return {
      verification: 'unsupported',
      problems: [{ code: V1_CODES.ownerUnknown, severity: 'error', next: NEXT.newer }],
    };
  if (c.state === 'absent') return { verification: c.archive_members.length === 0 ? 'verified' : 'invalid', problems };
  if (c.state === 'unreadable' || c.state === 'missing') return { verification: 'missing', problems };
  const members = [...c.archive_members, ...(c.export_member ? [c.export_member] : [])];
  if (members.some((p) => !ctx.files.has(p)))
    problems.push({ code: V1_CODES.memberMissing, severity: 'error', next: NEXT.broken });
  if (rep === undefined) {
    problems.push({ code: V1_CODES.notVerified, severity: 'error', next: NEXT.broken });
    return { verification: 'missing', problems };
  }
  if (rep.export_digest !== c.content_digest)
    problems.push({ code: V1_CODES.digestMismatch, severity: 'error', next: NEXT.broken });
  // The copy may be ahead of an export pinned before it (the owner proved the prefix); never behind it or elsewhere.
  const ahead = rep.cursor !== null && c.cursor !== null && rep.cursor > c.cursor;
  if (rep.revision !== c.source_revision && !ahead)
    problems.push({ code: V1_CODES.revisionMismatch, severity: 'error', next: NEXT.broken });
  if (rep.findings.some((f) => f.code.endsWith('_schema_unknown') || f.code.endsWith('_schema_unsupported')))
    return { verification: 'unsupported', problems };
  const ok = rep.ok && problems.length === 0;
  return { verification: ok ? 'verified' : 'invalid', problems };
}

/** The dependency graph's findings, sorted by code then component: missing, duplicate, cyclic, cross-Goal. */
function graphFindings(list: readonly ManifestComponent[]): { code: string; component: string }[] {
  const out: { code: string; component: string }[] = [];
  const byId = new Map<string, ManifestComponent>();
  for (const c of list) {
    if (byId.has(c.component_id)) out.push({ code: V1_CODES.duplicate, component: c.component_id });
    else byId.set(c.component_id, c);
  }
  for (const c of byId.values()) {
    for (const d of c.dependency_ids) {
      const dep = byId.get(d);
      if (dep === undefined) out.push({ code: V1_CODES.dependencyMissing, component: c.component_id });
      else if (
        c.logical_scope !== 'machine' &&
        dep.logical_scope !== 'machine' &&
        dep.logical_scope !== c.logical_scope
      )
        out.push({ code: V1_CODES.dependencyCrossGoal, component: c.component_id });
    }
  }
  // Cycles: a depth-first walk; every component on a cycle is named once.
  const state = new Map<string, 'open' | 'done'>();
  const onCycle = new Set<string>();
  const walk = (id: string, path: string[]): void => {
    if (state.get(id) === 'done') return;
    if (state.get(id) === 'open') {
      path.slice(path.indexOf(id)).forEach((x) => onCycle.add(x));
      return;
    }
    state.set(id, 'open');
    for (const d of byId.get(id)?.dependency_ids ?? []) if (byId.has(d)) walk(d, [...path, id]);
    state.set(id, 'done');
  };
  [...byId.keys()].sort().forEach((id) => walk(id, []));
  onCycle.forEach((id) => out.push({ code: V1_CODES.dependencyCycle, component: id }));
  return out.sort((x, y) =>
    x.code < y.code ? -1 : x.code > y.code ? 1 : x.component < y.component ? -1 : x.component > y.component ? 1 : 0,
  );
}

const classify = (c: ManifestComponent, v: VerificationStatus): Classification => {
  if (v !== 'verified') return 'unknown_unrecoverable';
  if (c.state === 'absent') return 'historical_only';
  return OWNER_LIST.find((o) => o.name === c.owner_kind)?.classification ?? 'unknown_unrecoverable';
};

/** Every Goal's required closure: each component it lacks is a hold; a closure that moved under an online capture is not a point in time. Returns the eligible scopes. */
function closureFindings(
  ctx: V1Context,
  list: readonly ManifestComponent[],
  verified: ReadonlyMap<string, VerificationStatus>,
  achieved: CaptureProfile,
): string[] {
  const eligibleScopes: string[] = [];
  for (const closure of ctx.inputs.manifest.goal_closures ?? []) {
    const incomplete = closure.required_component_ids.filter((id) => verified.get(id) !== 'verified');
    const goalComponent = list.find(
      (c) => c.logical_scope === closure.logical_scope && c.owner_kind === OWNERS.goal.name,
    );
    for (const id of incomplete)
      ctx.add(V1_CODES.closureIncomplete, 'hold', goalComponent?.component_id ?? null, 'backup', NEXT.closure, id);
    const members = list.filter((c) => closure.required_component_ids.includes(c.component_id));
    const still = members.every((c) => !c.skew.moved_during_capture && !c.skew.moved_before_set_end);
    const pointInTime = achieved !== 'online' || still;
    if (incomplete.length === 0 && !pointInTime)
      ctx.add(V1_CODES.notPointInTime, 'hold', goalComponent?.component_id ?? null, 'backup', NEXT.online);
    if (incomplete.length === 0 && pointInTime) eligibleScopes.push(closure.logical_scope);
  }
  return eligibleScopes;
}

/**
 * One manifest component (the first under its id): its checks and crash checks, the members it
 * claims, its findings and its audit component. Returns its verification.
 */
function componentSection(
  ctx: V1Context,
  c: ManifestComponent,
  rep: ComponentReport | undefined,
  duplicated: boolean,
  checkpoint: readonly string[],
): VerificationStatus {
  const checked = checkComponent(ctx, c, rep);
  const crash = crashChecks(ctx, c, rep);
  const problems = [...checked.problems, ...crash.problems];
  // Two components under one id: which one the archive means is ambiguous.
  const verification: VerificationStatus = duplicated
    ? 'ambiguous'
    : crash.problems.length > 0
      ? 'invalid'
      : checked.verification;
  const extra = c.owner_kind === OWNERS.config.name ? checkpoint : [];
  [...c.archive_members, ...(c.export_member ? [c.export_member] : []), ...extra].forEach((p) => ctx.claimed.add(p));
  for (const p of problems) ctx.add(p.code, p.severity, c.component_id, ownerLabel(c.owner_kind), p.next);
  if (rep) ctx.fromOwner(c.component_id, ownerLabel(c.owner_kind), rep.findings);
  const classification = classify(c, verification);
  ctx.components.push({
    component_id: c.component_id,
    // An owner this verifier does not know is `unknown` here (its claimed kind stays in the private readback).
    owner_kind: ownerLabel(c.owner_kind),
    logical_scope: c.logical_scope,
    required: c.required,
    archive_members: [...c.archive_members, ...(c.export_member ? [c.export_member] : []), ...extra],
    member_count: c.archive_members.length + (c.export_member ? 1 : 0) + extra.length,
    schema_version: c.schema_version,
    producer_version: c.producer_version,
    capture_profile: c.achieved_profile,
    source_identity: c.source_identity,
    source_revision: c.source_revision,
    cursor: c.cursor,
    content_digest: c.content_digest,
    dependency_ids: [...c.dependency_ids],
    verification_profile: c.verification_profile,
    verification,
    classification,
    next_action:
      c.state === 'absent'
        ? NEXT.absent
        : classification === 'recovered_readable'
          ? NEXT.readable
          : classification === 'historical_only'
            ? NEXT.historical
            : NEXT.broken,
    readback: { ...readbackOf(c, rep, ctx.report), ...crash.readback },
  });
  return verification;
}

/** The set's own findings: the dependency graph's, then each downgrade the producer recorded. */
function setFindings(ctx: V1Context, list: readonly ManifestComponent[], set: RecoverySetCapture): void {
  for (const g of graphFindings(list))
    ctx.add(
      g.code,
      'error',
      g.component,
      ownerLabel(list.find((c) => c.component_id === g.component)!.owner_kind),
      NEXT.broken,
    );
  for (const d of set.downgrades)
    ctx.add(
      d.code,
      d.severity,
      d.component_id,
      d.component_id === null
        ? 'backup'
        : ownerLabel(list.find((c) => c.component_id === d.component_id)?.owner_kind ?? 'backup'),
      DOWNGRADE_NEXT[d.code],
    );
}

/** The profile as recorded — lowered (with an error) if the manifest claims more than its weakest required component. */
function recordedProfile(ctx: V1Context, list: readonly ManifestComponent[], set: RecoverySetCapture): CaptureProfile {
  const weakest = weakestProfile(
    list.filter((c) => c.required).map((c) => c.achieved_profile),
    set.requested_profile,
  );
  const achieved = set.achieved_profile;
  if (weakestProfile([achieved, weakest], achieved) === achieved) return achieved;
  ctx.add(V1_CODES.overclaimed, 'error', null, 'backup', NEXT.broken);
  return weakest;
}

/** The v1 components, graph, closures and profile; returns what the audit's top-level fields need. */
export function v1Sections(ctx: V1Context): V1Result {
  const m = ctx.inputs.manifest;
  const set = m.capture as RecoverySetCapture;
  const list = componentsOf(m);
  const reports = reportsOf(ctx.report);
  const verified = new Map<string, VerificationStatus>();
  const unique = new Set<string>();
  const seen = new Map<string, number>();
  for (const c of list) seen.set(c.component_id, (seen.get(c.component_id) ?? 0) + 1);
  // The configuration checkpoint the producer built from the registry and configuration reads is the config component's.
  const checkpoint = ctx.files.has(configOwner.CHECKPOINT_FILE) ? [configOwner.CHECKPOINT_FILE] : [];
  for (const c of list) {
    if (unique.has(c.component_id)) continue;
    unique.add(c.component_id);
    const duplicated = seen.get(c.component_id)! > 1;
    verified.set(c.component_id, componentSection(ctx, c, reports.get(c.component_id), duplicated, checkpoint));
  }
  // The observed bytes are the crash recovery's inputs, not another component.
  for (const f of set.failure_observation?.files ?? []) ctx.claimed.add(f.archive_member);
  if (set.failure_observation) ctx.claimed.add(ARCHIVE_OBSERVATION);
  setFindings(ctx, list, set);
  const achieved = recordedProfile(ctx, list, set);

  const eligibleScopes = closureFindings(ctx, list, verified, achieved);
  const links = list.reduce((n, c) => n + c.dependency_ids.length, 0);
  return {
    capture: { requested_profile: set.requested_profile, achieved_profile: achieved, producer_claim: set.profile },
    links,
    eligibleScopes: eligibleScopes.sort(),
  };
}

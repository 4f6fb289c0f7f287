/**
 * The components of a `loopx_state_backup_v1` recovery set: one per owner boundary (the OWNERS
 * table — machine owners once, Goal-boundary owners once per Goal), each captured through its
 * owner's `capture()` into the private capture directory, re-observed through `observe()` once
 * every component is captured (the skew inventory), and given the profile its own evidence
 * supports. It never reads an owner's files itself and never claims a profile it did not observe.
 *
 * Component ids are `<owner>` (machine) or `<owner>-<tag>` (Goal), the tag keyed with a random
 * per-backup key that is discarded: stable within the set, unlinkable across sets, and no Goal id
 * can be guessed back from it.
 */
import { createHmac, randomBytes } from 'node:crypto';
import { lstatSync } from 'node:fs';
import { join } from 'node:path';
import { canonicalJson, isLoopxError } from '../core/index.js';
import {
  MACHINE,
  OWNER_LIST,
  boundaryOf,
  goalScope,
  servedAt,
  type CapturePoint,
  type LiveSource,
  type OwnerCapture,
  type OwnerRecovery,
  type OwnerScope,
} from '../owners/index.js';
import { isOutOfSpace } from '../store/index.js';
import type { ComponentSkew, DowngradeFinding, GoalClosure, ManifestComponent, PointRecord } from './manifest.js';
import { producerVersion } from './manifest.js';
import { archivePathOf, posixPath } from './paths.js';
import {
  DOWNGRADE_CODES,
  DOWNGRADE_NEXT,
  weakestProfile,
  type CaptureProfile,
  type DowngradeCode,
} from './profiles.js';

export const ARCHIVE_EXPORTS = 'component-exports';

/** The archive member of a component's export. */
export const exportMemberOf = (componentId: string): string => `${ARCHIVE_EXPORTS}/${componentId}.jsonl`;

export interface ComponentPlan {
  readonly component_id: string;
  readonly owner: OwnerRecovery;
  readonly scope: OwnerScope;
  readonly logical_scope: string;
  readonly required: boolean;
  readonly dependency_ids: readonly string[];
}

/** The set's components in OWNERS (dependency) order, with their dependency ids. */
export function planComponents(goalIds: readonly string[]): ComponentPlan[] {
  const key = randomBytes(32);
  const tag = (goalId: string): string =>
    createHmac('sha256', key).update(`goal\0${goalId}`).digest('hex').slice(0, 12);
  const idOf = (o: OwnerRecovery, scope: OwnerScope): string =>
    scope.goal_id === null ? o.name : `${o.name}-${tag(scope.goal_id)}`;
  const byName = new Map(OWNER_LIST.map((o) => [o.name, o]));
  const plans: ComponentPlan[] = [];
  for (const o of OWNER_LIST) {
    const scopes = boundaryOf(o) === 'goal' ? [...goalIds].sort().map(goalScope) : [MACHINE];
    for (const scope of scopes) {
      const deps = o.dependsOn.flatMap((name) => {
        const dep = byName.get(name)!;
        if (boundaryOf(dep) === 'machine') return [idOf(dep, MACHINE)];
        return scope.goal_id === null ? [] : [idOf(dep, scope)];
      });
      plans.push({
        component_id: idOf(o, scope),
        owner: o,
        scope,
        logical_scope: scope.goal_id === null ? 'machine' : `goal:${tag(scope.goal_id)}`,
        required: o.requiredForGoal,
        dependency_ids: deps,
      });
    }
  }
  return plans;
}

/** Each Goal's required closure: its own components, every required machine component, and their dependencies. */
export function goalClosures(plans: readonly ComponentPlan[]): GoalClosure[] {
  const byId = new Map(plans.map((p) => [p.component_id, p]));
  const goals = [...new Set(plans.flatMap((p) => (p.scope.goal_id === null ? [] : [p.scope.goal_id])))].sort();
  return goals.map((goalId) => {
    const start = plans.filter((p) => p.scope.goal_id === goalId || (p.scope.goal_id === null && p.required));
    const seen = new Set<string>();
    const visit = (id: string): void => {
      if (seen.has(id)) return;
      seen.add(id);
      for (const d of byId.get(id)?.dependency_ids ?? []) visit(d);
    };
    start.forEach((p) => visit(p.component_id));
    return {
      goal_id: goalId,
      logical_scope: start.find((p) => p.scope.goal_id === goalId)!.logical_scope,
      required_component_ids: [...seen].sort(),
    };
  });
}

/** A component as captured (or found absent, or unreadable). */
export interface CapturedComponent {
  readonly plan: ComponentPlan;
  readonly state: ManifestComponent['state'];
  readonly capture: OwnerCapture | null;
  /** The export as JSON lines (canonical records), when captured. */
  readonly exportBytes: Uint8Array | null;
}

const exists = (abs: string): boolean => {
  try {
    lstatSync(abs);
    return true;
  } catch {
    return false;
  }
};

/**
 * Whether the owner holds state in `live` for the component: its state is in a service (the root's,
 * or the one its Goal chose — the owner keeps it there: read, never presumed absent), or any of its
 * members is in the root. Capture and the end re-check decide it alike.
 */
const isPresent = (live: LiveSource, plan: ComponentPlan): boolean =>
  servedAt(plan.owner, live, plan.scope) || plan.owner.members(plan.scope).some((m) => exists(join(live.root, m.path)));

/** Capture one component from `live` (the live root with its service, or a failure observation of the root) into `into`. */
export async function captureComponent(
  live: LiveSource,
  plan: ComponentPlan,
  into: string,
): Promise<CapturedComponent> {
  const present = isPresent(live, plan);
  // A machine owner that never created its store holds nothing (a confirmed absence); a registered
  // Goal whose own store is not there is missing state, never silently optional.
  if (!present)
    return { plan, state: plan.scope.goal_id === null ? 'absent' : 'missing', capture: null, exportBytes: null };
  let capture: OwnerCapture;
  try {
    capture = await plan.owner.capture(live, plan.scope, into);
  } catch (e) {
    // Out of space and capacity say nothing about the owner's state: they stop the backup.
    if (isOutOfSpace(e) || (isLoopxError(e) && e.code.endsWith('_capacity_exceeded'))) throw e;
    return { plan, state: 'unreadable', capture: null, exportBytes: null };
  }
  // The owner's own encoding of each record (encoded once, as hashed); the records otherwise.
  const lines = (capture.export_lines ?? capture.export.map((r) => canonicalJson(r))).join('\n');
  return {
    plan,
    state: 'captured',
    capture: { ...capture, export: [], export_lines: [] },
    exportBytes: Buffer.from(`${lines}\n`, 'utf8'),
  };
}

/** The set's end re-check: every component's live position now (null: absent). */
export async function observeAll(
  live: LiveSource,
  plans: readonly ComponentPlan[],
): Promise<Map<string, CapturePoint | null>> {
  const out = new Map<string, CapturePoint | null>();
  for (const p of plans) {
    try {
      out.set(p.component_id, isPresent(live, p) ? await p.owner.observe(live, p.scope) : null);
    } catch (e) {
      if (isOutOfSpace(e)) throw e;
      // Unobservable now: counted as moved (never as still).
      out.set(p.component_id, { revision: 'unobservable', cursor: null, at: new Date().toISOString() });
    }
  }
  return out;
}

const pointOf = (p: CapturePoint | null | undefined): PointRecord | null =>
  p ? { revision: p.revision, cursor: p.cursor, at: p.at } : null;

function skewOf(c: CapturedComponent, end: CapturePoint | null): ComponentSkew {
  if (c.capture === null) {
    const moved = c.state === 'absent' ? end !== null : true;
    return { moved_during_capture: false, moved_before_set_end: moved, set_end: pointOf(end), cursor_delta: null };
  }
  const cap = c.capture;
  const delta = end && end.cursor !== null && cap.end.cursor !== null ? end.cursor - cap.captured.cursor : null;
  return {
    moved_during_capture: cap.start.revision !== cap.end.revision,
    moved_before_set_end: end === null || end.revision !== cap.end.revision,
    set_end: pointOf(end),
    cursor_delta: delta,
  };
}

/** What the capture observed about the set, besides each component. */
export interface SetEvidence {
  readonly requested: CaptureProfile;
  /** Quiescent: whether every writer drained before the capture began. */
  readonly drained?: boolean;
}

/** The downgrades a component's evidence forces, for the profile requested. */
function downgradesOf(c: CapturedComponent, skew: ComponentSkew, ev: SetEvidence): DowngradeCode[] {
  if (c.state === 'unreadable') return [DOWNGRADE_CODES.unreadable];
  if (c.state === 'missing') return [DOWNGRADE_CODES.missing];
  if (ev.requested !== 'quiescent') return [];
  const codes: DowngradeCode[] = [];
  if (ev.drained === false) codes.push(DOWNGRADE_CODES.notDrained);
  if (skew.moved_during_capture || skew.moved_before_set_end) codes.push(DOWNGRADE_CODES.moved);
  if ((c.capture?.in_flight ?? 0) > 0) codes.push(DOWNGRADE_CODES.effectInFlight);
  return codes;
}

/** The manifest's components, the set's downgrades and its achieved profile. */
export function describeComponents(
  captured: readonly CapturedComponent[],
  ends: ReadonlyMap<string, CapturePoint | null>,
  ev: SetEvidence,
): { components: ManifestComponent[]; downgrades: DowngradeFinding[]; achieved: CaptureProfile } {
  const downgrades: DowngradeFinding[] = [];
  const components = captured.map((c): ManifestComponent => {
    const skew = skewOf(c, ends.get(c.plan.component_id) ?? null);
    const codes = downgradesOf(c, skew, ev);
    const achieved: CaptureProfile = codes.length > 0 ? 'online' : ev.requested;
    for (const code of codes) {
      const held = code === DOWNGRADE_CODES.unreadable || code === DOWNGRADE_CODES.missing;
      downgrades.push({
        code,
        component_id: c.plan.component_id,
        severity: held ? 'hold' : 'warning',
        next_action: DOWNGRADE_NEXT[code],
      });
    }
    const cap = c.capture;
    return {
      component_id: c.plan.component_id,
      owner_kind: c.plan.owner.name,
      logical_scope: c.plan.logical_scope,
      goal_id: c.plan.scope.goal_id,
      archive_members: (cap?.members ?? []).map((m) => archivePathOf(posixPath(m))).sort(),
      export_member: cap ? exportMemberOf(c.plan.component_id) : null,
      export_items: cap?.export_items ?? null,
      ...(cap?.provider === undefined ? {} : { provider: cap.provider }),
      required: c.plan.required,
      state: c.state,
      schema_version: cap?.export_schema ?? null,
      producer_version: producerVersion(),
      capture_profile: achieved,
      requested_profile: ev.requested,
      achieved_profile: achieved,
      source_identity: cap?.source_identity ?? null,
      source_revision: cap?.captured.revision ?? null,
      cursor: cap?.captured.cursor ?? null,
      content_digest: cap?.export_sha256 ?? null,
      record_count: cap?.record_count ?? null,
      dependency_ids: c.plan.dependency_ids,
      verification_profile: c.plan.owner.verificationProfile,
      capture_interval: { start: pointOf(cap?.start), end: pointOf(cap?.end) },
      in_flight: cap?.in_flight ?? 0,
      skew,
      downgrades: codes,
    };
  });
  const achieved = weakestProfile(
    components.filter((c) => c.required).map((c) => c.achieved_profile),
    ev.requested,
  );
  if (achieved !== ev.requested) {
    downgrades.push({
      code: DOWNGRADE_CODES.setDowngraded,
      component_id: null,
      severity: 'warning',
      next_action: DOWNGRADE_NEXT[DOWNGRADE_CODES.setDowngraded],
    });
  }
  return { components, downgrades, achieved };
}

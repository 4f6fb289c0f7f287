/**
 * What a verified backup holds, in the operator's terms (`GET /api/audits/:id/contents`): per Goal
 * its id, title and lifecycle, its Todos by status, its committed history, its sessions, the runs
 * they bound and its effects — each row with the classification, owner and next action the private
 * audit gave the component that holds it (an owner's hold, where one names it, is the next action).
 * Read from the private audit and the workspace's historical readers for the signed-in operator
 * only; it names no path but the workspace's directory relative to the root, and grants nothing.
 */
import type { RecoveryAudit, WorkspaceContents, WorkspaceEffect, WorkspaceGoalContents } from '../runtime/index.js';
import { ownerDescriptions, SETTLED_BY_RECOVERY } from '../runtime/index.js';

type Component = RecoveryAudit['components'][number];
type Finding = RecoveryAudit['findings'][number];

export interface ContentsHold {
  readonly code: string;
  readonly owner: string;
  readonly component: string | null;
  readonly goal_id: string | null;
  readonly next_action: string;
}

export interface ContentsRow {
  readonly item: 'goal' | 'todos' | 'history' | 'sessions' | 'runs' | 'effects';
  readonly count: number;
  readonly by_status: Record<string, number>;
  readonly owner: string;
  readonly component_id: string | null;
  readonly classification: Component['classification'];
  readonly verification: Component['verification'];
  readonly holds: readonly { readonly code: string; readonly owner: string; readonly next_action: string }[];
  readonly next_action: string;
}

type Run = WorkspaceContents['goals'][number]['runs'][number];

export interface ContentsGoal {
  readonly goal_id: string;
  readonly goal_instance_id: string | null;
  /** null when the audit names the Goal but the workspace holds no readable goal.json for it. */
  readonly title: string | null;
  readonly lifecycle: string | null;
  readonly logical_scope: string;
  readonly activation_eligible: boolean;
  readonly read_command: string;
  readonly rows: readonly ContentsRow[];
  readonly runs: readonly Run[];
  readonly effects: readonly WorkspaceEffect[];
}

export interface AuditContents {
  readonly recovery_id: string;
  readonly backup_id: string;
  readonly phase: RecoveryAudit['phase'];
  readonly operator_state: RecoveryAudit['operator_state'];
  readonly workspace: { readonly directory: string; readonly read_only: string; readonly command: string };
  readonly goals: readonly ContentsGoal[];
  readonly other: {
    readonly rows: readonly ContentsRow[];
    readonly runs: readonly Run[];
    readonly effects: readonly WorkspaceEffect[];
  };
  readonly components: readonly {
    readonly component_id: string;
    readonly name: string;
    readonly owner_kind: string;
    readonly what: string;
    readonly goal_id: string | null;
  }[];
  readonly holds: readonly ContentsHold[];
  readonly verdict: Verdict;
  readonly runs_readable: boolean;
  readonly execution_authority_granted: false;
}

/**
 * The audit in one sentence's numbers, for the page to lead with: how many Goals a recovery can
 * take from it, and its holds split into those that recovery settles by itself and those that need
 * the operator (errors counted apart). `recoverable` when at least one Goal is eligible.
 */
export interface Verdict {
  readonly recoverable: boolean;
  readonly goals: number;
  readonly eligible_goals: number;
  readonly holds_settled_by_recovery: number;
  readonly holds_for_operator: number;
  readonly errors: number;
}

const NO_COMPONENT = 'no component of this audit covers it: read the workspace by hand, or verify another backup';
const RUNS_UNREADABLE = "the run kernel's store could not be read back; see the audit's findings";
const ENGINE = 'engine';

/** The command of a `…: loopx …` text (written whole, so the next-actions test parses it as printed). */
const commandOf = (text: string): string => text.slice(text.indexOf(': loopx ') + 2);

const countBy = <T>(xs: readonly T[], key: (x: T) => string): Record<string, number> => {
  const out: Record<string, number> = {};
  for (const x of xs) out[key(x)] = (out[key(x)] ?? 0) + 1;
  return out;
};

const goalIdOf = (c: Component): string | null =>
  typeof c.readback['goal_id'] === 'string' ? c.readback['goal_id'] : null;

/** The audit's components by owner and scope, and the scope the audit gave each Goal. */
function indexAudit(audit: RecoveryAudit) {
  const byOwnerScope = new Map<string, Component>();
  for (const c of audit.components)
    if (!byOwnerScope.has(`${c.owner_kind}\0${c.logical_scope}`))
      byOwnerScope.set(`${c.owner_kind}\0${c.logical_scope}`, c);
  const scopeOfGoal = new Map<string, string>();
  for (const c of audit.components) {
    const g = goalIdOf(c);
    if (g !== null && !scopeOfGoal.has(g)) scopeOfGoal.set(g, c.logical_scope);
  }
  const component = (owner: string, scope: string): Component | undefined =>
    byOwnerScope.get(`${owner}\0${scope}`) ?? byOwnerScope.get(`${owner}\0machine`);
  return { component, scopeOfGoal };
}

/** A hold belongs to a Goal when its private subject names the Goal (`goals/<id>/…`, or its id), one of its sessions or one of its effects. */
function holdsOf(findings: readonly Finding[], goalId: string, subjects: readonly string[]): Finding[] {
  const named = new Set([goalId, `goal:${goalId}`, ...subjects]);
  return findings.filter(
    (f) => f.subject !== null && (named.has(f.subject) || f.subject.startsWith(`goals/${goalId}/`)),
  );
}

interface RowInput {
  readonly item: ContentsRow['item'];
  readonly owner: string;
  readonly count: number;
  readonly by_status?: Record<string, number>;
  readonly component: Component | undefined;
  readonly holds: readonly Finding[];
  readonly override?: { classification: Component['classification']; next_action: string };
}

function row(r: RowInput): ContentsRow {
  const c = r.component;
  const holds = r.holds
    .filter((h) => c !== undefined && h.component === c.component_id)
    .map((h) => ({ code: h.code, owner: h.owner, next_action: h.next_action }));
  return {
    item: r.item,
    count: r.count,
    by_status: r.by_status ?? {},
    owner: r.owner,
    component_id: c?.component_id ?? null,
    classification: r.override?.classification ?? c?.classification ?? 'unknown_unrecoverable',
    verification: c?.verification ?? 'missing',
    holds,
    next_action: holds[0]?.next_action ?? r.override?.next_action ?? c?.next_action ?? NO_COMPONENT,
  };
}

/** The rows of what belongs to one scope: sessions, runs and effects (a Goal adds its record, Todos and history first). */
function activityRows(
  find: (owner: string) => Component | undefined,
  holds: readonly Finding[],
  part: { session_ids: readonly string[]; runs: readonly Run[]; effects: readonly WorkspaceEffect[] },
  runsReadable: boolean,
): ContentsRow[] {
  const engine = find(ENGINE);
  return [
    row({ item: 'sessions', owner: 'session', count: part.session_ids.length, component: find('session'), holds }),
    row({
      item: 'runs',
      owner: ENGINE,
      count: part.runs.length,
      by_status: countBy(part.runs, (r) => r.lifecycle),
      component: engine,
      holds,
      ...(runsReadable ? {} : { override: { classification: 'unknown_unrecoverable', next_action: RUNS_UNREADABLE } }),
    }),
    row({
      item: 'effects',
      owner: 'effect',
      count: part.effects.length,
      by_status: countBy(part.effects, (e) => e.outcome),
      component: find('effect'),
      holds,
    }),
  ];
}

function goalRows(
  g: WorkspaceGoalContents | undefined,
  find: (owner: string) => Component | undefined,
  holds: readonly Finding[],
  runsReadable: boolean,
): ContentsRow[] {
  const todos = Object.values(g?.todos_by_status ?? {}).reduce((a, b) => a + b, 0);
  const work =
    g?.work_readable === false
      ? {
          override: {
            classification: 'unknown_unrecoverable' as const,
            next_action: "the Goal's work store could not be read back; see the audit's findings",
          },
        }
      : {};
  return [
    row({
      item: 'goal',
      owner: 'goal',
      count: g ? 1 : 0,
      ...(g ? { by_status: { [g.lifecycle]: 1 } } : {}),
      component: find('goal'),
      holds,
    }),
    row({
      item: 'todos',
      owner: 'work',
      count: todos,
      by_status: g?.todos_by_status ?? {},
      component: find('work'),
      holds,
      ...work,
    }),
    row({
      item: 'history',
      owner: 'work',
      count: g?.committed_transactions ?? 0,
      component: find('work'),
      holds,
      ...work,
    }),
    ...activityRows(find, holds, g ?? { session_ids: [], runs: [], effects: [] }, runsReadable),
  ];
}

/** The holds that belong to one Goal: those its subjects name, and every hold of a component scoped to it. */
function goalHolds(
  audit: RecoveryAudit,
  holds: readonly Finding[],
  goalId: string,
  scope: string,
  g: WorkspaceGoalContents | undefined,
): Finding[] {
  const own = holdsOf(holds, goalId, [
    ...(g?.session_ids ?? []).map((id) => `session:${id}`),
    ...(g?.effects ?? []).map((e) => `effect:${e.operation_id}`),
  ]);
  // A hold of a Goal-scoped component is the Goal's whatever its subject says.
  for (const h of holds)
    if (
      !own.includes(h) &&
      audit.components.some((c) => c.component_id === h.component && c.logical_scope === scope && scope !== 'machine')
    )
      own.push(h);
  return own;
}

/** The audit's components in the operator's terms: whose (a Goal's or the whole root's), which owner, what it decides. */
function componentsView(audit: RecoveryAudit, scopeOfGoal: ReadonlyMap<string, string>): AuditContents['components'] {
  const decides = new Map(ownerDescriptions().map((o) => [o.name, o.decides]));
  const goalOfScope = new Map([...scopeOfGoal].map(([g, s]) => [s, g]));
  return audit.components.map((c) => {
    const goalId = goalOfScope.get(c.logical_scope) ?? null;
    const known = decides.get(c.owner_kind);
    return {
      component_id: c.component_id,
      name:
        known === undefined
          ? 'bytes no loopx owner reads'
          : goalId !== null
            ? `Goal ${goalId}: ${c.owner_kind}`
            : `whole root: ${c.owner_kind}`,
      owner_kind: known === undefined ? 'unknown' : c.owner_kind,
      what: known ?? 'nothing: no loopx owner reads these bytes; inspect them by hand',
      goal_id: goalId,
    };
  });
}

/**
 * The answer for one audit: `contents` read from its workspace (with the audit it was read under),
 * `jobDir` the destination's directory name under `daemon/recoveries/`.
 */
export function auditContents(contents: WorkspaceContents, jobDir: string): AuditContents {
  const { audit } = contents;
  const { component, scopeOfGoal } = indexAudit(audit);
  const holds = audit.findings.filter((f) => f.severity === 'hold');
  const destination = `daemon/recoveries/${jobDir}`;
  const eligible = new Set(audit.activation?.eligible_scopes ?? []);
  const read = new Map(contents.goals.map((g) => [g.goal_id, g]));
  const goalIds = [...contents.goals.map((g) => g.goal_id), ...[...scopeOfGoal.keys()].filter((id) => !read.has(id))];
  const holdGoal = new Map<Finding, string>();
  const goals = goalIds.map((goalId): ContentsGoal => {
    const g = read.get(goalId);
    const scope = scopeOfGoal.get(goalId) ?? 'machine';
    const own = goalHolds(audit, holds, goalId, scope, g);
    own.forEach((h) => holdGoal.set(h, goalId));
    return {
      goal_id: goalId,
      goal_instance_id: g?.goal_instance_id ?? null,
      title: g?.title ?? null,
      lifecycle: g?.lifecycle ?? null,
      logical_scope: scope,
      activation_eligible: eligible.has(scope),
      read_command: commandOf(
        `in the root's directory: loopx backup-state workspace show ${destination} --goal ${goalId}`,
      ),
      rows: goalRows(g, (owner) => component(owner, scope), own, contents.runs_readable),
      runs: g?.runs ?? [],
      effects: g?.effects ?? [],
    };
  });
  const otherHolds = holds.filter((h) => !holdGoal.has(h));
  const readOnly = `in the root's directory: loopx backup-state workspace ls ${destination}`;
  return {
    recovery_id: audit.recovery_id,
    backup_id: audit.backup.backup_id,
    phase: audit.phase,
    operator_state: audit.operator_state,
    workspace: {
      directory: `${destination}/${audit.workspace.directory}`,
      read_only: readOnly,
      command: commandOf(readOnly),
    },
    goals,
    other: {
      rows: activityRows((owner) => component(owner, 'machine'), otherHolds, contents.other, contents.runs_readable),
      runs: contents.other.runs,
      effects: contents.other.effects,
    },
    components: componentsView(audit, scopeOfGoal),
    holds: holds.map((h) => ({
      code: h.code,
      owner: h.owner,
      component: h.component,
      goal_id: holdGoal.get(h) ?? null,
      next_action: h.next_action,
    })),
    verdict: verdictOf(goals, holds, audit.findings.filter((f) => f.severity === 'error').length),
    runs_readable: contents.runs_readable,
    execution_authority_granted: false,
  };
}

function verdictOf(goals: readonly ContentsGoal[], holds: readonly Finding[], errors: number): Verdict {
  const eligible = goals.filter((g) => g.activation_eligible).length;
  // Only a recovery that can happen settles anything.
  const settled = eligible > 0 ? holds.filter((h) => SETTLED_BY_RECOVERY.includes(h.code)).length : 0;
  return {
    recoverable: eligible > 0,
    goals: goals.length,
    eligible_goals: eligible,
    holds_settled_by_recovery: settled,
    holds_for_operator: holds.length - settled,
    errors,
  };
}

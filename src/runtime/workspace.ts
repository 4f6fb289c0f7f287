/**
 * Reading a recovery workspace back (`loopx backup-state workspace ls|show`, and the daemon's
 * workspace routes): the Goals, Todos, committed history, sessions, runs and effects an inert
 * workspace holds, through each owner's historical reader — never through a live owner, an engine
 * or the run authority. A workspace is evidence: this module opens no SQLite file in it (every
 * database is read from a private scratch copy), takes no lock, writes nothing inside it, and
 * grants nothing (`execution_authority_granted: false`).
 *
 * The destination's audit is re-read first (its content address re-checked), so only a published
 * verification is read, and the Goals reported are the ones that workspace's files hold. A
 * component captured from a database service (a root on PostgreSQL) has no files: its owner reads
 * it back from its export, named by the workspace's manifest.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { notFound } from '../core/index.js';
import { operatorPath } from '../core/index.js';
import { LAYOUT, MACHINE, OWNERS, goalScope, type CopiedRoot } from '../owners/index.js';
import { servedExports, showAudit, WORKSPACE_DIR, type RecoveryAudit } from '../recovery/index.js';
import { readHistoricalRuns, type HistoricalRun } from '../engine/index.js';

/** The archive's name for the root inside the workspace (backup/paths.ts ARCHIVE_ROOT). */
const RUNTIME_ROOT = 'runtime-root';

export interface WorkspaceFinding {
  readonly code: string;
  readonly severity: string;
  readonly subject: string;
  readonly next_action: string;
}

export interface WorkspaceGoalSummary {
  readonly goal_id: string;
  readonly goal_instance_id: string;
  readonly title: string;
  readonly lifecycle: string;
  readonly work_readable: boolean;
  readonly todos_by_status: Record<string, number>;
  readonly committed_transactions: number;
}

export interface WorkspaceListing {
  readonly recovery_id: string;
  readonly backup_id: string;
  readonly operator_state: string;
  readonly execution_authority_granted: false;
  readonly goals: readonly WorkspaceGoalSummary[];
  readonly runs_readable: boolean;
  readonly runs: readonly HistoricalRun[];
  readonly sessions: number;
  readonly effects_by_outcome: Record<string, number>;
  readonly findings: readonly WorkspaceFinding[];
}

export interface WorkspaceGoalDetail {
  readonly recovery_id: string;
  readonly execution_authority_granted: false;
  readonly goal: {
    readonly goal_id: string;
    readonly goal_instance_id: string;
    readonly title: string;
    readonly lifecycle: string;
    readonly docs: readonly { name: string; sha256: string; bytes: number }[];
  };
  readonly work: {
    readonly readable: boolean;
    readonly store_identity: string | null;
    readonly head_cursor: number | null;
    readonly committed_transactions: number;
    readonly handoff_mode: string | null;
  };
  readonly todos: readonly {
    todo_id: string;
    title: string;
    status: string;
    priority: number;
    note: string | null;
    todo_revision: number;
  }[];
  readonly sessions: readonly {
    session_id: string;
    run_id: string | null;
    status: string;
    session_generation: number;
    execution_generation: number;
  }[];
  readonly runs: readonly HistoricalRun[];
  readonly effects: readonly {
    operation_id: string;
    kind: string;
    target: string;
    outcome: string;
    hold: string | null;
    attempt: number;
  }[];
  readonly findings: readonly WorkspaceFinding[];
}

const lite = (f: { code: string; severity?: string; subject: string; next_action: string }): WorkspaceFinding => ({
  code: f.code,
  severity: f.severity ?? 'error',
  subject: f.subject,
  next_action: f.next_action,
});

/** The destination's audit, re-checked, and the runtime root copy inside its workspace (with its served exports). */
function open(destination: string) {
  const { audit } = showAudit(destination);
  const root = join(destination, WORKSPACE_DIR, RUNTIME_ROOT);
  const exports = servedExports(join(destination, WORKSPACE_DIR));
  return { audit, root, copy: { root, ...(exports === undefined ? {} : { exports }) } };
}

/** `fn` with a private scratch directory for SQLite copies, removed afterwards (outside the workspace). */
function withScratch<T>(fn: (scratch: string) => T): T {
  const scratch = mkdtempSync(join(tmpdir(), 'loopx-workspace-read-'));
  try {
    return fn(scratch);
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

function workSummary(copy: CopiedRoot, goalId: string) {
  return OWNERS.work.readHistorical(copy, goalScope(goalId)).value;
}

/** Everything a workspace's readers give back in one pass (each database read once, from a scratch copy). */
function readAll(destination: string) {
  const { audit, root, copy } = open(destination);
  return withScratch((scratch) => {
    const findings: WorkspaceFinding[] = [];
    const g = OWNERS.goal.readHistorical({ root }, MACHINE).value;
    findings.push(...g.findings.map(lite));
    const goals = g.goals.map((record) => {
      const w = workSummary(copy, record.goal_id);
      findings.push(...w.findings.map(lite));
      const byStatus: Record<string, number> = {};
      for (const t of w.todos) byStatus[t.status] = (byStatus[t.status] ?? 0) + 1;
      return {
        goal_id: record.goal_id,
        goal_instance_id: record.goal_instance_id,
        title: record.title,
        lifecycle: record.lifecycle,
        work_readable: w.readable,
        todos_by_status: byStatus,
        committed_transactions: w.history_count,
      };
    });
    const runs = readHistoricalRuns(join(root, LAYOUT.engineDb), { scratchDir: scratch });
    const s = OWNERS.session.readHistorical({ ...copy, scratchDir: scratch }, MACHINE).value;
    const e = OWNERS.effect.readHistorical({ ...copy, scratchDir: scratch }, MACHINE).value;
    findings.push(...s.findings.map(lite), ...e.findings.map(lite));
    return { audit, goals, runs, sessions: s.sessions, effects: e.effects, findings };
  });
}

export function listWorkspace(destination: string): WorkspaceListing {
  const { audit, goals, runs, sessions, effects, findings } = readAll(destination);
  const byOutcome: Record<string, number> = {};
  for (const x of effects) byOutcome[x.outcome] = (byOutcome[x.outcome] ?? 0) + 1;
  return {
    recovery_id: audit.recovery_id,
    backup_id: audit.backup.backup_id,
    operator_state: audit.operator_state,
    execution_authority_granted: false,
    goals,
    runs_readable: runs.readable,
    runs: runs.runs,
    sessions: sessions.length,
    effects_by_outcome: byOutcome,
    findings,
  };
}

/** A workspace effect as evidence: what, where, and how it ended (never its intent or receipt). */
export interface WorkspaceEffect {
  readonly operation_id: string;
  readonly kind: string;
  readonly target: string;
  readonly outcome: string;
  readonly hold: string | null;
  readonly attempt: number;
}

/** One Goal of a workspace with what belongs to it: its sessions, the runs they bound, its effects. */
export interface WorkspaceGoalContents extends WorkspaceGoalSummary {
  readonly session_ids: readonly string[];
  readonly runs: readonly HistoricalRun[];
  readonly effects: readonly WorkspaceEffect[];
}

/** What a verified workspace holds, grouped by Goal (`listWorkspace`'s reading, kept together per Goal). */
export interface WorkspaceContents {
  readonly audit: RecoveryAudit;
  readonly goals: readonly WorkspaceGoalContents[];
  readonly runs_readable: boolean;
  /** Runs no Goal's session bound, and effects scoped to no Goal of the workspace (a run's own scope). */
  readonly other: {
    readonly session_ids: readonly string[];
    readonly runs: readonly HistoricalRun[];
    readonly effects: readonly WorkspaceEffect[];
  };
  readonly findings: readonly WorkspaceFinding[];
}

const effectLite = (x: WorkspaceEffect): WorkspaceEffect => ({
  operation_id: x.operation_id,
  kind: x.kind,
  target: x.target,
  outcome: x.outcome,
  hold: x.hold,
  attempt: x.attempt,
});

/** The workspace's contents per Goal, with the destination's audit they were read under (re-checked first). */
export function readWorkspaceContents(destination: string): WorkspaceContents {
  const { audit, goals, runs, sessions, effects, findings } = readAll(destination);
  const known = new Set(goals.map((g) => g.goal_id));
  const part = (belongs: (goalId: string) => boolean) => {
    const own = sessions.filter((x) => belongs(x.goal_id));
    const bound = new Set(own.map((x) => x.run_id).filter((id): id is string => id !== null));
    return {
      session_ids: own.map((x) => x.session_id),
      runs: runs.runs.filter((r) => bound.has(r.run_id)),
      effects: effects.filter((x) => belongs(x.goal_id)).map(effectLite),
    };
  };
  const perGoal = goals.map((g) => ({ ...g, ...part((id) => id === g.goal_id) }));
  const other = part((id) => !known.has(id));
  const claimed = new Set(perGoal.flatMap((g) => g.runs.map((r) => r.run_id)));
  return {
    audit,
    goals: perGoal,
    runs_readable: runs.readable,
    // A run bound to no Goal's session is the workspace's, outside any Goal.
    other: { ...other, runs: runs.runs.filter((r) => !claimed.has(r.run_id)) },
    findings,
  };
}

/** `listAction`: how the caller lists the Goals (default: the CLI command, naming D relative to here). */
export function showWorkspaceGoal(
  destination: string,
  goalId: string,
  options: { listAction?: string } = {},
): WorkspaceGoalDetail {
  const { audit, root, copy } = open(destination);
  const record = OWNERS.goal.readHistorical({ root }, MACHINE).value.goals.find((x) => x.goal_id === goalId);
  if (!record) {
    const nextAction =
      options.listAction !== undefined
        ? `list the workspace's Goals: ${options.listAction}`
        : `list the workspace's Goals: loopx backup-state workspace ls ${operatorPath(destination)}`;
    throw notFound('workspace_goal_not_found', `The workspace holds no readable Goal ${goalId}.`, { nextAction });
  }
  return withScratch((scratch) => {
    const w = workSummary(copy, goalId);
    const s = OWNERS.session.readHistorical({ ...copy, scratchDir: scratch }, MACHINE).value;
    const e = OWNERS.effect.readHistorical({ ...copy, scratchDir: scratch }, MACHINE).value;
    const sessions = s.sessions.filter((x) => x.goal_id === goalId);
    const boundRuns = new Set(sessions.map((x) => x.run_id).filter((id): id is string => id !== null));
    const runs = readHistoricalRuns(join(root, LAYOUT.engineDb), { scratchDir: scratch }).runs.filter((r) =>
      boundRuns.has(r.run_id),
    );
    return {
      recovery_id: audit.recovery_id,
      execution_authority_granted: false,
      goal: {
        goal_id: record.goal_id,
        goal_instance_id: record.goal_instance_id,
        title: record.title,
        lifecycle: record.lifecycle,
        docs: record.docs.map((d) => ({ name: d.name, sha256: d.sha256, bytes: d.bytes })),
      },
      work: {
        readable: w.readable,
        store_identity: w.store_identity,
        head_cursor: w.head_cursor,
        committed_transactions: w.history_count,
        handoff_mode: w.handoff_mode,
      },
      todos: w.todos.map((t) => ({
        todo_id: t.todo_id,
        title: t.title,
        status: t.status,
        priority: t.priority,
        note: t.note,
        todo_revision: t.todo_revision,
      })),
      sessions: sessions.map((x) => ({
        session_id: x.session_id,
        run_id: x.run_id,
        status: x.status,
        session_generation: x.session_generation,
        execution_generation: x.execution_generation,
      })),
      runs,
      effects: e.effects
        .filter((x) => x.goal_id === goalId)
        .map((x) => ({
          operation_id: x.operation_id,
          kind: x.kind,
          target: x.target,
          outcome: x.outcome,
          hold: x.hold,
          attempt: x.attempt,
        })),
      findings: [
        ...w.findings,
        ...s.findings.filter((f) => f.subject.includes(goalId)),
        ...e.findings.filter((f) => f.subject.includes(goalId)),
      ].map(lite),
    };
  });
}

/**
 * `loopx backup-state workspace ls D` and `loopx backup-state workspace show D --goal G`: read a
 * recovery workspace back without changing it — its Goals, Todos, committed history, sessions,
 * runs and effects, through the owners' historical readers (src/runtime/workspace.ts). The
 * destination's audit is re-checked first. Nothing here opens the workspace as a root, and
 * nothing read here grants execution.
 */
import type { Command } from 'commander';
import { resolve } from 'node:path';
import { operatorPath } from '../../core/index.js';
import type { WorkspaceGoalDetail, WorkspaceListing } from '../../runtime/index.js';
import { emit, runtime, type GlobalOptions, type Output } from '../context.js';

const counts = (by: Record<string, number>): string =>
  Object.entries(by)
    .map(([k, n]) => `${n} ${k}`)
    .join(', ') || 'none';

function printListing(w: WorkspaceListing, out: Output, workspace: string): void {
  out.line(
    `recovery workspace ${w.recovery_id} (backup ${w.backup_id}, ${w.operator_state}) — inert: read only, no execution authority`,
  );
  out.line(`  Goals: ${w.goals.length}`);
  for (const g of w.goals) {
    out.line(`    ${g.goal_id.padEnd(20)} ${g.lifecycle.padEnd(9)} ${g.title}`);
    out.line(
      `      Todos: ${counts(g.todos_by_status)}; ${g.committed_transactions} committed transactions${g.work_readable ? '' : ' (work store unreadable)'}`,
    );
    // The next step for a Goal found here: its recovery into a new root (which also readmits its sessions).
    out.hint(
      `      recover it into a new root: loopx recover plan --from ${operatorPath(resolve(workspace))} --goal ${g.goal_id} --destination NEW_ROOT`,
    );
  }
  out.line(`  runs: ${w.runs_readable ? w.runs.length : 'unreadable'}`);
  for (const r of w.runs)
    out.line(
      `    ${r.run_id.padEnd(28)} ${r.lifecycle.padEnd(9)} ${r.completed_turns} turns, last sequence ${r.last_sequence}`,
    );
  out.line(`  sessions: ${w.sessions}; effects: ${counts(w.effects_by_outcome)}`);
  for (const f of w.findings.filter((x) => x.severity !== 'info'))
    out.line(`  ${f.severity} ${f.code} (${f.subject}) — ${f.next_action}`);
}

function printGoal(d: WorkspaceGoalDetail, out: Output): void {
  const g = d.goal;
  out.line(`Goal ${g.goal_id} in recovery workspace ${d.recovery_id} — inert: read only, no execution authority`);
  out.line(`  instance ${g.goal_instance_id}, ${g.lifecycle}: ${g.title}`);
  out.line(
    `  work: ${d.work.readable ? `${d.work.committed_transactions} committed transactions, head cursor ${d.work.head_cursor}, store ${d.work.store_identity}` : 'unreadable'}`,
  );
  out.line(`  Todos: ${d.todos.length}`);
  for (const t of d.todos) out.line(`    ${t.todo_id.padEnd(16)} ${t.status.padEnd(9)} ${t.title}`);
  out.line(`  sessions: ${d.sessions.length}`);
  for (const s of d.sessions) out.line(`    ${s.session_id.padEnd(28)} ${s.status.padEnd(9)} run ${s.run_id ?? '—'}`);
  out.line(`  runs: ${d.runs.length}`);
  for (const r of d.runs)
    out.line(
      `    ${r.run_id.padEnd(28)} ${r.lifecycle.padEnd(9)} ${r.completed_turns} turns, last sequence ${r.last_sequence}`,
    );
  out.line(`  effects: ${d.effects.length}`);
  for (const e of d.effects)
    out.line(`    ${e.operation_id.padEnd(28)} ${e.kind.padEnd(16)} ${e.outcome}${e.hold ? ` (held: ${e.hold})` : ''}`);
  for (const f of d.findings.filter((x) => x.severity !== 'info'))
    out.line(`  ${f.severity} ${f.code} (${f.subject}) — ${f.next_action}`);
}

export function register(backupState: Command, globals: () => GlobalOptions): void {
  const workspace = backupState
    .command('workspace')
    .description('read a recovery workspace back without changing it (it is never a live root)');
  workspace
    .command('ls <destination>')
    .description("list a verified workspace's Goals, runs, sessions and effects")
    .action(async (destination: string) =>
      emit(globals(), (await runtime()).listWorkspace(destination), (w, out) => printListing(w, out, destination)),
    );
  workspace
    .command('show <destination>')
    .description('one Goal of a verified workspace: its Todos, history, sessions, runs and effects')
    .requiredOption('--goal <goal_id>', 'the Goal to show')
    .action(async (destination: string, o: { goal: string }) =>
      emit(globals(), (await runtime()).showWorkspaceGoal(destination, o.goal), printGoal),
    );
}

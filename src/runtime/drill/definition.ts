/**
 * The recovery drill's definition, frozen before it runs: the Goal it works, the scripted agents
 * of each stage, the crash points of the apply and of `recover resolve` it injects, and what the
 * short and the full drill include. Its targets are not here: they are frozen in a file of their
 * own (targets.json, read by targets.ts), apart from the drill they judge. Nothing here is
 * computed from a drill's results; a missed target is reported as missed, never adjusted.
 */

export const DRILL_SCHEMA = 'loopx_recovery_drill_v0' as const;

export type DrillMode = 'short' | 'full';

/** The Goal of the drill and its Todos. */
export const GOAL = 'launch';
export const GOAL_TITLE = 'Ship the launch post';
export const TODO_TITLES = ['Draft the outline', 'Review with design', 'Publish the post'] as const;

export interface ScriptStep {
  readonly text: string;
  readonly tool_calls?: readonly { readonly name: string; readonly arguments: Readonly<Record<string, unknown>> }[];
}

/** Before the capture: t1 done and announced, t2 blocked, t3 left open. */
export const BEFORE: readonly ScriptStep[] = [
  {
    text: 'Outline done.',
    tool_calls: [{ name: 'todo.update', arguments: { todo_id: 't1', status: 'done', note: 'outline drafted' } }],
  },
  { text: 'Announcing.', tool_calls: [{ name: 'webhook.deliver', arguments: { message: 'outline ready' } }] },
  {
    text: 'Review blocked.',
    tool_calls: [{ name: 'todo.update', arguments: { todo_id: 't2', status: 'blocked', note: 'waiting for design' } }],
  },
  { text: 'Publishing stays open.' },
];

/** After the capture (lost locally): a note on t3, then its announcement — the source dies right after the receiver stored it. */
export const AFTER_CAPTURE: readonly ScriptStep[] = [
  {
    text: 'Starting the post.',
    tool_calls: [{ name: 'todo.update', arguments: { todo_id: 't3', note: 'draft started' } }],
  },
  {
    text: 'Announcing the draft.',
    tool_calls: [{ name: 'webhook.deliver', arguments: { message: 'post draft ready' } }],
  },
  { text: 'More later.' },
];

/** The continuation in the new root: the draft announcement again (it must not reach the receiver twice), a new one, t3 done. */
export const CONTINUE: readonly ScriptStep[] = [
  { text: 'Looking.', tool_calls: [{ name: 'todo.list', arguments: {} }] },
  {
    text: 'Announcing the draft.',
    tool_calls: [{ name: 'webhook.deliver', arguments: { message: 'post draft ready' } }],
  },
  { text: 'Publishing.', tool_calls: [{ name: 'webhook.deliver', arguments: { message: 'post published' } }] },
  {
    text: 'Done.',
    tool_calls: [{ name: 'todo.update', arguments: { todo_id: 't3', status: 'done', note: 'published' } }],
  },
  { text: 'The Goal is finished.' },
];

/** The crash that ends the source mid-run: the receiver holds the delivery, the source never settles it. */
export const SOURCE_KILL_POINT = 'effect.webhook.after-send';

/** Every owner commit point of `loopx recover apply`, in step order: a SIGKILL there, then a retry that must converge. */
export const APPLY_CRASH_POINTS = [
  'recover.host:destination.before',
  'recover.config:rebind.before',
  'recover.config:rebind.after',
  'recover.goal:rebind.before',
  'recover.goal:rebind.after',
  'recover.host:supersede.before',
  'recover.host:supersede.after',
  'recover.work:import_inert.before',
  'recover.work:import_inert.after',
  'recover.work:rebind.before',
  'recover.work:rebind.after',
  'recover.effect:reconcile.before',
  'recover.effect:reconcile.between-effects',
  'recover.effect:reconcile.fence',
  'recover.effect:reconcile.after',
] as const;

/** The short drill (`npm test`) crashes the apply at one point before and one after the first live-owner write. */
export const SHORT_CRASH_POINTS = ['recover.goal:rebind.before', 'recover.work:import_inert.after'] as const;

/**
 * The points of `loopx recover resolve` of a receiver hold (the receiver was down during the apply,
 * then back): it runs the effect owner's reconciliation again — a SIGKILL between two effects, and
 * before the receiver's fence moves — and journals it; a SIGKILL after the owner settled, before
 * the journal knows. Then the same resolve again must converge.
 */
export const RESOLVE_CRASH_POINTS = [
  'recover.effect:reconcile.between-effects',
  'recover.effect:reconcile.fence',
  'recover.resolve.ask-again.before-journal',
] as const;

/** The short drill crashes the resolve where the owner has settled and the journal does not know it yet. */
export const SHORT_RESOLVE_CRASH_POINTS = ['recover.resolve.ask-again.before-journal'] as const;

/** The crash that interrupts an adoption before it changed any live owner (abort is still legal), and one after. */
export const INTERRUPT_BEFORE_LIVE = 'recover.host:destination.before';
export const INTERRUPT_AFTER_LIVE = 'recover.work:rebind.after';

/** A scripted Goal worker's agent file. */
export const agentDocument = (name: string, script: readonly ScriptStep[]) => ({
  id: `drill.${name}`,
  version: '1.0.0',
  model: { provider: 'scripted', model_id: 'scripted-v1' },
  turn_limit: 12,
  tool_plan: 'loopx.goal-work.v1',
  system: 'Work the Goal.',
  script,
});

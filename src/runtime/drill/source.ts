/**
 * The drill's source: a root that does real Goal work through real `work run` processes (its
 * deliveries reach the drill's receiver), is captured, works on after the capture, dies mid-run
 * (SIGKILL right after the receiver stored a delivery the source never settled) and is then made
 * unavailable — moved aside, to be brought back at the end so its old writers can try.
 */
import { copyFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { startWebhookSink, type WebhookSink } from '../../dev/index.js';
import { drillStepFailed, expectOk, type DrillCli } from './cli.js';
import {
  AFTER_CAPTURE,
  BEFORE,
  CONTINUE,
  GOAL,
  GOAL_TITLE,
  SOURCE_KILL_POINT,
  TODO_TITLES,
  agentDocument,
} from './definition.js';
import { workHistoryOf, type SourceTransaction } from './recovery-point.js';

/** What every stage of a drill shares. */
export interface DrillContext {
  /** The drill's private temporary directory. */
  readonly dir: string;
  readonly cli: DrillCli;
  /** The drill's own receiver (restarted on the same port and journal when a variant stops it). */
  sink: WebhookSink;
  /** The journal `sink` keeps (an independent case's own while it runs: `withOwnReceiver`). */
  sinkJournal: string;
  /** The agent files of the three stages. */
  readonly agents: { readonly before: string; readonly after: string; readonly cont: string };
  /** A synthetic user's private run authority (one per independent case). */
  user(name: string): string;
  progress(line: string): void;
}

export interface DrillSource {
  /** Where the source root lives while it is available. */
  readonly root: string;
  /** Where it is while it is unavailable. */
  readonly offline: string;
  readonly user: string;
  readonly archive: string;
  readonly manifest: string;
  readonly capture: {
    readonly profile: string;
    readonly captured_at_end: string;
    /** The Goal's committed work transactions at the capture (the work cursor). */
    readonly work_cursor: number;
    readonly todos: Readonly<Record<string, number>>;
    /** Deliveries the receiver held for the Goal at the capture. */
    readonly deliveries: number;
  };
  /** The Goal's work cursor when the source was lost. */
  readonly cursor_at_loss: number;
  /** The Goal's work transactions when the source was lost, in cursor order (read back from its work owner). */
  readonly history_at_loss: readonly SourceTransaction[];
  readonly lost_at: string;
  /** The run the crash ended. */
  readonly killed_run_id: string | undefined;
}

export function writeAgents(dir: string): DrillContext['agents'] {
  const write = (name: string, script: typeof BEFORE) => {
    const path = join(dir, `${name}.agent.json`);
    writeFileSync(path, JSON.stringify(agentDocument(name, script)), { mode: 0o600 });
    return path;
  };
  return {
    before: write('before', BEFORE),
    after: write('after-capture', AFTER_CAPTURE),
    cont: write('continue', CONTINUE),
  };
}

/** A root with the drill's Goal and Todos (as `user`). */
export async function newSourceRoot(ctx: DrillContext, root: string, user: string): Promise<void> {
  expectOk(await ctx.cli.run(user, ['init', '--root', root]));
  expectOk(await ctx.cli.run(user, ['goal', 'create', GOAL, '--title', GOAL_TITLE, '--root', root]));
  for (const title of TODO_TITLES)
    expectOk(await ctx.cli.run(user, ['todo', 'add', '--goal', GOAL, '--title', title, '--root', root]));
}

/** Work, capture (quiescent), work after the capture, die mid-run, become unavailable. */
export async function prepareSource(ctx: DrillContext): Promise<DrillSource> {
  const root = join(ctx.dir, 'source');
  const user = ctx.user('operator');
  ctx.progress('source: a Goal does real work (a work run with a delivery)');
  await newSourceRoot(ctx, root, user);
  expectOk(
    await ctx.cli.run(user, [
      'work',
      'run',
      '--goal',
      GOAL,
      '--agent',
      ctx.agents.before,
      '--sink',
      ctx.sink.deliveriesUrl,
      '--root',
      root,
    ]),
  );
  const atCapture = expectOk(await ctx.cli.run(user, ['goal', 'show', GOAL, '--root', root]));
  ctx.progress('source: captured (quiescent backup)');
  const out = join(ctx.dir, 'backups');
  const backup = expectOk(
    await ctx.cli.run(user, [
      'backup-state',
      '--execute',
      '--profile',
      'quiescent',
      '--output-dir',
      out,
      '--backup-id',
      'drill',
      '--root',
      root,
    ]),
  );
  const deliveries = ctx.sink.deliveries().length;
  ctx.progress('source: works on after the capture, then dies mid-run (SIGKILL)');
  const killed = await ctx.cli.run(user, ['work', 'run', '--goal', GOAL, '--agent', ctx.agents.after, '--root', root], {
    fault: SOURCE_KILL_POINT,
  });
  if (killed.signal !== 'SIGKILL')
    throw drillStepFailed(
      'source dies mid-run',
      `the run ended ${killed.status === null ? 'otherwise' : `with exit ${killed.status}`}`,
    );
  const atLoss = expectOk(await ctx.cli.run(user, ['goal', 'show', GOAL, '--root', root]));
  const runs = expectOk(await ctx.cli.run(user, ['run', 'list', '--root', root])).runs as {
    run_id: string;
    status: string;
  }[];
  const history = await workHistoryOf(root);
  const lostAt = new Date().toISOString();
  copyFileSync(ctx.sinkJournal, receiverAtLoss(ctx));
  const offline = join(ctx.dir, 'source-offline');
  renameSync(root, offline);
  return {
    root,
    offline,
    user,
    archive: join(out, backup.archive.name as string),
    manifest: join(out, backup.manifest.name as string),
    capture: {
      profile: backup.capture.achieved_profile as string,
      captured_at_end: backup.capture.interval.end as string,
      work_cursor: atCapture.committed_transactions as number,
      todos: atCapture.todos as Record<string, number>,
      deliveries,
    },
    cursor_at_loss: atLoss.committed_transactions as number,
    history_at_loss: history,
    lost_at: lostAt,
    killed_run_id: runs.find((r) => r.status !== 'completed')?.run_id,
  };
}

/** Where the receiver's journal is kept as the source left it (copied when the source is lost). */
const receiverAtLoss = (ctx: DrillContext): string => join(ctx.dir, 'receiver-at-loss.jsonl');

/**
 * Run `fn`, an independent case that recovers the drill's backup as another user, against a
 * receiver of its own: the drill's receiver as the source left it (a copy of its journal at the
 * loss), on the same port, so the URL the backup names reaches it. Against the journey's receiver
 * the case would meet the journey's lifetime at the same generation and be held there
 * (`receiver_fence_conflict`) — what two real recoveries of one backup get. Then the drill's
 * receiver comes back. One case at a time: they share the port.
 */
export async function withOwnReceiver<T>(ctx: DrillContext, name: string, fn: () => Promise<T>): Promise<T> {
  const port = ctx.sink.port;
  const main = ctx.sinkJournal;
  const own = join(ctx.dir, `receiver-${name}.jsonl`);
  copyFileSync(receiverAtLoss(ctx), own);
  await ctx.sink.close();
  ctx.sink = await startWebhookSink({ port, journalPath: own });
  ctx.sinkJournal = own;
  try {
    return await fn();
  } finally {
    await ctx.sink.close();
    ctx.sink = await startWebhookSink({ port, journalPath: main });
    ctx.sinkJournal = main;
  }
}

/** Run `fn` while the drill's receiver is down: stopped, then started again on the same port and journal whatever `fn` does. */
export async function whileReceiverDown<T>(ctx: DrillContext, fn: () => Promise<T>): Promise<T> {
  const port = ctx.sink.port;
  await ctx.sink.close();
  try {
    return await fn();
  } finally {
    ctx.sink = await startWebhookSink({ port, journalPath: ctx.sinkJournal });
  }
}

/** The source comes back where it was (the same directory: the original, not a copy). */
export function bringBack(source: DrillSource): void {
  renameSync(source.offline, source.root);
}

/**
 * The old source comes back, and every writer of the superseded lifetime tries: the run
 * authority must refuse each in the source itself and in byte copies of either root, and the
 * receiver must refuse a delivery carrying the old fence. Nothing may change anywhere.
 */
import { cpSync } from 'node:fs';
import { join } from 'node:path';
import { expectOk } from './cli.js';
import { GOAL } from './definition.js';
import type { JourneyOutcome } from './journey.js';
import { bringBack, type DrillContext, type DrillSource } from './source.js';

export interface WriterAttempt {
  readonly writer: string;
  /** The refusal the writer must meet. */
  readonly expected: string;
  /** What it met (`accepted` when it was not refused). */
  readonly observed: string;
  readonly rejected: boolean;
}

export interface OldWriters {
  readonly attempts: readonly WriterAttempt[];
  /** The source's work, the new root's work and the receiver's deliveries are as they were. */
  readonly nothing_changed: boolean;
}

/** A delivery straight to the receiver under the old lifetime's fence. */
async function oldFenceDelivery(ctx: DrillContext, journey: JourneyOutcome): Promise<string> {
  const res = await fetch(ctx.sink.deliveriesUrl, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'idempotency-key': 'drill-old-writer',
      'x-operation-id': 'drill-old-writer',
      'x-loopx-goal-lineage': journey.lineage_id,
      'x-loopx-fence': String(journey.fence - 1),
    },
    body: JSON.stringify({ goal_id: GOAL, message: 'from the superseded lifetime' }),
  });
  const answer = (await res.json().catch(() => ({}))) as { error?: string };
  return res.status === 409 && answer.error === 'fence_stale' ? 'fence_stale' : `http_${res.status}`;
}

/** One writer's try through the CLI: it is rejected only when it fails with exactly the expected refusal. */
type WriterTry = (writer: string, expected: string, args: readonly string[]) => Promise<WriterAttempt>;

/** The writer tries of `user`, each a CLI command whose refusal code is what it met. */
const writerTries =
  (ctx: DrillContext, user: string): WriterTry =>
  async (writer, expected, args) => {
    const o = await ctx.cli.run(user, args);
    const observed = o.status === 0 ? 'accepted' : (o.code ?? `exit_${o.status}`);
    return { writer, expected, observed, rejected: o.status !== 0 && observed === expected };
  };

/** What must not change: the source's and the new root's committed work, and the receiver's stored deliveries. */
async function worldState(ctx: DrillContext, source: DrillSource, journey: JourneyOutcome) {
  const cursorOf = async (root: string) =>
    expectOk(await ctx.cli.run(source.user, ['goal', 'show', GOAL, '--root', root])).committed_transactions as number;
  return {
    source: await cursorOf(source.root),
    recovered: await cursorOf(journey.destination),
    stored: ctx.sink.deliveries().length,
  };
}

/** The superseded lifetime's writers in the old source itself — work, Todos, the resume of a run the crash ended — each refused as superseded. */
async function sourceWritersTry(ctx: DrillContext, source: DrillSource, tryAs: WriterTry): Promise<WriterAttempt[]> {
  const superseded = 'goal_lifetime_superseded';
  const attempts: WriterAttempt[] = [
    await tryAs('work run in the old source', superseded, [
      'work',
      'run',
      '--goal',
      GOAL,
      '--agent',
      ctx.agents.after,
      '--root',
      source.root,
    ]),
    await tryAs('todo update in the old source', superseded, [
      'todo',
      'update',
      't3',
      '--goal',
      GOAL,
      '--status',
      'done',
      '--root',
      source.root,
    ]),
    await tryAs('todo add in the old source', superseded, [
      'todo',
      'add',
      '--goal',
      GOAL,
      '--title',
      'stale work',
      '--root',
      source.root,
    ]),
  ];
  if (source.killed_run_id !== undefined)
    attempts.push(
      await tryAs('resume of the run the crash ended', superseded, [
        'run',
        'resume',
        source.killed_run_id,
        '--root',
        source.root,
      ]),
    );
  return attempts;
}

/** Writers in byte copies of the old source and of the new root, each refused as a copy. */
async function copyWritersTry(
  ctx: DrillContext,
  sourceCopy: string,
  recoveredCopy: string,
  tryAs: WriterTry,
): Promise<WriterAttempt[]> {
  return [
    await tryAs('work run in a byte copy of the old source', 'root_is_copy', [
      'work',
      'run',
      '--goal',
      GOAL,
      '--agent',
      ctx.agents.after,
      '--root',
      sourceCopy,
    ]),
    await tryAs('todo add in a byte copy of the new root', 'root_is_copy', [
      'todo',
      'add',
      '--goal',
      GOAL,
      '--title',
      'copied work',
      '--root',
      recoveredCopy,
    ]),
  ];
}

/** The old source back, every writer of its superseded lifetime tries (see the header); each must be refused, nothing changed. */
export async function oldWritersTry(
  ctx: DrillContext,
  source: DrillSource,
  journey: JourneyOutcome,
): Promise<OldWriters> {
  ctx.progress('old writers: the source comes back and tries');
  bringBack(source);
  const before = await worldState(ctx, source, journey);
  const sourceCopy = join(ctx.dir, 'source-copy');
  const recoveredCopy = join(ctx.dir, 'recovered-copy');
  cpSync(source.root, sourceCopy, { recursive: true });
  cpSync(journey.destination, recoveredCopy, { recursive: true });
  const tryAs = writerTries(ctx, source.user);
  const attempts = await sourceWritersTry(ctx, source, tryAs);
  const fenced = await oldFenceDelivery(ctx, journey);
  attempts.push({
    writer: 'delivery with the old fence, straight to the receiver',
    expected: 'fence_stale',
    observed: fenced,
    rejected: fenced === 'fence_stale',
  });
  attempts.push(...(await copyWritersTry(ctx, sourceCopy, recoveredCopy, tryAs)));
  const after = await worldState(ctx, source, journey);
  return {
    attempts,
    nothing_changed:
      before.source === after.source && before.recovered === after.recovered && before.stored === after.stored,
  };
}

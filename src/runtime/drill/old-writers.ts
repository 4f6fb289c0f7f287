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

export async function oldWritersTry(ctx: DrillContext, source: DrillSource, journey: JourneyOutcome): Promise<OldWriters> {
  ctx.progress('old writers: the source comes back and tries');
  bringBack(source);
  const user = source.user;
  const cursorOf = async (root: string) => expectOk(await ctx.cli.run(user, ['goal', 'show', GOAL, '--root', root])).committed_transactions as number;
  const before = { source: await cursorOf(source.root), recovered: await cursorOf(journey.destination), stored: ctx.sink.deliveries().length };
  const sourceCopy = join(ctx.dir, 'source-copy');
  const recoveredCopy = join(ctx.dir, 'recovered-copy');
  cpSync(source.root, sourceCopy, { recursive: true });
  cpSync(journey.destination, recoveredCopy, { recursive: true });
  const cli = async (writer: string, expected: string, args: readonly string[]): Promise<WriterAttempt> => {
    const o = await ctx.cli.run(user, args);
    const observed = o.status === 0 ? 'accepted' : (o.code ?? `exit_${o.status}`);
    return { writer, expected, observed, rejected: o.status !== 0 && observed === expected };
  };
  const superseded = 'goal_lifetime_superseded';
  const attempts: WriterAttempt[] = [
    await cli('work run in the old source', superseded, ['work', 'run', '--goal', GOAL, '--agent', ctx.agents.after, '--root', source.root]),
    await cli('todo update in the old source', superseded, ['todo', 'update', 't3', '--goal', GOAL, '--status', 'done', '--root', source.root]),
    await cli('todo add in the old source', superseded, ['todo', 'add', '--goal', GOAL, '--title', 'stale work', '--root', source.root]),
  ];
  if (source.killed_run_id !== undefined) attempts.push(await cli('resume of the run the crash ended', superseded, ['run', 'resume', source.killed_run_id, '--root', source.root]));
  const fenced = await oldFenceDelivery(ctx, journey);
  attempts.push({ writer: 'delivery with the old fence, straight to the receiver', expected: 'fence_stale', observed: fenced, rejected: fenced === 'fence_stale' });
  attempts.push(await cli('work run in a byte copy of the old source', 'root_is_copy', ['work', 'run', '--goal', GOAL, '--agent', ctx.agents.after, '--root', sourceCopy]));
  attempts.push(await cli('todo add in a byte copy of the new root', 'root_is_copy', ['todo', 'add', '--goal', GOAL, '--title', 'copied work', '--root', recoveredCopy]));
  const after = { source: await cursorOf(source.root), recovered: await cursorOf(journey.destination), stored: ctx.sink.deliveries().length };
  return { attempts, nothing_changed: before.source === after.source && before.recovered === after.recovered && before.stored === after.stored };
}

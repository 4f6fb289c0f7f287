/**
 * A crash at every owner commit point of `loopx recover apply` (SIGKILL before and after each
 * owner's write, and around the run authority's), each followed by a retry of the same apply that
 * must converge: the same Goal lifetime recorded once, the history imported once, the adopted
 * state committed once, every effect once under its original identity, the receiver's fence
 * moved, and nothing delivered. Every case recovers the same verified backup into its own
 * destination, as its own user (its own run authority), so the cases are independent.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import * as effectOwner from '../../src/owners/effect/index.js';
import * as workOwner from '../../src/owners/work/index.js';
import { loopxAsync } from '../support/cli.js';
import { sourceWithBackup, type Doc, type Source } from './support/adopt.js';

/** Every crash point of the apply, in step order. */
const POINTS = [
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
  'recover.effect:reconcile.fence',
  'recover.effect:reconcile.after',
];

let sink: WebhookSink;
let s: Source;
beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
  s = await sourceWithBackup(sink);
}, 240_000);
afterAll(async () => {
  await sink.close();
});

async function cli(authority: string, args: readonly string[], env: Record<string, string> = {}) {
  return loopxAsync([...args, '--authority-dir', authority, '--json'], env);
}

/** Plan into a new destination as a new user, crash the apply at `point`, apply again; what converged. */
async function crashAndRetry(point: string): Promise<{ point: string; status: Doc; destination: string; killed: boolean }> {
  const dir = mkdtempSync(join(tmpdir(), 'loopx-adopt-crash-'));
  const authority = join(dir, 'authority');
  const destination = join(dir, 'recovered');
  const plan = await cli(authority, ['recover', 'plan', '--from', s.workspace, '--goal', 'launch', '--destination', destination, '--root', s.root]);
  expect(plan.status, plan.stderr).toBe(0);
  const digest = plan.json().plan_digest as string;
  const crashed = await cli(authority, ['recover', 'apply', '--destination', destination, '--confirm', digest], { LOOPX_TEST_FAULT: point });
  const mid = await cli(authority, ['recover', 'status', '--destination', destination]);
  expect(mid.json().state).toBe('applying');
  const retried = await cli(authority, ['recover', 'apply', '--destination', destination, '--confirm', digest]);
  expect(retried.status, `${point}: ${retried.stderr}`).toBe(0);
  return { point, status: retried.json(), destination, killed: crashed.signal === 'SIGKILL' };
}

describe('recover apply: a crash at every owner commit point, then a retry, converges', () => {
  let results: Awaited<ReturnType<typeof crashAndRetry>>[] = [];
  beforeAll(async () => {
    // Four at a time: independent destinations and users, one receiver.
    for (let i = 0; i < POINTS.length; i += 4) results = results.concat(await Promise.all(POINTS.slice(i, i + 4).map(crashAndRetry)));
  }, 900_000);

  it('every point was reached and killed the process', () => {
    expect(results.filter((r) => !r.killed).map((r) => r.point)).toEqual([]);
  });

  it('every retry completes with the fences established and the same receipts', () => {
    for (const r of results) {
      expect(r.status.state, r.point).toBe('complete');
      expect(r.status.fences, r.point).toEqual({ source_established: true, destination_established: true });
      expect(r.status.receipts.map((x: { action: string }) => x.action)).toHaveLength(10);
    }
  });

  it('each owner applied exactly once: one lineage, one adopted state, every effect once under its original id', async () => {
    for (const r of results) {
      const work = await workOwner.openGoalWork({ root: r.destination, goal_id: 'launch' });
      try {
        expect(await work.lineage(), r.point).toHaveLength(1);
        const history = await work.history(0, 10);
        expect(
          history.transactions.map((t) => t.receipt.operation),
          r.point,
        ).toEqual(['adopt_recovered_state']);
      } finally {
        work.close();
      }
      const effects = effectOwner.openSqliteEffectJournal(join(r.destination, 'effects.db'));
      try {
        const list = await effects.list({ goal_id: 'launch' });
        expect(new Set(list.map((e) => e.operation_id)).size, r.point).toBe(list.length);
        expect(
          list.every((e) => e.outcome === 'committed'),
          r.point,
        ).toBe(true);
        expect(await effects.outbox(), r.point).toEqual([]);
      } finally {
        effects.close();
      }
    }
  });

  it('nothing was delivered by any adoption', () => {
    const stored = sink.deliveries().length;
    // Two deliveries were made by the source (one before the capture, one after); adoption only asks.
    expect(stored).toBe(2);
  });
});

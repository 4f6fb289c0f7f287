/**
 * The one recovery contract, over the OWNERS table: on a real root where a real Goal work run
 * worked a Goal's Todos and delivered a webhook, every owner's capture() → verifyOffline() →
 * readHistorical() round-trips (the same revision and cursor at each step, the export verified
 * against the copy), a damaged export is the owner's typed finding, and a corrupted copy of each
 * owner's store is that owner's typed finding with one next action (the cases:
 * conformance/owner-contract.conformance.ts). A new owner joins these tests by its row in the table.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import {
  LAYOUT,
  MACHINE,
  OWNERS,
  OWNER_LIST,
  RECOVERY_POINT_OWNER,
  goalScope,
  quota,
  scheduler,
  type OwnerRecovery,
  type OwnerScope,
} from '../../src/owners/index.js';
import { loopxAsync, tempRoot } from '../support/cli.js';
import { describeOwnerContract, ownerTableProblems } from './conformance/owner-contract.conformance.js';

const AGENT = 'examples/agents/goal-worker.json';
const GOAL = 'launch';
let sink: WebhookSink;
let root: string;
const dirs: string[] = [];
const fresh = (prefix: string): string => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
};
const scopeOf = (o: OwnerRecovery): OwnerScope => (o.scope === 'goal' ? goalScope(GOAL) : MACHINE);

beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
  root = tempRoot();
  expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
  expect((await loopxAsync(['goal', 'create', GOAL, '--title', 'Ship the launch post', '--root', root])).status).toBe(
    0,
  );
  for (const title of ['Draft the outline', 'Review with design', 'Publish the post']) {
    expect((await loopxAsync(['todo', 'add', '--goal', GOAL, '--title', title, '--root', root])).status).toBe(0);
  }
  const run = await loopxAsync([
    'work',
    'run',
    '--goal',
    GOAL,
    '--agent',
    AGENT,
    '--sink',
    sink.deliveriesUrl,
    '--root',
    root,
    '--json',
  ]);
  expect(run.status, run.stderr).toBe(0);
  // The owners Goal work does not write yet, written through their own live APIs.
  const goal = JSON.parse(readFileSync(join(root, LAYOUT.goalFile(GOAL)), 'utf8')) as { goal_instance_id: string };
  const ledger = quota.openSqliteQuotaLedger(join(root, LAYOUT.quotaDb));
  await ledger.spend({
    effect_id: 'turn-1#quota_spend',
    goal_id: GOAL,
    goal_instance_id: goal.goal_instance_id,
    amount: 1,
    unit: 'turn',
  });
  await ledger.close();
  const timers = scheduler.openSqliteSchedulerStore(join(root, LAYOUT.schedulerDb));
  await timers.createTimer({
    timer_id: 'daily',
    goal_id: GOAL,
    cadence: 'FREQ=DAILY;INTERVAL=1',
    next_due_at: '2027-01-01T00:00:00.000Z',
  });
  await timers.close();
}, 120_000);

afterAll(async () => {
  await sink.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('the OWNERS table', () => {
  it('lists every owner of a root once, each with members, a classification and a verification profile', () => {
    expect(OWNER_LIST.map((o) => o.name)).toEqual([
      'registry',
      'config',
      'goal',
      'work',
      'session',
      'effect',
      'quota',
      'scheduler',
    ]);
    for (const o of OWNER_LIST) {
      expect(o.members(scopeOf(o)).length, o.name).toBeGreaterThan(0);
      expect(['recovered_readable', 'historical_only']).toContain(o.classification);
      expect(o.verificationProfile.length).toBeGreaterThan(0);
      expect(o.decides.length).toBeGreaterThan(0);
    }
  });

  it('keeps its rows in dependency order, each keyed by its name and owning members no other row owns', () => {
    expect(ownerTableProblems(OWNERS)).toEqual([]);
  });

  it("names one owner whose captured cursor is a Goal's recovery point, a per-Goal owner every Goal needs", () => {
    const rows = OWNER_LIST.filter((o) => o.recoveryPoint === true);
    expect(rows.map((o) => o.name)).toEqual([RECOVERY_POINT_OWNER]);
    expect(rows[0]!.scope).toBe('goal');
    expect(rows[0]!.requiredForGoal).toBe(true);
  });
});

for (const owner of OWNER_LIST) describeOwnerContract(owner, { root: () => root, scopeOf, fresh });

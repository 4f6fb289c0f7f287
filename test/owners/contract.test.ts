/**
 * The one recovery contract, over the OWNERS table: on a real root where a real Goal work run
 * worked a Goal's Todos and delivered a webhook, every owner's capture() → verifyOffline() →
 * readHistorical() round-trips (the same revision and cursor at each step, the export verified
 * against the copy), a damaged export is the owner's typed finding, and a corrupted copy of each
 * owner's store is that owner's typed finding with one next action. A new owner joins these tests
 * by its row in the table.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { LAYOUT, MACHINE, OWNER_LIST, goalScope, quota, scheduler, type OwnerCapture, type OwnerRecovery, type OwnerScope } from '../../src/owners/index.js';
import { loopx, loopxAsync, tempRoot } from '../support/cli.js';

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
  expect(loopx(['init', '--root', root]).status).toBe(0);
  expect(loopx(['goal', 'create', GOAL, '--title', 'Ship the launch post', '--root', root]).status).toBe(0);
  for (const title of ['Draft the outline', 'Review with design', 'Publish the post']) {
    expect(loopx(['todo', 'add', '--goal', GOAL, '--title', title, '--root', root]).status).toBe(0);
  }
  const run = await loopxAsync(['work', 'run', '--goal', GOAL, '--agent', AGENT, '--sink', sink.deliveriesUrl, '--root', root, '--json']);
  expect(run.status, run.stderr).toBe(0);
  // The owners Goal work does not write yet, written through their own live APIs.
  const goal = JSON.parse(readFileSync(join(root, LAYOUT.goalFile(GOAL)), 'utf8')) as { goal_instance_id: string };
  const ledger = quota.openSqliteQuotaLedger(join(root, LAYOUT.quotaDb));
  await ledger.spend({ effect_id: 'turn-1#quota_spend', goal_id: GOAL, goal_instance_id: goal.goal_instance_id, amount: 1, unit: 'turn' });
  await ledger.close();
  const timers = scheduler.openSqliteSchedulerStore(join(root, LAYOUT.schedulerDb));
  await timers.createTimer({ timer_id: 'daily', goal_id: GOAL, cadence: 'FREQ=DAILY;INTERVAL=1', next_due_at: '2027-01-01T00:00:00.000Z' });
  await timers.close();
}, 120_000);

afterAll(async () => {
  await sink.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('the OWNERS table', () => {
  it('lists every owner of a root once, each with members, a classification and a verification profile', () => {
    expect(OWNER_LIST.map((o) => o.name)).toEqual(['registry', 'config', 'goal', 'work', 'session', 'effect', 'quota', 'scheduler']);
    for (const o of OWNER_LIST) {
      expect(o.members(scopeOf(o)).length, o.name).toBeGreaterThan(0);
      expect(['recovered_readable', 'historical_only']).toContain(o.classification);
      expect(o.verificationProfile.length).toBeGreaterThan(0);
      expect(o.decides.length).toBeGreaterThan(0);
    }
  });
});

describe.each(OWNER_LIST.map((o) => [o.name, o] as const))('the %s owner', (_name, owner) => {
  const scope = scopeOf(owner);
  let into: string;
  let cap: OwnerCapture;

  beforeAll(async () => {
    into = fresh(`loopx-capture-${owner.name}-`);
    cap = await owner.capture({ root }, scope, into);
  });

  it('capture() copies its members and exports them canonically, with its revision interval', () => {
    expect(cap.owner).toBe(owner.name);
    expect(cap.members.length).toBeGreaterThan(0);
    for (const m of cap.members) expect(statSync(join(into, m)).isFile()).toBe(true);
    expect(cap.export_sha256).toMatch(/^[0-9a-f]{64}$/);
    expect(cap.record_count).toBeGreaterThan(0);
    // Nothing wrote to the root while it was captured: the interval did not move.
    expect(cap.start.revision).toBe(cap.end.revision);
    expect(cap.captured.revision).toBe(cap.end.revision);
  });

  it('verifyOffline() accepts the copy with its export, at the captured revision', () => {
    const v = owner.verifyOffline({ root: into, scratchDir: fresh('loopx-scratch-') }, scope, { export: cap.export, exportItems: cap.export_items });
    expect(v.findings.filter((f) => f.severity === 'error')).toEqual([]);
    expect(v.ok).toBe(true);
    expect(v.revision).toBe(cap.captured.revision);
    // A database owner's records are its copy's: the export is its header and seal, and the owner rebuilds the same seal from the copy.
    const database = owner.members(scope).every((m) => m.kind === 'sqlite');
    expect(cap.export_items).toBe(database ? 'from_copy' : 'in_export');
    if (database) {
      expect(cap.export).toHaveLength(2);
      expect(v.export_sha256).toBe(cap.export_sha256);
    }
  });

  it('readHistorical() reads the captured state back: same revision and cursor, no authority', () => {
    const h = owner.readHistorical({ root: into, scratchDir: fresh('loopx-scratch-') }, scope);
    expect(h.owner).toBe(owner.name);
    expect(h.ok).toBe(true);
    expect(h.revision).toBe(cap.captured.revision);
    if (h.cursor !== null) expect(h.cursor).toBe(cap.captured.cursor);
    expect(h.execution_authority_granted).toBe(false);
    expect(Object.values(h.counts).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
  });

  it("observe() reads the live position in capture's domain: the capture's end while nothing moved", async () => {
    const now = await owner.observe({ root }, scope);
    expect(now).not.toBeNull();
    expect(now!.revision).toBe(cap.end.revision);
    if (cap.end.cursor !== null) expect(now!.cursor).toBe(cap.end.cursor);
  });

  it('a changed export record is refused with the export finding, never accepted', () => {
    const damaged = cap.export.map((r, i) => (i === 1 ? { ...(r as object), tampered: true } : r));
    const v = owner.verifyOffline({ root: into, scratchDir: fresh('loopx-scratch-') }, scope, { export: damaged, exportItems: cap.export_items });
    expect(v.ok).toBe(false);
    expect(v.findings.some((f) => f.severity === 'error' && /^(owner_export|retained_prefix)_/.test(f.code))).toBe(true);
  });

  it("a corrupted copy of its store is that owner's typed finding with one next action", () => {
    const damaged = fresh(`loopx-damaged-${owner.name}-`);
    const copy = owner.capture({ root }, scope, damaged);
    return copy.then((c) => {
      const member = c.members.find((m) => m.endsWith('.db')) ?? c.members.find((m) => m.endsWith('.json'))!;
      const abs = join(damaged, member);
      if (member.endsWith('.db')) {
        // Past the header: a page of garbage where SQLite's b-tree pages are.
        const bytes = readFileSync(abs);
        bytes.fill(0xa5, 100, Math.min(bytes.length, 8192));
        writeFileSync(abs, bytes);
      } else {
        writeFileSync(abs, '{"not": "this owner\'s document"');
      }
      const v = owner.verifyOffline({ root: damaged, scratchDir: fresh('loopx-scratch-') }, scope);
      expect(v.ok).toBe(false);
      const errors = v.findings.filter((f) => f.severity === 'error');
      expect(errors.length, JSON.stringify(v.findings)).toBeGreaterThan(0);
      for (const f of errors) {
        expect(f.code.startsWith(`${owner.name}_`) || f.code.startsWith('registry_') || f.code.startsWith('goal_'), f.code).toBe(true);
        expect(f.next_action.length).toBeGreaterThan(0);
        expect(f.next_action).not.toMatch(/\n/);
        expect(f.subject).not.toContain(damaged);
      }
    });
  });
});

describe.each(OWNER_LIST.filter((o) => o.members(scopeOf(o)).some((m) => m.kind === 'sqlite')).map((o) => [o.name, o] as const))('the %s owner (a database)', (_name, owner) => {
  it('observe() of a root where it never created its database is a confirmed absence (null)', async () => {
    expect(await owner.observe({ root: fresh('loopx-empty-root-') }, scopeOf(owner))).toBeNull();
  });
});

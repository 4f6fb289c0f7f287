/**
 * `loopx recover drill` through the real CLI: the short drill locally, the full one (a crash at
 * every owner commit point of the apply) under CI=true. Its receipt validates against
 * docs/schemas/recover-drill.schema.json, meets every target frozen in the drill's definition,
 * and leaks nothing of its temporary state; and the receipt's judgement is tested on its own: a
 * missed target is reported as missed, with a failing exit.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { beforeAll, describe, expect, it } from 'vitest';
import { buildReceipt, renderReceipt, type DrillEvidence } from '../../src/runtime/drill/receipt.js';
import { REPO, loopxAsync, type CliResult } from '../support/cli.js';
import type { Doc } from './support/adopt.js';

const FULL = process.env.CI === 'true';
const drills = () => new Set(readdirSync(tmpdir()).filter((n) => n.startsWith('loopx-drill-')));

let run: CliResult;
let receipt: Doc;
let leftBehind: string[];
beforeAll(async () => {
  const before = drills();
  run = await loopxAsync(['recover', 'drill', ...(FULL ? [] : ['--short']), '--json']);
  receipt = run.json();
  leftBehind = [...drills()].filter((n) => !before.has(n));
}, 900_000);

describe(`loopx recover drill (${FULL ? 'full' : 'short'})`, () => {
  it('prints a receipt that recover-drill.schema.json accepts, and exits 0 with every target met', () => {
    const schema = JSON.parse(readFileSync(join(REPO, 'docs/schemas/recover-drill.schema.json'), 'utf8'));
    const validate = new Ajv2020({ strict: true, allErrors: true }).compile(schema);
    expect(validate(receipt) ? [] : validate.errors).toEqual([]);
    expect(receipt.missed, JSON.stringify(receipt, null, 2)).toEqual([]);
    expect(run.status).toBe(0);
    expect(receipt).toMatchObject({ result: 'targets_met', mode: FULL ? 'full' : 'short', execution_authority_granted: false });
  });

  it('measures against the targets frozen in its definition', () => {
    expect(receipt.targets).toEqual({
      rto_seconds: 60,
      rpo: 'last_captured_checkpoint',
      human_actions_base: 3,
      human_actions_per_hold: 1,
      protected_duplicates: 0,
      old_writers_rejected_percent: 100,
    });
    expect(receipt.rto.seconds).toBeLessThanOrEqual(60);
    expect(receipt.phases.map((p: { phase: string }) => p.phase)).toEqual(['verify', 'plan', 'apply', 'first_turn']);
    // RPO: the captured checkpoint exactly — the work after it is lost locally, the delivery after it known at the receiver.
    expect(receipt.rpo).toMatchObject({ claimed_beyond_checkpoint: 0, committed_after_capture: 1, met: true });
    expect(receipt.rpo.work_items_lost_locally).toBeGreaterThan(0);
    expect(receipt.recovered.imported_transactions).toBe(receipt.captured.work_cursor);
    expect(receipt.recovered.todos_at_adoption).toEqual({ done: 1, blocked: 1, open: 1 });
    expect(receipt.human_actions).toMatchObject({ count: 3, limit: 3, met: true });
    expect(receipt.protected_duplicates).toMatchObject({ count: 0, each_logical_operation_stored_once: true, met: true });
    expect(receipt.continued).toEqual({ run_status: 'completed', todo_done_in_new_lifetime: true, met: true });
  });

  it('crashes the apply at owner commit points, and every retry converges by owner readback without a delivery', () => {
    expect(receipt.fault_injection.points).toBe(FULL ? 14 : 2);
    expect(receipt.fault_injection.cases.filter((c: { converged: boolean }) => !c.converged)).toEqual([]);
    expect(receipt.fault_injection.cases.every((c: { killed: boolean; state_after_crash: string }) => c.killed && c.state_after_crash === 'applying')).toBe(true);
    expect(receipt.fault_injection.deliveries_sent).toBe(0);
  });

  it('refuses the old writers, every one, and the receiver refuses the old fence', () => {
    expect(receipt.old_writers).toMatchObject({ attempted: 7, rejected: 7, percent: 100, nothing_changed: true });
    expect(receipt.old_writers.attempts.map((a: { observed: string }) => a.observed)).toEqual([
      'goal_lifetime_superseded',
      'goal_lifetime_superseded',
      'goal_lifetime_superseded',
      'goal_lifetime_superseded',
      'fence_stale',
      'root_is_copy',
      'root_is_copy',
    ]);
  });

  it('meets each refusal and variant case, and shows the receiver-down holds with owner and continuation', () => {
    expect(receipt.cases.filter((c: { met: boolean }) => !c.met)).toEqual([]);
    expect(receipt.cases.map((c: { case: string }) => c.case)).toEqual([
      'missing component in the workspace',
      'corrupt component in the workspace',
      'work store of a newer version',
      'confirm with a digest that is not the plan’s',
      'destination changed after the plan',
      'a second recovery of the lifetime already recovered',
      'adoption interrupted before any live change, then abort',
      'apply of an abandoned recovery',
      'a writer in the half-adopted root',
      'adoption interrupted after a live change, then abort',
      'its next action, run as printed',
      'receiver down during the apply, then resolved',
      'online capture of a quiet source',
      'online capture while a writer commits (the capture moved)',
    ]);
    expect(receipt.holds.length).toBeGreaterThan(0);
    for (const h of receipt.holds) expect(h).toMatchObject({ owner: 'effect', resolved: true, where: 'receiver_down', continuation: expect.any(String) });
  });

  it('runs on its own temporary state, names none of it, and removes it', () => {
    expect(run.stdout).not.toContain(tmpdir() + '/');
    expect(run.stdout).not.toContain('loopx-drill-');
    expect(leftBehind).toEqual([]);
  });
});

describe('the drill receipt judges what it measured', () => {
  it('reports a missed target as missed, names it, and prints it as MISSED', () => {
    const met = receipt as ReturnType<typeof buildReceipt>;
    const evidence = {
      drillId: 'drill_0000000000000000',
      mode: 'short',
      startedAt: met.started_at,
      source: { capture: met.captured, cursor_at_loss: met.captured.work_cursor + 3, lost_at: met.finished_at },
      journey: {
        ...met.recovered,
        state: 'complete',
        phases: met.phases,
        rto_ms: 61_000,
        human_actions: met.human_actions.actions,
        holds: [],
        preview_lost_or_unknown: [],
        recovered: { ...met.recovered },
        continued: { run_status: 'completed', todo_done_in_new_lifetime: true },
      },
      oldWriters: { attempts: met.old_writers.attempts, nothing_changed: true },
      crashes: { cases: [{ ...met.fault_injection.cases[0]!, converged: false }], deliveries_sent: 0 },
      cases: [],
      held: { case: 'held', expected: 'x', observed: 'x', met: true, holds: [], human_actions: 3 },
      online: { quiet: { case: 'q', expected: 'x', observed: 'x', met: true }, moving: { case: 'm', expected: 'x', observed: 'x', met: true } },
      receiver: { counts: { stored: 3, duplicate: 1 }, storedMessages: ['a', 'b'] },
    } as unknown as DrillEvidence;
    const judged = buildReceipt(evidence);
    expect(judged.result).toBe('targets_missed');
    expect(judged.missed).toEqual(['rto', 'protected_duplicates', 'fault_injection']);
    const lines: string[] = [];
    renderReceipt(judged, (l) => lines.push(l));
    expect(lines[0]).toContain('missed: rto, protected_duplicates, fault_injection');
    expect(lines.filter((l) => l.includes('MISSED'))).toHaveLength(3);
  });
});

/**
 * `loopx recover drill --cross-host` through the real CLI: the short drill locally, the full one (a
 * crash at every owner commit point of the apply and every crash point of the resolve) under
 * CI=true, each with the cross-host variant (drill-defects.test.ts runs the same-host one). Its
 * receipt validates against docs/schemas/recover-drill.schema.json, meets every target frozen in
 * the targets file (whose digest it prints), and leaks nothing of its temporary state. The
 * receipt's judgement of each figure, and the digest's pin, are tested on their own
 * (drill-targets.test.ts); a real drill with defects injected, in drill-defects.test.ts.
 */
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  APPLY_CRASH_POINTS,
  RESOLVE_CRASH_POINTS,
  SHORT_CRASH_POINTS,
  SHORT_RESOLVE_CRASH_POINTS,
} from '../../src/runtime/drill/definition.js';
import { DRILL_TARGETS_SHA256 } from '../../src/runtime/drill/targets.js';
import { REPO, loopxAsync, type CliResult } from '../support/cli.js';
import type { Doc } from './support/adopt.js';

const FULL = process.env.CI === 'true';
// The drill's temporary directory is its own (TMPDIR), so the drills other test files run at the
// same time cannot be mistaken for what this one left behind.
const DRILL_TMP = mkdtempSync(join(tmpdir(), 'drill-test-tmp-'));
afterAll(() => rmSync(DRILL_TMP, { recursive: true, force: true }));

let run: CliResult;
let receipt: Doc;
let leftBehind: string[];
beforeAll(async () => {
  run = await loopxAsync(['recover', 'drill', ...(FULL ? [] : ['--short']), '--cross-host', '--json'], {
    TMPDIR: DRILL_TMP,
  });
  receipt = run.json();
  leftBehind = readdirSync(DRILL_TMP).filter((n) => n.startsWith('loopx-drill-'));
}, 900_000);

describe(`loopx recover drill (${FULL ? 'full' : 'short'})`, () => {
  it('prints a receipt that recover-drill.schema.json accepts, and exits 0 with every target met', () => {
    const schema = JSON.parse(readFileSync(join(REPO, 'docs/schemas/recover-drill.schema.json'), 'utf8'));
    const validate = new Ajv2020({ strict: true, allErrors: true }).compile(schema);
    expect(validate(receipt) ? [] : validate.errors).toEqual([]);
    expect(receipt.missed, JSON.stringify(receipt, null, 2)).toEqual([]);
    expect(run.status).toBe(0);
    expect(receipt).toMatchObject({
      result: 'targets_met',
      mode: FULL ? 'full' : 'short',
      execution_authority_granted: false,
    });
  });

  it('measures against the targets frozen in the targets file, and prints that file’s digest', () => {
    expect(receipt.targets).toEqual({
      rto_seconds: 60,
      rpo: 'last_captured_checkpoint',
      rpo_seconds_at_most: 'capture_to_loss_interval',
      rpo_work_items_lost_at_most: 3,
      human_actions_base: 3,
      human_actions_per_hold: 1,
      protected_duplicates: 0,
      old_writers_rejected_percent: 100,
    });
    expect(receipt.targets_sha256).toBe(DRILL_TARGETS_SHA256);
    expect(receipt.rto.seconds).toBeLessThanOrEqual(60);
    expect(receipt.phases.map((p: { phase: string }) => p.phase)).toEqual(['verify', 'plan', 'apply', 'first_turn']);
    // RPO: the captured checkpoint exactly, read back from the new root — the work after it (the
    // after-capture run's fence, lease and note) lost locally, the delivery after it known at the receiver.
    expect(receipt.rpo).toMatchObject({
      claimed_beyond_checkpoint: 0,
      committed_after_capture: 1,
      written_after_capture: 3,
      work_items_lost_locally: 3,
      work_items_lost_at_most: 3,
      bounds: { nothing_claimed_beyond_checkpoint: true, within_capture_to_loss: true, within_work_items: true },
      met: true,
    });
    expect(receipt.rpo.seconds).toBeGreaterThan(0);
    expect(receipt.rpo.seconds).toBeLessThanOrEqual(receipt.rpo.capture_to_loss_seconds);
    expect(receipt.recovered.imported_transactions).toBe(receipt.captured.work_cursor);
    expect(receipt.recovered.source_transactions_held).toBe(receipt.captured.work_cursor);
    expect(receipt.recovered.todos_at_adoption).toEqual({ done: 1, blocked: 1, open: 1 });
    // The commands the operator issued, as issued: no hold in the main journey, so verify, plan and confirm.
    expect(receipt.human_actions).toEqual({
      count: 3,
      visible_holds: 0,
      limit: 3,
      met: true,
      actions: ['loopx backup-state verify', 'loopx recover plan', 'loopx recover apply'],
    });
    expect(receipt.protected_duplicates).toMatchObject({
      count: 0,
      each_logical_operation_stored_once: true,
      met: true,
    });
    expect(receipt.continued).toEqual({ run_status: 'completed', todo_done_in_new_lifetime: true, met: true });
  });

  it('crashes the apply at owner commit points and the resolve inside it, and every retry converges by owner readback without a delivery', () => {
    const apply = FULL ? APPLY_CRASH_POINTS : SHORT_CRASH_POINTS;
    const resolve = FULL ? RESOLVE_CRASH_POINTS : SHORT_RESOLVE_CRASH_POINTS;
    expect(receipt.fault_injection).toMatchObject({
      points: apply.length + resolve.length,
      apply_points: apply.length,
      resolve_points: resolve.length,
    });
    expect(
      receipt.fault_injection.cases.map((c: { command: string; point: string }) => `${c.command} ${c.point}`),
    ).toEqual([...apply.map((p) => `apply ${p}`), ...resolve.map((p) => `resolve ${p}`)]);
    if (FULL) expect(apply).toContain('recover.effect:reconcile.between-effects');
    expect(resolve).toContain('recover.resolve.ask-again.before-journal');
    expect(receipt.fault_injection.cases.filter((c: { converged: boolean }) => !c.converged)).toEqual([]);
    // Killed at the point: the apply left `applying`, the resolve left the hold (`reconciliation_held`).
    for (const c of receipt.fault_injection.cases)
      expect(c, c.point).toMatchObject({
        killed: true,
        state_after_crash: c.command === 'apply' ? 'applying' : 'reconciliation_held',
        state_after_retry: 'complete',
      });
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
    for (const h of receipt.holds)
      expect(h).toMatchObject({
        owner: 'effect',
        resolved: true,
        where: 'receiver_down',
        continuation: expect.any(String),
      });
  });

  it('with --cross-host, also recovers on another host from an encrypted repository; the old host is refused before it sends', () => {
    expect(receipt.variant).toBe('cross-host');
    expect(receipt.cross_host, JSON.stringify(receipt.cross_host, null, 2)).toMatchObject({
      met: true,
      repository: { kind: 'directory', encrypted: true },
      old_host: { code: 'goal_lifetime_superseded', attempts_after_recovery: 0 },
      continued: { run_status: 'completed', todo_done: true },
      rto: { met: true },
    });
    expect(receipt.cross_host.phases.map((p: { phase: string }) => p.phase)).toEqual([
      'verify',
      'plan',
      'apply',
      'first_turn',
    ]);
  });

  it('runs on its own temporary state, names none of it, and removes it', () => {
    expect(run.stdout).not.toContain(tmpdir() + '/');
    expect(run.stdout).not.toContain(DRILL_TMP);
    expect(run.stdout).not.toContain('loopx-drill-');
    expect(leftBehind).toEqual([]);
  });
});

/**
 * The recovery drill's targets and its judgement, without running a drill: the targets are a file
 * of their own whose digest is pinned here literally (changing a target fails this test until it
 * is changed on purpose), and every receipt prints that digest; then, for each figure, evidence
 * that meets every target with one defect injected — a new root lacking one captured work
 * transaction, one operator command more, a slow recovery, a re-send at the receiver, an old
 * writer let through, a crash that did not converge, a case not met, a continuation that did not
 * finish — and that figure, and only it, is reported missed and printed MISSED. A real drill with
 * defects injected is drill-defects.test.ts.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/core/index.js';
import { commandName } from '../../src/runtime/drill/cli.js';
import { buildReceipt, renderReceipt, type DrillEvidence, type DrillReceipt } from '../../src/runtime/drill/receipt.js';
import {
  DRILL_TARGETS,
  DRILL_TARGETS_SHA256,
  drillTargetsInvalid,
  targetsProblem,
} from '../../src/runtime/drill/targets.js';
import { REPO } from '../support/cli.js';
import type { Doc } from './support/adopt.js';

/** The digest of src/runtime/drill/targets.json's canonical JSON. Change it only with the targets, on purpose. */
const PINNED_TARGETS_SHA256 = '0fe7d1680713fa0eb40adbc6aabafa471c89e46247d198fd2e991eceae065631';

const TARGETS_FILE = join(REPO, 'src/runtime/drill/targets.json');
const validate = new Ajv2020({ strict: true, allErrors: true }).compile(
  JSON.parse(readFileSync(join(REPO, 'docs/schemas/recover-drill.schema.json'), 'utf8')),
);

/** Seconds after a fixed instant, as the drill's ISO times. */
const at = (s: number): string => new Date(Date.UTC(2026, 0, 1, 0, 0, 0) + s * 1000).toISOString();

/**
 * Evidence that meets every target: twelve source transactions, nine captured (the capture ended
 * at 10 s), three after it (11–13 s), the source lost at 14 s; the new root holds the nine.
 */
const MET: DrillEvidence = {
  drillId: 'drill_0123456789abcdef',
  mode: 'short',
  startedAt: at(0),
  source: {
    root: '/nowhere/source',
    offline: '/nowhere/offline',
    user: '/nowhere/user',
    archive: '/nowhere/archive',
    manifest: '/nowhere/manifest',
    capture: {
      profile: 'quiescent',
      captured_at_end: at(10),
      work_cursor: 9,
      todos: { open: 1, done: 1, blocked: 1, deferred: 0 },
      deliveries: 1,
    },
    cursor_at_loss: 12,
    history_at_loss: Array.from({ length: 12 }, (_, i) => ({
      cursor: i + 1,
      operation_id: `op-${i + 1}`,
      provider_revision: `${'0'.repeat(32)}:${i + 1}`,
      committed_at: at(i < 9 ? i + 1 : i + 2),
    })),
    lost_at: at(14),
    killed_run_id: 'run_0',
  },
  journey: {
    workspace: '/nowhere/workspace',
    destination: '/nowhere/recovered',
    state: 'complete',
    phases: [
      { phase: 'verify', elapsed_ms: 900 },
      { phase: 'plan', elapsed_ms: 500 },
      { phase: 'apply', elapsed_ms: 800 },
      { phase: 'first_turn', elapsed_ms: 1000 },
    ],
    rto_ms: 3200,
    human_actions: ['loopx backup-state verify', 'loopx recover plan', 'loopx recover apply'],
    holds: [],
    preview_lost_or_unknown: ['anything after the captured checkpoints'],
    recovered: {
      new_goal_instance_id: 'ginst_0',
      imported_transactions: 9,
      todos_at_adoption: { done: 1, blocked: 1, open: 1 },
      effects: { committed: 3 },
      committed_after_capture: 1,
      source_transactions_held: [1, 2, 3, 4, 5, 6, 7, 8, 9],
    },
    lineage_id: 'lineage_0',
    fence: 2,
    continued: { run_status: 'completed', todo_done_in_new_lifetime: true },
  },
  oldWriters: {
    attempts: [
      {
        writer: 'work run in the old source',
        expected: 'goal_lifetime_superseded',
        observed: 'goal_lifetime_superseded',
        rejected: true,
      },
    ],
    nothing_changed: true,
  },
  crashes: {
    cases: [
      {
        command: 'apply',
        point: 'recover.goal:rebind.before',
        killed: true,
        state_after_crash: 'applying',
        state_after_retry: 'complete',
        owners_converged: true,
        converged: true,
      },
      {
        command: 'resolve',
        point: 'recover.resolve.ask-again.before-journal',
        killed: true,
        state_after_crash: 'reconciliation_held',
        state_after_retry: 'complete',
        owners_converged: true,
        converged: true,
      },
    ],
    deliveries_sent: 0,
  },
  cases: [
    { case: 'apply of an abandoned recovery', expected: 'recover_abandoned', observed: 'recover_abandoned', met: true },
  ],
  held: {
    case: 'receiver down during the apply, then resolved',
    expected: 'reconciliation_held with holds, then complete',
    observed: 'reconciliation_held with 1 hold(s), then complete',
    met: true,
    holds: [
      {
        hold_id: 'receiver:webhook:127.0.0.1:1',
        owner: 'effect',
        code: 'receiver_unreachable',
        continuation: 'the receiver answers',
        resolved: true,
      },
    ],
    human_actions: 3,
  },
  online: {
    quiet: {
      case: 'online capture of a quiet source',
      expected: 'x',
      observed: 'x',
      met: true,
      captured_cursor: 3,
      recovered_cursor: 3,
    },
    moving: {
      case: 'online capture while a writer commits (the capture moved)',
      expected: 'x',
      observed: 'x',
      met: true,
      moved: true,
    },
  },
  receiver: {
    counts: { stored: 3, duplicate: 0 },
    storedMessages: ['outline ready', 'post draft ready', 'post published'],
  },
};

/** The receipt of MET with `defect` applied to a copy of it; checked against the published schema. */
function judged(defect: (e: Doc) => void = () => undefined): DrillReceipt {
  const e = structuredClone(MET) as Doc;
  defect(e);
  const r = buildReceipt(e as DrillEvidence);
  expect(validate(r) ? [] : validate.errors).toEqual([]);
  return r;
}

const printed = (r: DrillReceipt): string[] => {
  const lines: string[] = [];
  renderReceipt(r, (l) => lines.push(l));
  return lines;
};

describe('the drill targets', () => {
  it('are a file of their own, whose canonical JSON digest is pinned here', () => {
    const file = JSON.parse(readFileSync(TARGETS_FILE, 'utf8'));
    expect(DRILL_TARGETS).toEqual(file);
    expect(targetsProblem(file)).toBeUndefined();
    expect(createHash('sha256').update(canonicalJson(file)).digest('hex')).toBe(PINNED_TARGETS_SHA256);
    expect(DRILL_TARGETS_SHA256).toBe(PINNED_TARGETS_SHA256);
  });

  it('bound the RPO by the capture-to-loss interval and by the work the drill writes after the capture', () => {
    expect(DRILL_TARGETS).toMatchObject({
      rpo: 'last_captured_checkpoint',
      rpo_seconds_at_most: 'capture_to_loss_interval',
      rpo_work_items_lost_at_most: 3,
    });
  });

  it('are refused when the file does not read as targets, with one stable code', () => {
    expect(targetsProblem({ ...DRILL_TARGETS, rpo_seconds_at_most: 'unbounded' })).toBe(
      'rpo_seconds_at_most is not "capture_to_loss_interval"',
    );
    expect(targetsProblem({ ...DRILL_TARGETS, rto_seconds: '60' })).toBe('rto_seconds is not a number ≥ 0');
    expect(targetsProblem({ ...DRILL_TARGETS, rto_budget: 1 })).toBe('unknown target rto_budget');
    const { human_actions_base: _, ...without } = DRILL_TARGETS;
    expect(targetsProblem(without)).toBe('human_actions_base is not a number ≥ 0');
    expect(drillTargetsInvalid('x')).toMatchObject({ code: 'recover_drill_targets_invalid' });
  });

  it('every receipt prints their digest, in its JSON and in its lines', () => {
    const r = judged();
    expect(r.targets_sha256).toBe(PINNED_TARGETS_SHA256);
    expect(r.targets).toEqual(DRILL_TARGETS);
    expect(printed(r)[1]).toBe(`  targets: the drill's targets file, sha256 ${PINNED_TARGETS_SHA256}`);
  });
});

describe('the drill receipt judges what it measured', () => {
  it('evidence that meets every target is met, and nothing prints MISSED', () => {
    const r = judged();
    expect(r.missed).toEqual([]);
    expect(r.result).toBe('targets_met');
    expect(r.rpo).toMatchObject({
      seconds: 3, // the oldest write the new root lacks (11 s) to the loss (14 s)
      capture_to_loss_seconds: 4,
      written_after_capture: 3,
      work_items_lost_locally: 3,
      claimed_beyond_checkpoint: 0,
      met: true,
    });
    expect(r.recovered.source_transactions_held).toBe(9);
    expect(printed(r).filter((l) => l.includes('MISSED'))).toEqual([]);
  });

  /** `defect` applied, exactly `figure` is missed and its line prints MISSED. */
  const missesOnly = (defect: (e: Doc) => void, figure: string): DrillReceipt => {
    const r = judged(defect);
    expect(r.result).toBe('targets_missed');
    expect(r.missed).toEqual([figure]);
    const lines = printed(r);
    expect(lines[0]).toContain(`missed: ${figure}`);
    expect(lines.filter((l) => l.includes('MISSED'))).toHaveLength(1);
    return r;
  };

  it('an import that drops one captured transaction misses the RPO: older than the capture, one more lost', () => {
    const r = missesOnly((e) => (e.journey.recovered.source_transactions_held = [1, 2, 3, 4, 5, 6, 7, 8]), 'rpo');
    expect(r.rpo).toMatchObject({
      seconds: 5,
      capture_to_loss_seconds: 4,
      work_items_lost_locally: 4,
      claimed_beyond_checkpoint: 0,
    });
    expect(r.rpo.bounds).toEqual({
      nothing_claimed_beyond_checkpoint: true,
      within_capture_to_loss: false,
      within_work_items: false,
    });
    expect(r.lost_or_unknown.work_items_lost_locally).toBe(4);
  });

  it('an import that drops the first captured transaction misses the RPO too', () => {
    const r = missesOnly((e) => (e.journey.recovered.source_transactions_held = [2, 3, 4, 5, 6, 7, 8, 9]), 'rpo');
    expect(r.rpo).toMatchObject({ seconds: 13, work_items_lost_locally: 4 });
  });

  it('the recovery’s own word does not count: an import step that says it imported all nine, read back as eight, misses the RPO', () => {
    const r = missesOnly((e) => (e.journey.recovered.source_transactions_held = [1, 2, 3, 4, 5, 7, 8, 9]), 'rpo');
    expect(r.recovered).toMatchObject({ imported_transactions: 9, source_transactions_held: 8 });
  });

  it('a new root that holds a transaction written after the capture claims beyond the checkpoint: RPO missed', () => {
    const r = missesOnly(
      (e) => (e.journey.recovered.source_transactions_held = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
      'rpo',
    );
    expect(r.rpo.claimed_beyond_checkpoint).toBe(1);
    expect(r.rpo.bounds.nothing_claimed_beyond_checkpoint).toBe(false);
  });

  it('a drill that writes more after the capture than the targets allow to lose misses the RPO', () => {
    missesOnly((e) => {
      e.source.history_at_loss.push({
        cursor: 13,
        operation_id: 'op-13',
        provider_revision: `${'0'.repeat(32)}:13`,
        committed_at: at(13.5),
      });
      e.source.cursor_at_loss = 13;
    }, 'rpo');
  });

  it('one extra operator command misses the human actions', () => {
    const r = missesOnly((e) => e.journey.human_actions.push('loopx recover status'), 'human_actions');
    expect(r.human_actions).toMatchObject({ count: 4, limit: 3, visible_holds: 0 });
  });

  it('a visible hold allows one command more: the resolve it needs', () => {
    const r = judged((e) => {
      e.journey.holds.push({
        hold_id: 'receiver:webhook:127.0.0.1:1',
        owner: 'effect',
        code: 'receiver_unreachable',
        continuation: 'the receiver answers',
        resolved: true,
      });
      e.journey.human_actions.push('loopx recover resolve');
    });
    expect(r.human_actions).toMatchObject({ count: 4, limit: 4, visible_holds: 1, met: true });
    expect(r.missed).toEqual([]);
  });

  it('a recovery slower than its target misses the RTO', () => {
    missesOnly((e) => (e.journey.rto_ms = 60_001), 'rto');
  });

  it('a re-send the receiver saw of an operation it holds misses the protected duplicates', () => {
    missesOnly((e) => (e.receiver.counts.duplicate = 1), 'protected_duplicates');
  });

  it('one logical operation stored twice misses the protected duplicates', () => {
    missesOnly((e) => e.receiver.storedMessages.push('post published'), 'protected_duplicates');
  });

  it('an old writer let through misses the old writers', () => {
    missesOnly(
      (e) =>
        e.oldWriters.attempts.push({
          writer: 'todo add in the old source',
          expected: 'goal_lifetime_superseded',
          observed: 'accepted',
          rejected: false,
        }),
      'old_writers',
    );
  });

  it('a crash inside the resolve that did not converge misses the fault injection', () => {
    missesOnly(
      (e) =>
        Object.assign(e.crashes.cases[1], {
          state_after_retry: 'reconciliation_held',
          owners_converged: false,
          converged: false,
        }),
      'fault_injection',
    );
  });

  it('a delivery sent while the crashes were retried misses the fault injection', () => {
    missesOnly((e) => (e.crashes.deliveries_sent = 1), 'fault_injection');
  });

  it('a case not met misses the cases', () => {
    missesOnly((e) => Object.assign(e.cases[0], { observed: 'accepted', met: false }), 'cases');
  });

  it('a continuation that did not finish misses the continuation', () => {
    missesOnly((e) => (e.journey.continued.run_status = 'failed'), 'continuation');
  });

  const CROSS_HOST = {
    case: 'recovery on another host from an encrypted repository; the old host comes back',
    expected: 'x',
    observed: 'x',
    met: true,
    phases: [{ phase: 'verify', elapsed_ms: 900 }],
    rto_ms: 5_000,
    repository: { kind: 'directory', encrypted: true },
    old_host: { code: 'goal_lifetime_superseded', attempts_after_recovery: 0 },
    continued: { run_status: 'completed', todo_done: true },
  };

  it('says which variant ran: same-host without the cross-host evidence, cross-host (judged too) with it', () => {
    const same = judged();
    expect(same.variant).toBe('same-host');
    expect(same.cross_host).toBeUndefined();
    const cross = judged((e) => (e.crossHost = structuredClone(CROSS_HOST)));
    expect(cross).toMatchObject({ variant: 'cross-host', result: 'targets_met', cross_host: { met: true } });
    expect(printed(cross)[0]).toContain('(short, cross-host)');
    expect(printed(cross).at(-1)).toMatch(/^ {2}met {4}on another host from an encrypted repository: RTO 5 s/);
  });

  it('an old host that was admitted, or a cross-host RTO over the target, misses the cross-host variant', () => {
    const admitted = missesOnly(
      (e) =>
        (e.crossHost = {
          ...structuredClone(CROSS_HOST),
          met: false,
          old_host: { code: null, attempts_after_recovery: 1 },
        }),
      'cross_host',
    );
    expect(admitted.cross_host).toMatchObject({ met: false, old_host: { code: null } });
    const slow = missesOnly((e) => (e.crossHost = { ...structuredClone(CROSS_HOST), rto_ms: 61_000 }), 'cross_host');
    expect(slow.cross_host).toMatchObject({ met: false, rto: { seconds: 61, met: false } });
  });
});

describe('the drill counts the operator’s commands as issued', () => {
  it('names each by its command and subcommand, never an argument', () => {
    expect(commandName(['backup-state', 'verify', '--archive', '/secret/a.tar', '--execute'])).toBe(
      'loopx backup-state verify',
    );
    expect(commandName(['recover', 'resolve', '--destination', '/secret/d', '--hold', 'receiver:x'])).toBe(
      'loopx recover resolve',
    );
    expect(commandName(['goal', 'show', 'launch', '--root', '/secret/r'])).toBe('loopx goal show');
  });
});

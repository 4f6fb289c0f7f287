/**
 * The drill receipt (`loopx_recovery_drill_v0`, docs/schemas/recover-drill.schema.json): every
 * measured figure beside its target from the drill's definition, and whether it was met. Public:
 * ids, counts, codes and times only — never a path, a payload or session text.
 */
import type { DrillCase } from './cases.js';
import { DRILL_SCHEMA, DRILL_TARGETS, type DrillMode } from './definition.js';
import type { CrashCase } from './faults.js';
import type { JourneyOutcome } from './journey.js';
import type { OldWriters } from './old-writers.js';
import type { DrillSource } from './source.js';
import type { HeldVariant, OnlineCaptures } from './variants.js';

export interface DrillEvidence {
  readonly drillId: string;
  readonly mode: DrillMode;
  readonly startedAt: string;
  readonly source: DrillSource;
  readonly journey: JourneyOutcome;
  readonly oldWriters: OldWriters;
  readonly crashes: { readonly cases: readonly CrashCase[]; readonly deliveries_sent: number };
  readonly cases: readonly DrillCase[];
  readonly held: HeldVariant;
  readonly online: OnlineCaptures;
  /** The receiver's ledger at the end: every attempt by result, and the stored bodies. */
  readonly receiver: { readonly counts: Readonly<Record<string, number>>; readonly storedMessages: readonly string[] };
}

const seconds = (ms: number): number => Math.round(ms) / 1000;

function rpoOf(e: DrillEvidence) {
  const local = e.source.cursor_at_loss - e.source.capture.work_cursor;
  const external = e.journey.recovered.committed_after_capture;
  const beyond = e.journey.recovered.imported_transactions - e.source.capture.work_cursor;
  return {
    checkpoint: { captured_at_end: e.source.capture.captured_at_end, work_cursor: e.source.capture.work_cursor, profile: e.source.capture.profile },
    seconds: seconds(Date.parse(e.source.lost_at) - Date.parse(e.source.capture.captured_at_end)),
    work_items_lost_locally: local,
    committed_after_capture: external,
    claimed_beyond_checkpoint: beyond,
    target: DRILL_TARGETS.rpo,
    met: beyond === 0,
  };
}

export function buildReceipt(e: DrillEvidence) {
  const rto = { seconds: seconds(e.journey.rto_ms), target_seconds: DRILL_TARGETS.rto_seconds, met: e.journey.rto_ms <= DRILL_TARGETS.rto_seconds * 1000 };
  const rpo = rpoOf(e);
  const visible = e.journey.holds.length;
  const limit = DRILL_TARGETS.human_actions_base + DRILL_TARGETS.human_actions_per_hold * visible;
  const human = { count: e.journey.human_actions.length, visible_holds: visible, limit, met: e.journey.human_actions.length <= limit, actions: e.journey.human_actions };
  const duplicates = e.receiver.counts['duplicate'] ?? 0;
  const messages = new Map<string, number>();
  for (const m of e.receiver.storedMessages) messages.set(m, (messages.get(m) ?? 0) + 1);
  const protectedDuplicates = {
    count: duplicates,
    target: DRILL_TARGETS.protected_duplicates,
    attempts: e.receiver.counts,
    each_logical_operation_stored_once: [...messages.values()].every((n) => n === 1),
    met: duplicates <= DRILL_TARGETS.protected_duplicates && [...messages.values()].every((n) => n === 1),
  };
  const rejected = e.oldWriters.attempts.filter((a) => a.rejected).length;
  const percent = e.oldWriters.attempts.length === 0 ? 0 : Math.round((rejected / e.oldWriters.attempts.length) * 1000) / 10;
  const oldWriters = {
    attempted: e.oldWriters.attempts.length,
    rejected,
    percent,
    target_percent: DRILL_TARGETS.old_writers_rejected_percent,
    nothing_changed: e.oldWriters.nothing_changed,
    met: percent >= DRILL_TARGETS.old_writers_rejected_percent && e.oldWriters.nothing_changed,
    attempts: e.oldWriters.attempts,
  };
  const faults = {
    points: e.crashes.cases.length,
    converged: e.crashes.cases.filter((c) => c.converged).length,
    deliveries_sent: e.crashes.deliveries_sent,
    met: e.crashes.cases.every((c) => c.converged) && e.crashes.deliveries_sent === 0,
    cases: e.crashes.cases,
  };
  const cases = [...e.cases, e.held, e.online.quiet, e.online.moving].map((c) => ({ case: c.case, expected: c.expected, observed: c.observed, met: c.met }));
  const continued = { ...e.journey.continued, met: e.journey.continued.run_status === 'completed' && e.journey.continued.todo_done_in_new_lifetime };
  const checks: [string, boolean][] = [
    ['rto', rto.met],
    ['rpo', rpo.met],
    ['human_actions', human.met],
    ['protected_duplicates', protectedDuplicates.met],
    ['old_writers', oldWriters.met],
    ['fault_injection', faults.met],
    ['cases', cases.every((c) => c.met)],
    ['continuation', continued.met],
  ];
  const missed = checks.filter(([, met]) => !met).map(([name]) => name);
  return {
    schema_version: DRILL_SCHEMA,
    drill_id: e.drillId,
    mode: e.mode,
    started_at: e.startedAt,
    finished_at: new Date().toISOString(),
    result: missed.length === 0 ? ('targets_met' as const) : ('targets_missed' as const),
    missed,
    targets: DRILL_TARGETS,
    captured: { ...e.source.capture },
    recovered: { state: e.journey.state, ...e.journey.recovered },
    lost_or_unknown: {
      work_items_lost_locally: rpo.work_items_lost_locally,
      committed_after_capture: rpo.committed_after_capture,
      unknown: e.journey.holds.filter((h) => !h.resolved).length,
      preview: e.journey.preview_lost_or_unknown,
    },
    phases: e.journey.phases,
    rto,
    rpo,
    human_actions: human,
    holds: [...e.journey.holds.map((h) => ({ ...h, where: 'main' })), ...e.held.holds.map((h) => ({ ...h, where: 'receiver_down' }))],
    protected_duplicates: protectedDuplicates,
    old_writers: oldWriters,
    fault_injection: faults,
    cases,
    continued,
    execution_authority_granted: false as const,
  };
}

export type DrillReceipt = ReturnType<typeof buildReceipt>;

const mark = (met: boolean) => (met ? 'met   ' : 'MISSED');

/** The receipt for a person: each figure beside its target. */
export function renderReceipt(r: DrillReceipt, line: (text: string) => void): void {
  line(`recovery drill ${r.drill_id} (${r.mode}): ${r.result === 'targets_met' ? 'every target met' : `missed: ${r.missed.join(', ')}`}`);
  line(`  ${mark(r.rto.met)} RTO ${r.rto.seconds} s (target ≤ ${r.rto.target_seconds} s): ${r.phases.map((p) => `${p.phase} ${seconds(p.elapsed_ms)} s`).join(', ')}`);
  line(
    `  ${mark(r.rpo.met)} RPO the captured checkpoint (work cursor ${r.rpo.checkpoint.work_cursor}); ${r.rpo.seconds} s and ${r.rpo.work_items_lost_locally} local work item(s) lost, ${r.rpo.committed_after_capture} delivery committed after the capture; claimed beyond the checkpoint: ${r.rpo.claimed_beyond_checkpoint}`,
  );
  line(`  ${mark(r.human_actions.met)} human actions ${r.human_actions.count} (limit ${r.human_actions.limit} with ${r.human_actions.visible_holds} visible hold(s))`);
  line(`  ${mark(r.protected_duplicates.met)} protected duplicate operations ${r.protected_duplicates.count} (target ${r.protected_duplicates.target})`);
  line(
    `  ${mark(r.old_writers.met)} old writers rejected ${r.old_writers.rejected} of ${r.old_writers.attempted} (${r.old_writers.percent} %, target ${r.old_writers.target_percent} %)`,
  );
  line(`  ${mark(r.fault_injection.met)} crashes at ${r.fault_injection.points} owner commit points: ${r.fault_injection.converged} converged on retry`);
  for (const c of r.cases) line(`  ${mark(c.met)} ${c.case}: ${c.observed}`);
  line(`  ${mark(r.continued.met)} the unfinished Todo continued to done in the new lifetime`);
}

/**
 * The drill receipt (`loopx_recovery_drill_v0`, docs/schemas/recover-drill.schema.json): every
 * measured figure beside its target from the targets file, the SHA-256 of that file's canonical
 * JSON, and whether each target was met. A pure judgement of the evidence: a figure is measured
 * from what the drill observed (owner readback, the receiver's ledger, the commands the operator
 * issued), never from what the recovery said of itself. Public: ids, counts, codes and times only
 * — never a path, a payload or session text.
 */
import type { DrillCase } from './cases.js';
import { DRILL_SCHEMA, type DrillMode } from './definition.js';
import { DRILL_TARGETS, DRILL_TARGETS_SHA256 } from './targets.js';
import type { CrossHost } from './cross-host.js';
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
  /** The cross-host variant, when it ran (`--cross-host`). */
  readonly crossHost?: CrossHost;
  /** The receiver's ledger at the end: every attempt by result, and the stored bodies. */
  readonly receiver: { readonly counts: Readonly<Record<string, number>>; readonly storedMessages: readonly string[] };
}

const seconds = (ms: number): number => Math.round(ms) / 1000;

/**
 * The recovery point, from the source's history at the loss and what the new root holds of it: the
 * RPO is how old the oldest source write the new root lacks was when the source was lost (0 when it
 * lacks none). Met when nothing after the checkpoint is claimed, the RPO is at most the capture-to-
 * loss interval, and no more work is lost than the drill wrote after the capture.
 */
function rpoOf(e: DrillEvidence) {
  const captured = e.source.capture.work_cursor;
  const history = e.source.history_at_loss;
  const held = new Set(e.journey.recovered.source_transactions_held);
  const lost = history.filter((t) => !held.has(t.cursor));
  const beyond = history.filter((t) => t.cursor > captured && held.has(t.cursor)).length;
  const lostAt = Date.parse(e.source.lost_at);
  const captureToLossMs = lostAt - Date.parse(e.source.capture.captured_at_end);
  const rpoMs = lost[0] === undefined ? 0 : lostAt - Date.parse(lost[0].committed_at);
  const bounds = {
    nothing_claimed_beyond_checkpoint: beyond === 0,
    within_capture_to_loss: rpoMs <= captureToLossMs,
    within_work_items: lost.length <= DRILL_TARGETS.rpo_work_items_lost_at_most,
  };
  return {
    checkpoint: {
      captured_at_end: e.source.capture.captured_at_end,
      work_cursor: captured,
      profile: e.source.capture.profile,
    },
    seconds: seconds(rpoMs),
    capture_to_loss_seconds: seconds(captureToLossMs),
    written_after_capture: history.filter((t) => t.cursor > captured).length,
    work_items_lost_locally: lost.length,
    work_items_lost_at_most: DRILL_TARGETS.rpo_work_items_lost_at_most,
    committed_after_capture: e.journey.recovered.committed_after_capture,
    claimed_beyond_checkpoint: beyond,
    bounds,
    target: DRILL_TARGETS.rpo,
    met: bounds.nothing_claimed_beyond_checkpoint && bounds.within_capture_to_loss && bounds.within_work_items,
  };
}

/** The operator's commands to recover, as the drill issued them, against the base plus one per visible hold. */
function humanActionsOf(e: DrillEvidence) {
  const visible = e.journey.holds.length;
  const limit = DRILL_TARGETS.human_actions_base + DRILL_TARGETS.human_actions_per_hold * visible;
  return {
    count: e.journey.human_actions.length,
    visible_holds: visible,
    limit,
    met: e.journey.human_actions.length <= limit,
    actions: e.journey.human_actions,
  };
}

/** Every crash (of the apply, and inside the resolve) converged on retry, and the receiver saw no delivery from any of them. */
function faultsOf(e: DrillEvidence) {
  const cases = e.crashes.cases;
  return {
    points: cases.length,
    apply_points: cases.filter((c) => c.command === 'apply').length,
    resolve_points: cases.filter((c) => c.command === 'resolve').length,
    converged: cases.filter((c) => c.converged).length,
    deliveries_sent: e.crashes.deliveries_sent,
    met: cases.every((c) => c.converged) && e.crashes.deliveries_sent === 0,
    cases,
  };
}

/** The receiver's duplicate deliveries against the target, and whether each logical operation was stored once. */
function protectedDuplicatesOf(e: DrillEvidence) {
  const duplicates = e.receiver.counts['duplicate'] ?? 0;
  const messages = new Map<string, number>();
  for (const m of e.receiver.storedMessages) messages.set(m, (messages.get(m) ?? 0) + 1);
  return {
    count: duplicates,
    target: DRILL_TARGETS.protected_duplicates,
    attempts: e.receiver.counts,
    each_logical_operation_stored_once: [...messages.values()].every((n) => n === 1),
    met: duplicates <= DRILL_TARGETS.protected_duplicates && [...messages.values()].every((n) => n === 1),
  };
}

/** The old writers' tries: the share refused against the target, and whether nothing changed anywhere. */
function oldWritersOf(e: DrillEvidence) {
  const rejected = e.oldWriters.attempts.filter((a) => a.rejected).length;
  const percent =
    e.oldWriters.attempts.length === 0 ? 0 : Math.round((rejected / e.oldWriters.attempts.length) * 1000) / 10;
  return {
    attempted: e.oldWriters.attempts.length,
    rejected,
    percent,
    target_percent: DRILL_TARGETS.old_writers_rejected_percent,
    nothing_changed: e.oldWriters.nothing_changed,
    met: percent >= DRILL_TARGETS.old_writers_rejected_percent && e.oldWriters.nothing_changed,
    attempts: e.oldWriters.attempts,
  };
}

/** The cross-host variant's figures: its RTO beside the drill's target, the old host's answer, and whether it was met. */
const crossHostOf = (c: CrossHost) => ({
  case: c.case,
  expected: c.expected,
  observed: c.observed,
  repository: c.repository,
  phases: c.phases,
  rto: {
    seconds: seconds(c.rto_ms),
    target_seconds: DRILL_TARGETS.rto_seconds,
    met: c.rto_ms <= DRILL_TARGETS.rto_seconds * 1000,
  },
  old_host: c.old_host,
  continued: c.continued,
  met: c.met && c.rto_ms <= DRILL_TARGETS.rto_seconds * 1000,
});

/** The receipt of a drill: every figure measured from `e`, beside its target, and the targets missed. */
export function buildReceipt(e: DrillEvidence) {
  const rto = {
    seconds: seconds(e.journey.rto_ms),
    target_seconds: DRILL_TARGETS.rto_seconds,
    met: e.journey.rto_ms <= DRILL_TARGETS.rto_seconds * 1000,
  };
  const rpo = rpoOf(e);
  const human = humanActionsOf(e);
  const protectedDuplicates = protectedDuplicatesOf(e);
  const oldWriters = oldWritersOf(e);
  const faults = faultsOf(e);
  const cases = [...e.cases, e.held, e.online.quiet, e.online.moving].map((c) => ({
    case: c.case,
    expected: c.expected,
    observed: c.observed,
    met: c.met,
  }));
  const continued = {
    ...e.journey.continued,
    met: e.journey.continued.run_status === 'completed' && e.journey.continued.todo_done_in_new_lifetime,
  };
  const checks: [string, boolean][] = [
    ['rto', rto.met],
    ['rpo', rpo.met],
    ['human_actions', human.met],
    ['protected_duplicates', protectedDuplicates.met],
    ['old_writers', oldWriters.met],
    ['fault_injection', faults.met],
    ['cases', cases.every((c) => c.met)],
    ['continuation', continued.met],
    ...(e.crossHost !== undefined ? [['cross_host', crossHostOf(e.crossHost).met] as [string, boolean]] : []),
  ];
  const missed = checks.filter(([, met]) => !met).map(([name]) => name);
  const { source_transactions_held: held, ...recovered } = e.journey.recovered;
  return {
    schema_version: DRILL_SCHEMA,
    drill_id: e.drillId,
    mode: e.mode,
    variant: e.crossHost !== undefined ? ('cross-host' as const) : ('same-host' as const),
    started_at: e.startedAt,
    finished_at: new Date().toISOString(),
    result: missed.length === 0 ? ('targets_met' as const) : ('targets_missed' as const),
    missed,
    targets: DRILL_TARGETS,
    targets_sha256: DRILL_TARGETS_SHA256,
    captured: { ...e.source.capture },
    recovered: { state: e.journey.state, ...recovered, source_transactions_held: held.length },
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
    holds: [
      ...e.journey.holds.map((h) => ({ ...h, where: 'main' })),
      ...e.held.holds.map((h) => ({ ...h, where: 'receiver_down' })),
    ],
    protected_duplicates: protectedDuplicates,
    old_writers: oldWriters,
    fault_injection: faults,
    cases,
    continued,
    ...(e.crossHost !== undefined ? { cross_host: crossHostOf(e.crossHost) } : {}),
    execution_authority_granted: false as const,
  };
}

export type DrillReceipt = ReturnType<typeof buildReceipt>;

const mark = (met: boolean) => (met ? 'met   ' : 'MISSED');

/** The receipt for a person: each figure beside its target. */
export function renderReceipt(r: DrillReceipt, line: (text: string) => void): void {
  line(
    `recovery drill ${r.drill_id} (${r.mode}, ${r.variant}): ${r.result === 'targets_met' ? 'every target met' : `missed: ${r.missed.join(', ')}`}`,
  );
  line(`  targets: the drill's targets file, sha256 ${r.targets_sha256}`);
  line(
    `  ${mark(r.rto.met)} RTO ${r.rto.seconds} s (target ≤ ${r.rto.target_seconds} s): ${r.phases.map((p) => `${p.phase} ${seconds(p.elapsed_ms)} s`).join(', ')}`,
  );
  line(
    `  ${mark(r.rpo.met)} RPO ${r.rpo.seconds} s (target ≤ ${r.rpo.capture_to_loss_seconds} s from the capture to the loss) at the captured checkpoint (work cursor ${r.rpo.checkpoint.work_cursor}): ${r.rpo.work_items_lost_locally} work transaction(s) lost locally (target ≤ ${r.rpo.work_items_lost_at_most}; ${r.rpo.written_after_capture} written after the capture), ${r.rpo.committed_after_capture} delivery committed after the capture known to the receiver; claimed beyond the checkpoint: ${r.rpo.claimed_beyond_checkpoint}`,
  );
  line(
    `  ${mark(r.human_actions.met)} human actions ${r.human_actions.count} (limit ${r.human_actions.limit} with ${r.human_actions.visible_holds} visible hold(s)): ${r.human_actions.actions.join(', ')}`,
  );
  line(
    `  ${mark(r.protected_duplicates.met)} protected duplicate operations ${r.protected_duplicates.count} (target ${r.protected_duplicates.target})`,
  );
  line(
    `  ${mark(r.old_writers.met)} old writers rejected ${r.old_writers.rejected} of ${r.old_writers.attempted} (${r.old_writers.percent} %, target ${r.old_writers.target_percent} %)`,
  );
  line(
    `  ${mark(r.fault_injection.met)} crashes at ${r.fault_injection.apply_points} points of the apply and ${r.fault_injection.resolve_points} of the resolve: ${r.fault_injection.converged} of ${r.fault_injection.points} converged on retry, ${r.fault_injection.deliveries_sent} deliveries sent`,
  );
  for (const c of r.cases) line(`  ${mark(c.met)} ${c.case}: ${c.observed}`);
  line(`  ${mark(r.continued.met)} the unfinished Todo continued to done in the new lifetime`);
  if (r.cross_host !== undefined)
    line(
      `  ${mark(r.cross_host.met)} on another host from an encrypted repository: RTO ${r.cross_host.rto.seconds} s (target ≤ ${r.cross_host.rto.target_seconds} s); ${r.cross_host.observed}`,
    );
}

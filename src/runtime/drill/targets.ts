/**
 * The recovery drill's targets, frozen in their own file (targets.json) apart from the drill that
 * is measured against them: a change of the drill cannot move a target with it. The file holds
 * data only — JSON, not a module — so what the drill judges by is exactly what the file says, and
 * its identity is the SHA-256 of its canonical JSON (RFC 8785), the same for the source file and
 * the copy the build emits whatever their layout; every receipt prints it, and a test holds the
 * expected digest literally, so changing a target fails that test until it is updated on purpose.
 * Nothing here is computed from a drill's results; a missed target is reported, never adjusted.
 *
 * The targets (the recovery spec's M3 outcome):
 * - rto_seconds: from "backup and manifest supplied" to the first admitted turn in the new root,
 *   verify included;
 * - rpo: nothing after the last captured checkpoint is claimed as recovered;
 * - rpo_seconds_at_most: the RPO — from the oldest source write the new root does not hold to the
 *   loss of the source — is at most the drill's capture-to-loss interval (a recovery that loses a
 *   captured write is older than its capture);
 * - rpo_work_items_lost_at_most: the source's work transactions the new root does not hold are at
 *   most those the drill deliberately commits after the capture — the after-capture run's session
 *   fence, its lease on t3 and its note on t3 (its delivery is known to the receiver, not lost);
 * - human_actions_base, human_actions_per_hold: the operator's commands to recover — verify, plan
 *   and confirm, and one more per visible hold — counted as the drill issued them;
 * - protected_duplicates: re-sends the receiver sees of an operation it already holds;
 * - old_writers_rejected_percent: of the superseded lifetime's writers, refused.
 */
import { canonicalJson, internal, sha256Hex, type LoopxError } from '../../core/index.js';
import frozen from './targets.json' with { type: 'json' };

export interface DrillTargets {
  readonly rto_seconds: number;
  readonly rpo: 'last_captured_checkpoint';
  readonly rpo_seconds_at_most: 'capture_to_loss_interval';
  readonly rpo_work_items_lost_at_most: number;
  readonly human_actions_base: number;
  readonly human_actions_per_hold: number;
  readonly protected_duplicates: number;
  readonly old_writers_rejected_percent: number;
}

/** The targets as the file froze them. */
export const DRILL_TARGETS: DrillTargets = Object.freeze(frozen as DrillTargets);

/** SHA-256 (hex) of the canonical JSON of the targets file: printed by every receipt, pinned by test/recovery/drill-targets.test.ts. */
export const DRILL_TARGETS_SHA256: string = sha256Hex(canonicalJson(frozen));

const LITERALS: Readonly<Record<string, string>> = {
  rpo: 'last_captured_checkpoint',
  rpo_seconds_at_most: 'capture_to_loss_interval',
};
const COUNTS = [
  'rto_seconds',
  'rpo_work_items_lost_at_most',
  'human_actions_base',
  'human_actions_per_hold',
  'protected_duplicates',
  'old_writers_rejected_percent',
];

/** What is wrong with the targets file, if anything: every key known and present, each of its type. */
export function targetsProblem(value: Readonly<Record<string, unknown>>): string | undefined {
  const keys = [...Object.keys(LITERALS), ...COUNTS];
  const unknown = Object.keys(value).filter((k) => !keys.includes(k));
  if (unknown.length > 0) return `unknown target ${unknown.join(', ')}`;
  for (const [k, v] of Object.entries(LITERALS)) if (value[k] !== v) return `${k} is not "${v}"`;
  for (const k of COUNTS)
    if (typeof value[k] !== 'number' || !Number.isFinite(value[k]) || value[k] < 0) return `${k} is not a number ≥ 0`;
  return undefined;
}

/** The drill's own targets file does not read as targets: the drill refuses to run rather than judge by it. */
export const drillTargetsInvalid = (why: string): LoopxError =>
  internal('recover_drill_targets_invalid', `The recovery drill's targets file is not valid: ${why}.`, {
    nextAction: 'reinstall loopx; the drill judges only by the targets file it ships with',
  });

/** Before a drill runs: the targets it will judge by are valid. */
export function assertDrillTargets(): void {
  const problem = targetsProblem(frozen);
  if (problem !== undefined) throw drillTargetsInvalid(problem);
}

/**
 * The run store's refusals (its contract's failure modes), built only here so every store refuses
 * alike — and what a commit stores (`committed`), computed once for all of them.
 */
import { conflict, rejected, type LoopxError } from '../../core/index.js';
import type { AgentDefinition } from '../agent.js';
import type { RunEvent } from '../events.js';
import type { RunCommit, RunHead } from './contract.js';

/** The run is not at the sequence this writer expected (none, for a new or imported run): a stale writer is fenced. */
export const sequenceConflict = (runId: string, expected: number, found: number | undefined): LoopxError =>
  conflict(
    'run_sequence_conflict',
    `Run ${runId} changed under this writer (expected sequence ${expected === 0 ? 'none' : expected}, found ${found ?? 'none'}).`,
    {
      nextAction: 'reload the run and retry',
      details: { run_id: runId, expected_sequence: expected, found_sequence: found ?? null },
    },
  );

export const definitionConflict = (def: AgentDefinition): LoopxError =>
  conflict('definition_conflict', `Agent ${def.id}@${def.version} is already known with different content.`, {
    nextAction: 'give the changed agent definition a new version',
  });

export const emptyCommit = (): LoopxError => rejected('empty_commit', 'A run commit must carry at least one event.');

/** What a commit stores, the same in every store: the head after it (at `at`), its JSON, and its events with their sequences. */
export function committed(
  c: RunCommit,
  at: string,
): { readonly isNew: boolean; readonly head: RunHead; readonly headJson: string; readonly events: RunEvent[] } {
  const runId = c.head.runId;
  const isNew = c.expectedSequence === 0;
  const head: RunHead = {
    ...c.head,
    lastSequence: c.expectedSequence + c.events.length,
    updatedAt: at,
    createdAt: isNew ? at : c.head.createdAt,
  };
  const events: RunEvent[] = c.events.map((e, i) => ({
    runId,
    sequence: c.expectedSequence + 1 + i,
    type: e.type,
    data: e.data,
    at,
  }));
  return { isNew, head, headJson: JSON.stringify(head), events };
}

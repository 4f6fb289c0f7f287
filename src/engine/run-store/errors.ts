/**
 * The run store's refusals (its contract's failure modes), built only here so the SQLite store and
 * the in-memory reference refuse alike.
 */
import { conflict, rejected, type LoopxError } from '../../core/index.js';
import type { AgentDefinition } from '../agent.js';

/** The run is not at the sequence this writer expected (none, for a new or imported run): a stale writer is fenced. */
export const sequenceConflict = (runId: string, expected: number, found: number | undefined): LoopxError =>
  conflict('run_sequence_conflict', `Run ${runId} changed under this writer (expected sequence ${expected === 0 ? 'none' : expected}, found ${found ?? 'none'}).`, {
    nextAction: 'reload the run and retry',
    details: { run_id: runId, expected_sequence: expected, found_sequence: found ?? null },
  });

export const definitionConflict = (def: AgentDefinition): LoopxError =>
  conflict('definition_conflict', `Agent ${def.id}@${def.version} is already known with different content.`, { nextAction: 'give the changed agent definition a new version' });

export const emptyCommit = (): LoopxError => rejected('empty_commit', 'A run commit must carry at least one event.');

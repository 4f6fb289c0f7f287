/**
 * The run head and its commit discipline, shared by the reads, the kernel, the turn driver and the
 * transfer protocol — each of which reads a run's head and commits its next step through here.
 *
 * Rules it keeps:
 * - A commit names the sequence it expects the run to be at (`expectedSequence`): a second writer
 *   that got past the run lock anyway fails the commit instead of forking the history.
 * - A run id that could not be a run (`RUN_ID`) is `run_not_found`, like an absent one, before it
 *   reaches a lock file name or the authority.
 * - A finished run never runs again: one `run_terminal` refusal, defined here.
 */
import { canonicalJson, notFound, rejected, type LoopxError } from '../core/index.js';
import type { Message, ToolResultStatus } from '../snapshot/index.js';
import type { RunCommit, RunHead, RunStore } from './run-store/contract.js';
import type { JsonValue } from './tools.js';

export const RUN_ID = /^[A-Za-z0-9_-]{1,128}$/;

export const runNotFound = (runId: string): LoopxError =>
  notFound('run_not_found', `No run ${runId} in this root.`, { nextAction: 'list runs: loopx run list' });

/** The run's head; `run_not_found` when this root has no such run. */
export async function headOf(store: RunStore, runId: string): Promise<RunHead> {
  const head = await store.get(runId);
  if (!head) throw runNotFound(runId);
  return head;
}

/** Commit the next step of a run at `head`; returns the head after it (its events counted in). */
export async function commitRun(
  store: RunStore,
  head: RunHead,
  c: Omit<RunCommit, 'expectedSequence'>,
): Promise<RunHead> {
  const events = await store.commit({ ...c, expectedSequence: head.lastSequence });
  return { ...c.head, lastSequence: head.lastSequence + events.length };
}

export function terminalError(head: RunHead): LoopxError {
  return rejected('run_terminal', `Run ${head.runId} is ${head.lifecycle}; a finished run never runs again.`, {
    nextAction: `inspect it: loopx run show ${head.runId}`,
  });
}

export function toolMessage(
  id: string,
  callId: string,
  toolName: string,
  status: ToolResultStatus,
  result: JsonValue,
): Message {
  return {
    id,
    role: 'tool',
    parts: [{ type: 'tool_result', callId, toolName, status, resultJson: canonicalJson(result) }],
  };
}

export const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

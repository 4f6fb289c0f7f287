/** Human rendering of a run, shared by the run commands. */
import { RUN_FAILED_EXIT } from '../../core/index.js';
import type { Engine, RunView } from '../../runtime/index.js';
import { exitAfterOutput, runtime, type Output } from '../context.js';

export function printRun(v: RunView, out: Output, finalAnswer?: string): void {
  out.line(
    `run ${v.run_id}  ${v.status}  turns ${v.completed_turns}/${v.turn_limit}  last sequence ${v.last_sequence}`,
  );
  if (v.failure) out.line(`  failed: ${v.failure.message} [${v.failure.code}]`);
  if (v.failure?.next_action) out.line(`  next: ${v.failure.next_action}`);
  if (v.waiting_for?.kind === 'interaction') {
    out.line(`  waiting for interaction ${v.waiting_for.interaction_id}: ${v.waiting_for.prompt}`);
    out.hint(`  answer: loopx run answer ${v.run_id} ${v.waiting_for.interaction_id} "<text>"`);
  } else if (v.waiting_for?.kind === 'resolution') {
    out.line(`  uncertain mutating call(s), never re-run automatically: ${v.waiting_for.call_ids.join(', ')}`);
    for (const e of v.waiting_for.effects)
      out.line(
        `    ${e.call_id}: effect ${e.operation_id} ${e.outcome ?? 'not in the effect journal (recorded before it)'}`,
      );
    out.hint(`  settle: loopx run resolve ${v.run_id} <call-id> (--committed RESULT | --absent | --abandon)`);
  }
  if (v.suspend_requested) out.line('  suspend requested: takes effect when the current turn completes');
  if (finalAnswer !== undefined) {
    out.line('  final answer:');
    for (const line of finalAnswer.split('\n')) out.line(`    ${line}`);
  }
}

/** A command that drove `v` exits 5 once its document is printed when the run ended `failed`. */
export function exitIfFailed(v: RunView): void {
  if (v.status === 'failed') exitAfterOutput(RUN_FAILED_EXIT);
}

/** A completed run's final answer: the text of its last assistant message that has any; undefined for any other run. */
export async function finalAnswerOf(engine: Engine, v: RunView): Promise<string | undefined> {
  if (v.status !== 'completed') return undefined;
  const messages = await engine.messages(v.run_id);
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i]!;
    if (m.role !== 'assistant') continue;
    const text = m.parts.flatMap((p) => (p.type === 'text' ? [p.text] : [])).join('');
    if (text !== '') return text;
  }
  return undefined;
}

/** The short JSON shape of `run start` / `run resume` and friends (shared with the daemon). */
export const runSummary = async (v: RunView) => (await runtime()).runSummary(v);

/**
 * What `run start`, `run resume` and `work run` print of the run they drove: the run summary and,
 * for a completed run, its `final_answer`.
 */
export const drivenSummary = async (v: RunView, finalAnswer: string | undefined) => ({
  ...(await runSummary(v)),
  ...(finalAnswer !== undefined ? { final_answer: finalAnswer } : {}),
});

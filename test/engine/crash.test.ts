/**
 * Crash tests with real processes: the CLI child SIGKILLs itself at a named fault point during a
 * mutating tool call; a later command must find the call uncertain, never re-run it, and refuse
 * export until an operator resolves it.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { FAULT_AFTER_MUTATING_DISPATCH, FAULT_AFTER_MUTATION_INTENT } from '../../src/engine/index.js';
import { loopx, loopxAsync, tempRoot } from '../support/cli.js';

const AGENT = 'test/fixtures/agents/mutator.json';
const outboxLines = (root: string): string[] =>
  existsSync(join(root, 'outbox.jsonl'))
    ? readFileSync(join(root, 'outbox.jsonl'), 'utf8').split('\n').filter(Boolean)
    : [];

async function startAndCrash(root: string, fault: string) {
  const r = loopx(['run', 'start', '--agent', AGENT, '--root', root, '--json'], { LOOPX_TEST_FAULT: fault });
  expect(r.signal).toBe('SIGKILL');
  const runs = (await loopxAsync(['run', 'list', '--root', root, '--json'])).json<{ runs: Array<{ run_id: string }> }>()
    .runs;
  expect(runs).toHaveLength(1);
  return runs[0]!.run_id;
}

describe('a process killed during a mutating tool call', () => {
  it('leaves the call uncertain: it is not re-run, export refuses until resolved, then the run continues', async () => {
    const root = tempRoot();
    const runId = await startAndCrash(root, FAULT_AFTER_MUTATING_DISPATCH);
    expect(outboxLines(root)).toHaveLength(1); // the effect happened exactly once before the kill

    const shown = (await loopxAsync(['run', 'show', runId, '--root', root, '--json'])).json();
    expect(shown.status).toBe('active');
    expect(shown.waiting_for.kind).toBe('resolution');
    const callId: string = shown.waiting_for.call_ids[0];
    expect(callId).toBe(`${runId}/t1/k0`);

    // Driving the run again must not dispatch the call a second time.
    const resumed = await loopxAsync(['run', 'resume', runId, '--root', root, '--json']);
    expect(resumed.status).toBe(0);
    expect(resumed.json().waiting_for.kind).toBe('resolution');
    expect(outboxLines(root)).toHaveLength(1);

    const refused = await loopxAsync([
      'run',
      'export',
      runId,
      '--out',
      join(root, '..', 'x.snapshot'),
      '--root',
      root,
      '--json',
    ]);
    expect(refused.status).toBe(3);
    expect(refused.json().error.code).toBe('export_run_active');

    expect((await loopxAsync(['run', 'suspend', runId, '--root', root, '--json'])).json().suspend_requested).toBe(true);
    const resolved = await loopxAsync([
      'run',
      'resolve',
      runId,
      callId,
      '--committed',
      '{"delivered":true}',
      '--root',
      root,
      '--json',
    ]);
    expect(resolved.status).toBe(0);
    expect(resolved.json().status).toBe('suspended'); // the turn completed, then the pending request applied
    expect(outboxLines(root)).toHaveLength(1);

    const out = join(root, '..', 'run.snapshot');
    expect((await loopxAsync(['run', 'export', runId, '--out', out, '--root', root])).status).toBe(0);
    const inspected = (await loopxAsync(['run', 'inspect', out, '--json'])).json();
    const results = inspected.snapshot.messages
      .flatMap(
        (m: { parts: Array<{ type: string; call_id?: string; status?: string; result_json?: string }> }) => m.parts,
      )
      .filter((p: { type: string }) => p.type === 'tool_result');
    expect(results.find((p: { call_id: string }) => p.call_id === callId)).toMatchObject({
      status: 'ok',
      result_json: '{"delivered":true}',
    });
  });

  it('a cancelled run keeps an unresolved mutation: its export refuses with export_unresolved_mutation', async () => {
    const root = tempRoot();
    const runId = await startAndCrash(root, FAULT_AFTER_MUTATION_INTENT);
    expect(outboxLines(root)).toHaveLength(0); // killed after the intent, before dispatch
    expect((await loopxAsync(['run', 'cancel', runId, '--root', root])).status).toBe(0);
    const refused = await loopxAsync([
      'run',
      'export',
      runId,
      '--out',
      join(root, '..', 'c.snapshot'),
      '--root',
      root,
      '--json',
    ]);
    expect(refused.status).toBe(3);
    expect(refused.json().error.code).toBe('export_unresolved_mutation');
    expect((await loopxAsync(['run', 'resolve', runId, `${runId}/t1/k0`, '--absent', '--root', root])).status).toBe(0);
    expect(
      (await loopxAsync(['run', 'export', runId, '--out', join(root, '..', 'c.snapshot'), '--root', root])).status,
    ).toBe(0);
    expect(outboxLines(root)).toHaveLength(0);
  });

  it('killed after the intent but before dispatch, the call is still uncertain (never guessed absent) and resolves as absent', async () => {
    const root = tempRoot();
    const runId = await startAndCrash(root, FAULT_AFTER_MUTATION_INTENT);
    const shown = (await loopxAsync(['run', 'show', runId, '--root', root, '--json'])).json();
    // The engine's view is the effect owner's: dispatch recorded, never settled (pending).
    expect(shown.waiting_for).toEqual({
      kind: 'resolution',
      call_ids: [`${runId}/t1/k0`],
      effects: [{ call_id: `${runId}/t1/k0`, operation_id: `${runId}:t1:k0`, outcome: 'pending' }],
    });
    const resolved = (
      await loopxAsync(['run', 'resolve', runId, `${runId}/t1/k0`, '--absent', '--root', root, '--json'])
    ).json();
    expect(resolved.status).toBe('completed'); // the model saw the absent result and went on to finish
    expect(outboxLines(root)).toHaveLength(0);
  });
});

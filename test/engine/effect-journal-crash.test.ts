/**
 * One journal for mutating calls, through the real CLI and real SIGKILLs at named fault points: a
 * call killed mid-dispatch is the same unknown effect in the engine's view (`run show`), in the
 * effect owner's journal and in a backup's audit; `run resolve` settles it under its original
 * operation id in all three. A driver killed after the effect owner settled a call leaves an
 * outcome the next driver takes instead of guessing or re-running.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { FAULT_AFTER_EFFECT_SETTLED, FAULT_AFTER_MUTATING_DISPATCH } from '../../src/engine/index.js';
import {
  FAULT_BEFORE_WEBHOOK_SEND,
  openSqliteEffectJournal,
  type EffectJournal,
} from '../../src/owners/effect/index.js';
import { loopx, loopxAsync, tempRoot, type CliResult } from '../support/cli.js';

const MUTATOR = 'test/fixtures/agents/mutator.json';
const GOAL_WORKER = 'examples/agents/goal-worker.json';

let sink: WebhookSink;
beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
});
afterAll(async () => {
  await sink.close();
});

const ok = (r: CliResult): CliResult => {
  expect(r.status, r.stderr).toBe(0);
  return r;
};
const onlyRun = async (root: string): Promise<string> => {
  const runs = ok(await loopxAsync(['run', 'list', '--root', root, '--json'])).json<{
    runs: Array<{ run_id: string }>;
  }>().runs;
  expect(runs).toHaveLength(1);
  return runs[0]!.run_id;
};
const outboxLines = (root: string): string[] =>
  existsSync(join(root, 'outbox.jsonl'))
    ? readFileSync(join(root, 'outbox.jsonl'), 'utf8').split('\n').filter(Boolean)
    : [];

/** Read the root's effect journal (the effect owner's live API) and close it. */
async function withEffects<T>(root: string, fn: (j: EffectJournal) => Promise<T>): Promise<T> {
  const j = openSqliteEffectJournal(join(root, 'effects.db'));
  try {
    return await fn(j);
  } finally {
    j.close();
  }
}

interface AuditFinding {
  readonly code: string;
  readonly severity: string;
  readonly owner: string;
  readonly subject: string | null;
}

/** Back the root up, verify the backup into a new workspace, and return its audit's findings. */
async function auditFindings(root: string, backupId: string): Promise<AuditFinding[]> {
  const base = join(root, '..');
  const out = join(base, `out-${backupId}`);
  ok(
    await loopxAsync([
      'backup-state',
      '--execute',
      '--root',
      root,
      '--output-dir',
      out,
      '--backup-id',
      backupId,
      '--json',
    ]),
  );
  const dest = join(base, `verified-${backupId}`);
  ok(
    await loopxAsync([
      'backup-state',
      'verify',
      '--archive',
      join(out, `${backupId}.tar.gz`),
      '--manifest',
      join(out, `${backupId}.manifest.json`),
      '--destination',
      dest,
      '--execute',
      '--json',
    ]),
  );
  return (JSON.parse(readFileSync(join(dest, 'recovery-audit.json'), 'utf8')) as { findings: AuditFinding[] }).findings;
}
const aboutEffect = (findings: readonly AuditFinding[], operationId: string) =>
  findings.filter((f) => f.subject === `effect:${operationId}`);

describe('a built-in mutating tool killed between dispatch and outcome', () => {
  it('outbox.append is the same unknown effect in run show, in the effect owner and in a backup audit; run resolve settles it in all three', async () => {
    const root = tempRoot();
    const killed = loopx(['run', 'start', '--agent', MUTATOR, '--root', root, '--json'], {
      LOOPX_TEST_FAULT: FAULT_AFTER_MUTATING_DISPATCH,
    });
    expect(killed.signal).toBe('SIGKILL');
    const runId = await onlyRun(root);
    const callId = `${runId}/t1/k0`;
    const op = `${runId}:t1:k0`;
    expect(outboxLines(root)).toHaveLength(1); // the effect happened before the kill

    // The engine's view is read from the effect owner: dispatched, never settled.
    const shown = ok(await loopxAsync(['run', 'show', runId, '--root', root, '--json'])).json();
    expect(shown.waiting_for).toEqual({
      kind: 'resolution',
      call_ids: [callId],
      effects: [{ call_id: callId, operation_id: op, outcome: 'pending' }],
    });
    await withEffects(root, async (j) => {
      expect((await j.holds()).map((e) => e.operation_id)).toEqual([op]);
      expect(await j.get(op)).toMatchObject({
        kind: 'outbox.append',
        goal_id: `run:${runId}`,
        target: 'file:outbox.jsonl',
        attempt: 1,
      });
    });
    expect(aboutEffect(await auditFindings(root, 'before'), op)).toEqual([
      expect.objectContaining({ code: 'effect_dispatch_in_flight', owner: 'effect' }),
    ]);

    const resolved = ok(
      await loopxAsync([
        'run',
        'resolve',
        runId,
        callId,
        '--committed',
        '{"delivered":true}',
        '--root',
        root,
        '--json',
      ]),
    );
    expect(resolved.json()).toMatchObject({ status: 'completed', waiting_for: null });

    await withEffects(root, async (j) => {
      expect(await j.get(op)).toMatchObject({
        outcome: 'committed',
        receipt: { resolved_by: 'operator', result: { delivered: true } },
      });
      expect(await j.holds()).toEqual([]);
    });
    expect(ok(await loopxAsync(['run', 'show', runId, '--root', root, '--json'])).json()).toMatchObject({
      status: 'completed',
      waiting_for: null,
    });
    expect(aboutEffect(await auditFindings(root, 'after'), op)).toEqual([]);
    expect(outboxLines(root)).toHaveLength(1); // never re-run
  }, 120_000);

  it("killed after the effect owner settled the call but before the engine recorded it, the next driver takes the effect owner's outcome: never uncertain, never re-run", async () => {
    const root = tempRoot();
    expect(
      loopx(['run', 'start', '--agent', MUTATOR, '--root', root, '--json'], {
        LOOPX_TEST_FAULT: FAULT_AFTER_EFFECT_SETTLED,
      }).signal,
    ).toBe('SIGKILL');
    const runId = await onlyRun(root);
    await withEffects(root, async (j) =>
      expect(await j.get(`${runId}:t1:k0`)).toMatchObject({ outcome: 'committed', receipt: { delivered: true } }),
    );
    // Nothing to resolve: the effect owner has the outcome; the run only needs a driver.
    expect(ok(await loopxAsync(['run', 'show', runId, '--root', root, '--json'])).json()).toMatchObject({
      status: 'active',
      waiting_for: null,
    });

    expect(ok(await loopxAsync(['run', 'resume', runId, '--root', root, '--json'])).json()).toMatchObject({
      status: 'completed',
    });
    expect(outboxLines(root)).toHaveLength(1);
    const events = ok(await loopxAsync(['run', 'events', runId, '--root', root, '--json']))
      .stdout.trim()
      .split('\n')
      .map((l) => JSON.parse(l));
    expect(events.filter((e) => e.type === 'ToolResulted' && e.data.call_id === `${runId}/t1/k0`)).toEqual([
      expect.objectContaining({
        data: { call_id: `${runId}/t1/k0`, tool_name: 'outbox.append', status: 'ok', settled_by: 'effect_owner' },
      }),
    ]);
  }, 60_000);
});

describe('a Goal work run killed after the webhook intent, before the send', () => {
  it('is settled everywhere by run resolve --absent: the engine, the effect owner and a new backup audit; nothing is ever delivered', async () => {
    const root = tempRoot();
    ok(await loopxAsync(['init', '--root', root]));
    ok(await loopxAsync(['goal', 'create', 'launch', '--title', 'Ship the launch post', '--root', root]));
    for (const title of ['Draft the outline', 'Review with design'])
      ok(await loopxAsync(['todo', 'add', '--goal', 'launch', '--title', title, '--root', root]));
    const killed = await loopxAsync(
      [
        'work',
        'run',
        '--goal',
        'launch',
        '--agent',
        GOAL_WORKER,
        '--sink',
        sink.deliveriesUrl,
        '--root',
        root,
        '--json',
      ],
      {
        LOOPX_TEST_FAULT: FAULT_BEFORE_WEBHOOK_SEND,
      },
    );
    expect(killed.signal).toBe('SIGKILL');
    const runId = await onlyRun(root);
    const callId = `${runId}/t3/k0`; // the delivery (t1 lists, t2 updates a Todo)
    const op = `${runId}:t3:k0`;

    const shown = ok(await loopxAsync(['run', 'show', runId, '--root', root, '--json'])).json();
    expect(shown.waiting_for).toEqual({
      kind: 'resolution',
      call_ids: [callId],
      effects: [{ call_id: callId, operation_id: op, outcome: 'pending' }],
    });
    await withEffects(root, async (j) => {
      expect((await j.holds()).map((e) => e.operation_id)).toEqual([op]);
      expect(await j.get(op)).toMatchObject({ kind: 'webhook.deliver', goal_id: 'launch', outcome: 'pending' });
    });
    expect(aboutEffect(await auditFindings(root, 'before'), op)).toEqual([
      expect.objectContaining({ code: 'effect_dispatch_in_flight', owner: 'effect' }),
    ]);

    const resolved = await loopxAsync(['run', 'resolve', runId, callId, '--absent', '--root', root, '--json']);
    expect(resolved.status, resolved.stderr).toBe(0);
    expect(resolved.json()).toMatchObject({ status: 'completed', waiting_for: null });

    await withEffects(root, async (j) => {
      expect(await j.get(op)).toMatchObject({ outcome: 'absent', receipt: { resolved_by: 'operator' } });
      expect(await j.holds()).toEqual([]);
      expect(await j.outbox()).toEqual([]);
    });
    expect(aboutEffect(await auditFindings(root, 'after'), op)).toEqual([]);
    expect(sink.deliveries().filter((d) => d.operation_id.startsWith(`${runId}:`))).toEqual([]);
  }, 180_000);
});

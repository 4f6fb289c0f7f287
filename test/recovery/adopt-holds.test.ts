/**
 * Holds: a delivery whose outcome the source never learned (the receiver stored it, the response
 * was lost) is recovered under its original identity and asked of its receiver — never re-sent.
 * With the receiver down at apply time, the recovery ends `reconciliation_held`: the effect and the
 * receiver each a hold with its owner, continuation and one next action. Once the receiver is back,
 * While held, the root admits no new work (`recover_reconciliation_held`). Once the receiver is
 * back, `recover resolve` settles each hold through the effect owner — the effect found committed
 * by its original operation id, the receiver's fence moved — and the recovery is `complete`; the
 * work then continues, with nothing delivered twice.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import * as effectOwner from '../../src/owners/effect/index.js';
import { loopxAsync } from '../support/cli.js';
import { agentFile, okAsync, planAsync, type Source } from './support/adopt.js';

let sink: WebhookSink;
let port: number;
let journal: string;
let s: Source;
let destination: string;
let digest: string;

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'loopx-adopt-holds-'));
  journal = join(dir, 'sink.jsonl');
  sink = await startWebhookSink({ port: 0, journalPath: journal });
  port = sink.port;
  const root = join(dir, 'root');
  const authority = join(dir, 'authority');
  const at = (r: string) => ['--root', r, '--authority-dir', authority];
  const deliver = agentFile(dir, 'deliver', [
    { text: 'Announcing.', tool_calls: [{ name: 'webhook.deliver', arguments: { message: 'lost response' } }] },
    { text: 'Done.' },
  ]);
  s = {
    dir,
    root,
    authority,
    workspace: join(dir, 'workspace'),
    agents: { before: deliver, after: deliver, cont: deliver },
    at,
  };
  expect((await loopxAsync(['init', ...at(root)])).status).toBe(0);
  expect((await loopxAsync(['goal', 'create', 'launch', '--title', 'Ship', ...at(root)])).status).toBe(0);
  sink.failNext('drop_response_after_store');
  const run = await loopxAsync([
    'work',
    'run',
    '--goal',
    'launch',
    '--agent',
    deliver,
    '--sink',
    sink.deliveriesUrl,
    ...at(root),
    '--json',
  ]);
  expect(run.status, run.stderr).toBe(0);
  const out = join(dir, 'backups');
  const b = await okAsync(s, ['backup-state', '--execute', '--output-dir', out, '--backup-id', 'h1', '--root', root]);
  await okAsync(s, [
    'backup-state',
    'verify',
    '--archive',
    join(out, b.archive.name),
    '--manifest',
    join(out, b.manifest.name),
    '--destination',
    s.workspace,
    '--execute',
    '--root',
    root,
  ]);
  await sink.close();
}, 240_000);
afterAll(async () => {
  await sink.close().catch(() => undefined);
});

describe('recover: holds, and resolving them through their owner', () => {
  it('previews the uncertain delivery and ends held while the receiver is down', async () => {
    const p = await planAsync(s);
    destination = p.destination;
    digest = p.doc.plan_digest;
    expect(p.doc.preview.lost_or_unknown.join('\n')).toMatch(/outcome unknown/);
    const st = await okAsync(s, ['recover', 'apply', '--destination', destination, '--confirm', digest]);
    expect(st.state).toBe('reconciliation_held');
    expect(st.holds.map((h: { code: string }) => h.code).sort()).toEqual([
      'effect_outcome_unknown',
      'receiver_unreachable',
    ]);
    for (const h of st.holds) expect(h.next_action).toContain(`loopx recover resolve --destination`);
    expect(st.fences.destination_established).toBe(false);
    // No new work while held: effects and deliveries are reconciled before ordinary admission opens.
    for (const args of [
      ['work', 'run', '--goal', 'launch', '--agent', s.agents.cont],
      ['todo', 'add', '--goal', 'launch', '--title', 'More'],
    ]) {
      const refused = await loopxAsync([...args, '--root', destination, '--authority-dir', s.authority, '--json']);
      expect(refused.status, refused.stdout).toBe(4);
      const err = JSON.parse(refused.stdout).error;
      expect(err.code).toBe('recover_reconciliation_held');
      expect(err.next_action).toContain(st.next_action);
    }
    const effects = effectOwner.openSqliteEffectJournal(join(destination, 'effects.db'));
    try {
      const deliveries = (await effects.list({ goal_id: 'launch' })).filter((e) => e.kind === 'webhook.deliver');
      expect(deliveries.map((e) => e.outcome)).toEqual(['unknown']);
    } finally {
      effects.close();
    }
  }, 180_000);

  it('resolves each hold once the receiver is back: committed under the original id, the fence moved, complete', async () => {
    sink = await startWebhookSink({ port, journalPath: journal });
    const held = (await okAsync(s, ['recover', 'status', '--destination', destination])).holds as { hold_id: string }[];
    for (const h of held) await okAsync(s, ['recover', 'resolve', '--destination', destination, '--hold', h.hold_id]);
    const st = await okAsync(s, ['recover', 'status', '--destination', destination]);
    expect(st.state).toBe('complete');
    expect(st.fences).toEqual({ source_established: true, destination_established: true });
    expect(sink.deliveries()).toHaveLength(1);
    expect(sink.attempts().counts.duplicate ?? 0).toBe(0);
    // Admission is open again: the work continues, and the delivery the source made is not made twice.
    const run = await loopxAsync([
      'work',
      'run',
      '--goal',
      'launch',
      '--agent',
      s.agents.cont,
      '--root',
      destination,
      '--authority-dir',
      s.authority,
      '--json',
    ]);
    expect(run.status, run.stderr).toBe(0);
    expect(sink.deliveries()).toHaveLength(1);
    expect(sink.attempts().counts.duplicate ?? 0).toBe(0);
  }, 180_000);
});

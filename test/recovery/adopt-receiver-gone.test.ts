/**
 * A receiver that will never answer again, settled from the operator's evidence. Two Goals each
 * made a delivery whose response was lost (outcome unknown), then the receiver went away for good.
 * Each recovery ends `reconciliation_held` — the unknown delivery and the receiver, each a hold —
 * and admits no work. `recover resolve --receiver-gone --confirm <hold digest> --reason TEXT` (from
 * the CLI, and through the daemon's route) settles it: the journal records the operator's reason,
 * the unknown delivery is abandoned (still unknown, held as receiver_gone, never sent), the
 * recovery completes and the work continues — and a later delivery of that Goal to the same
 * receiver is refused, even when something answers at its address again. Refused first: a wrong or
 * stale digest, a missing reason, an effect hold named as a receiver. A settlement killed between
 * the effect owner's record and the recovery journal's is finished by the same command.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, LoginTokens, type DaemonApp } from '../../src/daemon/index.js';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import * as effectOwner from '../../src/owners/effect/index.js';
import { loopxAsync } from '../support/cli.js';
import { agentFile, okAsync, type Doc, type Source } from './support/adopt.js';
import { closeDaemon } from '../support/daemon.js';

const TOKEN = 'test-token-0123456789';
const AUTH = { host: '127.0.0.1:80', authorization: `Bearer ${TOKEN}` };

let sink: WebhookSink | undefined;
let port: number;
let journalPath: string;
let s: Source;
let d: DaemonApp | undefined;

const deliveries = async (root: string, goalId: string) => {
  const effects = effectOwner.openSqliteEffectJournal(join(root, 'effects.db'));
  try {
    return await effects.list({ goal_id: goalId });
  } finally {
    effects.close();
  }
};

const refused = async (args: readonly string[]): Promise<{ status: number | null; error: Doc }> => {
  const r = await loopxAsync([...args, '--authority-dir', s.authority, '--json']);
  return { status: r.status, error: r.status === 0 ? null : JSON.parse(r.stdout).error };
};

beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'loopx-adopt-gone-'));
  journalPath = join(dir, 'sink.jsonl');
  sink = await startWebhookSink({ port: 0, journalPath });
  port = sink.port;
  const root = join(dir, 'root');
  const authority = join(dir, 'authority');
  const at = (r: string) => ['--root', r, '--authority-dir', authority];
  const deliver = agentFile(dir, 'deliver', [
    { text: 'Announcing.', tool_calls: [{ name: 'webhook.deliver', arguments: { message: 'lost response' } }] },
    { text: 'Done.' },
  ]);
  const later = agentFile(dir, 'later', [
    { text: 'One more.', tool_calls: [{ name: 'webhook.deliver', arguments: { message: 'after the receiver went' } }] },
    { text: 'Done.' },
  ]);
  s = {
    dir,
    root,
    authority,
    workspace: join(dir, 'workspace'),
    agents: { before: deliver, after: deliver, cont: later },
    at,
  };
  expect((await loopxAsync(['init', ...at(root)])).status).toBe(0);
  for (const goal of ['alpha', 'beta', 'gamma']) {
    expect((await loopxAsync(['goal', 'create', goal, '--title', `Ship ${goal}`, ...at(root)])).status).toBe(0);
    sink.failNext('drop_response_after_store');
    const run = await loopxAsync([
      'work',
      'run',
      '--goal',
      goal,
      '--agent',
      deliver,
      '--sink',
      sink.deliveriesUrl,
      ...at(root),
      '--json',
    ]);
    expect(run.status, run.stderr).toBe(0);
  }
  const out = join(dir, 'backups');
  const b = await okAsync(s, ['backup-state', '--execute', '--output-dir', out, '--backup-id', 'g1', '--root', root]);
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
  // The same state, in the root's own backups, for the daemon.
  await okAsync(s, ['backup-state', '--execute', '--backup-id', 'g2', '--root', root]);
  // The receiver goes away for good.
  await sink.close();
  sink = undefined;
}, 240_000);

afterAll(() => closeDaemon(d, sink));

describe('recover resolve --receiver-gone: a receiver that will never answer again', () => {
  let destination: string;
  let receiverHold: Doc;
  let effectHold: Doc;

  it('holds the recovery and admits no work while the receiver is gone', async () => {
    destination = join(s.dir, 'alpha-recovered');
    const p = await okAsync(s, [
      'recover',
      'plan',
      '--from',
      s.workspace,
      '--goal',
      'alpha',
      '--destination',
      destination,
      '--root',
      s.root,
    ]);
    const st = await okAsync(s, ['recover', 'apply', '--destination', destination, '--confirm', p.plan_digest]);
    expect(st.state).toBe('reconciliation_held');
    // The six verification counts every recovery status shows.
    expect(st.verification).toEqual({
      verified: expect.any(Number),
      invalid: 0,
      missing: 0,
      ambiguous: 0,
      unsupported: 0,
      unknown: 0,
      other: 0,
    });
    expect(st.verification.verified).toBeGreaterThan(0);
    receiverHold = st.holds.find((h: Doc) => h.hold_id.startsWith('receiver:'));
    effectHold = st.holds.find((h: Doc) => h.hold_id.startsWith('effect:'));
    expect(receiverHold).toMatchObject({
      code: 'receiver_unreachable',
      retryable: true,
      digest: expect.stringMatching(/^[0-9a-f]{64}$/),
    });
    expect(effectHold).toMatchObject({ code: 'effect_outcome_unknown' });
    const work = await refused(['work', 'run', '--goal', 'alpha', '--agent', s.agents.cont, '--root', destination]);
    expect(work.status).toBe(4);
    expect(work.error.code).toBe('recover_reconciliation_held');
  }, 180_000);

  it('refuses a settlement it cannot bind: no reason, a wrong digest, an effect hold — and changes nothing', async () => {
    const base = [
      'recover',
      'resolve',
      '--destination',
      destination,
      '--hold',
      receiverHold.hold_id,
      '--receiver-gone',
    ];
    const noReason = await refused([...base, '--confirm', receiverHold.digest]);
    expect(noReason.status).toBe(2);
    expect(noReason.error.code).toBe('recover_settlement_invalid');
    const wrong = await refused([...base, '--confirm', '0'.repeat(64), '--reason', 'decommissioned']);
    expect(wrong.status).toBe(3);
    expect(wrong.error.code).toBe('recover_hold_confirm_mismatch');
    expect(wrong.error.next_action).toContain('loopx recover status --destination');
    const notReceiver = await refused([
      'recover',
      'resolve',
      '--destination',
      destination,
      '--hold',
      effectHold.hold_id,
      '--receiver-gone',
      '--confirm',
      effectHold.digest,
      '--reason',
      'decommissioned',
    ]);
    expect(notReceiver.status).toBe(3);
    expect(notReceiver.error.code).toBe('recover_hold_not_receiver');
    const st = await okAsync(s, ['recover', 'status', '--destination', destination]);
    expect(st.state).toBe('reconciliation_held');
    expect(st.holds).toHaveLength(2);
    expect(st.resolved_holds).toEqual([]);
    const held = (await deliveries(destination, 'alpha')).filter((e) => e.kind === 'webhook.deliver');
    expect(held.map((e) => [e.outcome, e.hold])).toEqual([['unknown', 'recovered_unknown']]);
  }, 120_000);

  it("settles it from the operator's evidence: recorded with the reason, the unknown delivery abandoned, the recovery complete", async () => {
    const reason = 'receiver decommissioned with its host; vendor ticket 4711';
    const settle = [
      'recover',
      'resolve',
      '--destination',
      destination,
      '--hold',
      receiverHold.hold_id,
      '--receiver-gone',
      '--confirm',
      receiverHold.digest,
      '--reason',
      reason,
    ];
    const st = await okAsync(s, settle);
    expect(st.state).toBe('complete');
    expect(st.holds).toEqual([]);
    expect(st.fences).toEqual({ source_established: true, destination_established: true });
    const abandonedId = effectHold.hold_id.slice('effect:'.length);
    expect(st.resolved_holds).toEqual([
      {
        hold_id: receiverHold.hold_id,
        owner: 'effect',
        outcome: 'receiver_gone',
        resolved_by: 'operator',
        reason,
        hold_digest: receiverHold.digest,
        abandoned: [abandonedId],
      },
    ]);
    // Abandoned, never guessed: the delivery's outcome stays unknown, held as receiver_gone, and it was never sent.
    const effects = await deliveries(destination, 'alpha');
    const delivery = effects.find((e) => e.operation_id === abandonedId)!;
    expect([delivery.outcome, delivery.hold, delivery.attempt]).toEqual(['unknown', effectOwner.RECEIVER_GONE, 1]);
    const retirement = effects.find((e) => e.kind === effectOwner.TARGET_RETIRED_KIND)!;
    expect(retirement).toMatchObject({ target: receiverHold.subject, outcome: 'rejected' });
    expect(JSON.parse(retirement.intent)).toMatchObject({ reason, hold_digest: receiverHold.digest });
    // The same settlement again: the hold is gone.
    const again = await refused(settle);
    expect(again.error.code).toBe('recover_hold_not_found');
  }, 120_000);

  it('continues the work, and refuses a later delivery to that receiver — even when something answers at its address again', async () => {
    sink = await startWebhookSink({ port, journalPath });
    const before = sink.attempts().attempts.length;
    try {
      const run = await loopxAsync([
        'work',
        'run',
        '--goal',
        'alpha',
        '--agent',
        s.agents.cont,
        '--root',
        destination,
        '--authority-dir',
        s.authority,
        '--json',
      ]);
      expect(run.status, run.stderr + run.stdout).toBe(0);
      // The call was refused by the effect owner before anything was recorded or sent: the model read the refusal.
      const events = await loopxAsync([
        'run',
        'events',
        JSON.parse(run.stdout).run_id,
        '--root',
        destination,
        '--authority-dir',
        s.authority,
        '--json',
      ]);
      expect(events.status, events.stderr).toBe(0);
      const results = events.stdout
        .split('\n')
        .filter((l) => l.includes('"ToolResulted"'))
        .map((l) => JSON.parse(l).data);
      expect(results).toEqual([expect.objectContaining({ tool_name: 'webhook.deliver', status: 'error' })]);
      expect(sink.attempts().attempts.length).toBe(before);
      const webhooks = (await deliveries(destination, 'alpha')).filter((e) => e.kind === 'webhook.deliver');
      expect(webhooks).toHaveLength(1);
    } finally {
      await sink.close();
      sink = undefined;
    }
  }, 180_000);
});

describe('the daemon route settles a gone receiver the same way', () => {
  it('refuses without the digest and the reason, then settles with them; the recovery completes', async () => {
    d = await buildApp({
      root: s.root,
      token: TOKEN,
      loginTokens: new LoginTokens(),
      port: () => 80,
      authorityDir: s.authority,
      logger: false,
    });
    const get = (url: string) => d!.app.inject({ method: 'GET', url, headers: AUTH });
    const post = (url: string, payload?: unknown) =>
      d!.app.inject({
        method: 'POST',
        url,
        headers: AUTH,
        ...(payload !== undefined ? { payload: payload as object } : {}),
      });
    const started = await post('/api/backups/g2/verify');
    expect(started.statusCode, started.body).toBe(202);
    const jobId = started.json().job_id as string;
    await get(`/api/backups/jobs/${jobId}/events`);
    const auditId = (await get(`/api/backups/jobs/${jobId}`)).json().recovery_id as string;
    const planned = await post(`/api/audits/${auditId}/recoveries`, {
      goal_id: 'beta',
      destination_name: 'beta-recovered',
    });
    expect(planned.statusCode, planned.body).toBe(201);
    const id = planned.json().recovery_id as string;
    expect((await post(`/api/recoveries/${id}/apply`, { confirm: planned.json().plan_digest })).statusCode).toBe(202);
    await d.adoptions.settled(id);
    const held = (await get(`/api/recoveries/${id}`)).json();
    expect(held.status.state).toBe('reconciliation_held');
    const hold = held.status.holds.find((h: Doc) => h.hold_id.startsWith('receiver:'));
    const route = `/api/recoveries/${id}/holds/${encodeURIComponent(hold.hold_id)}/resolve`;
    const missing = await post(route, { receiver_gone: true, confirm: hold.digest });
    expect(missing.statusCode).toBe(400);
    const wrong = await post(route, { receiver_gone: true, confirm: 'f'.repeat(64), reason: 'gone' });
    expect(wrong.statusCode).toBe(422);
    expect(wrong.json().error.code).toBe('recover_hold_confirm_mismatch');
    expect(wrong.body).not.toContain(dirname(s.root));
    const settled = await post(route, {
      receiver_gone: true,
      confirm: hold.digest,
      reason: 'the receiver was shut down for good',
    });
    expect(settled.statusCode, settled.body).toBe(200);
    expect(settled.json().status).toMatchObject({
      state: 'complete',
      resolved_holds: [
        { hold_id: hold.hold_id, outcome: 'receiver_gone', reason: 'the receiver was shut down for good' },
      ],
    });
  }, 240_000);
});

describe('a settlement killed halfway', () => {
  it('is finished by the same command, with the same digest: one retirement, the abandoned delivery named once', async () => {
    const destination = join(s.dir, 'gamma-recovered');
    const p = await okAsync(s, [
      'recover',
      'plan',
      '--from',
      s.workspace,
      '--goal',
      'gamma',
      '--destination',
      destination,
      '--root',
      s.root,
    ]);
    const st = await okAsync(s, ['recover', 'apply', '--destination', destination, '--confirm', p.plan_digest]);
    const hold = st.holds.find((h: Doc) => h.hold_id.startsWith('receiver:'));
    const abandonedId = st.holds.find((h: Doc) => h.hold_id.startsWith('effect:')).hold_id.slice('effect:'.length);
    const args = [
      'recover',
      'resolve',
      '--destination',
      destination,
      '--hold',
      hold.hold_id,
      '--receiver-gone',
      '--confirm',
      hold.digest,
      '--reason',
      'gone',
    ];
    const killed = await loopxAsync([...args, '--authority-dir', s.authority], {
      LOOPX_TEST_FAULT: 'recover.resolve.receiver-gone.before-journal',
    });
    expect(killed.signal ?? killed.status).toBe('SIGKILL');
    const between = await okAsync(s, ['recover', 'status', '--destination', destination]);
    expect(between.state).toBe('reconciliation_held');
    expect(between.holds.map((h: Doc) => [h.hold_id, h.digest])).toEqual([[hold.hold_id, hold.digest]]);
    const done = await okAsync(s, args);
    expect(done.state).toBe('complete');
    expect(done.resolved_holds).toEqual([
      expect.objectContaining({ hold_id: hold.hold_id, outcome: 'receiver_gone', abandoned: [abandonedId] }),
    ]);
    const effects = await deliveries(destination, 'gamma');
    expect(effects.filter((e) => e.kind === effectOwner.TARGET_RETIRED_KIND)).toHaveLength(1);
  }, 180_000);
});

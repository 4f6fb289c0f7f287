/**
 * An operator's hand on a cluster's runs (`loopx run show|events|resolve --cluster`): a daemon of
 * the cluster (in this process) drives a run whose receiver is down, so its delivery's outcome is
 * unknown and no reconciliation can learn it — the run is held. The operator reads it, is refused
 * (typed, with a next action that works as printed, nothing changed) for a wrong call, an unknown
 * run or keys of no cluster, then settles the call with the real CLI: under a lease of its own
 * (a new epoch, its own instance), without continuing the run; the daemon continues it under a
 * later epoch, and the run completes with gapless events and no epoch going back.
 */
import { createServer } from 'node:net';
import { afterAll, expect, it } from 'vitest';
import { startWebhookSink } from '../../src/dev/index.js';
import { ClusterNode, initCluster, loadAgentFile, submitClusterRun } from '../../src/runtime/index.js';
import { openPostgres } from '../../src/store/index.js';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { loopxAsync, tempRoot, rel } from '../support/cli.js';
import { describePg, PG_URL, pgSchemas } from '../support/pg.js';
import { expectSchemaValid } from '../support/pg-restore.js';

const URL_VAR = 'LOOPX_OPERATOR_CLUSTER_URL';
const CLUSTER = `env:${URL_VAR}`;
const env = { [URL_VAR]: PG_URL };
process.env[URL_VAR] = PG_URL;
const schemaName = pgSchemas();
const closers: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c();
});

/** A port nothing listens on (bound, then let go): a receiver that is down. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const { port } = server.address() as { port: number };
  await new Promise((r) => server.close(r));
  return port;
}

async function until<T>(what: string, probe: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + 60_000;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The next action of a refusal, run as printed (its words after `: loopx `). */
const runNextAction = async (doc: unknown) => {
  const next = (doc as { error: { next_action: string } }).error.next_action;
  return await loopxAsync(next.slice(next.indexOf(': loopx ') + ': loopx '.length).split(' '), env);
};

/** A fresh cluster schema, its key directory, one daemon (in this process) delivering to `receiver`, and a run of `deliveries` deliveries submitted. */
async function clusterWithRun(receiver: string, runId: string, deliveries: number) {
  const schema = schemaName();
  await initCluster({ cluster: CLUSTER, schema });
  const keys = tempRoot('loopx-operator-keys-');
  expect((await loopxAsync(['authority', 'init', '--authority-dir', keys])).status).toBe(0);
  const node = await ClusterNode.join({
    cluster: CLUSTER,
    schema,
    keysDir: keys,
    receiverUrl: receiver,
    leaseMs: 2_000,
    pollMs: 100,
  });
  closers.push(() => node.close());
  const db = openPostgres({ url: PG_URL, schema, max: 2 });
  closers.push(() => db.close());
  const agentFile = join(dirname(tempRoot('loopx-operator-agent-')), 'agent.json');
  const script = [
    ...Array.from({ length: deliveries }, (_, i) => ({
      tool_calls: [{ name: 'receiver.deliver', arguments: { message: `delivery ${i + 1}` } }],
    })),
    { text: 'done' },
  ];
  writeFileSync(
    agentFile,
    JSON.stringify({
      id: 'cluster.op',
      version: '1.0.0',
      model: { provider: 'scripted', model_id: 'scripted-v1' },
      turn_limit: 10,
      tool_plan: 'loopx.cluster.v1',
      script,
    }),
  );
  await submitClusterRun({ cluster: CLUSTER, schema }, loadAgentFile(agentFile), { runId });
  const workOf = async () =>
    (
      await db.query<{ state: string; held_code: string | null }>(
        'SELECT state, held_code FROM cluster_work WHERE run_id = $1',
        [runId],
      )
    )[0];
  return { schema, keys, node, db, workOf, flags: ['--cluster', CLUSTER, '--cluster-schema', schema] };
}

describePg('an operator settles a held cluster run with the run commands (--cluster)', () => {
  it('show, refusals that change nothing, resolve under its own epoch, then a daemon continues the run to completion', async () => {
    const { schema, keys, node, db, workOf, flags } = await clusterWithRun(
      `http://127.0.0.1:${await closedPort()}/deliveries`,
      'run_held',
      1,
    );
    await until('the run to be held on its unknown delivery', async () =>
      (await workOf())?.held_code === 'mutation_uncertain' ? true : undefined,
    );

    // The operator reads the run as a root's run reads.
    const shown = await loopxAsync(['run', 'show', 'run_held', ...flags, '--json'], env);
    expect(shown.status, shown.stderr).toBe(0);
    expectSchemaValid('run-show.schema.json', shown.json());
    const view = shown.json<{ status: string; waiting_for: { kind: string; call_ids: string[] } }>();
    expect(view).toMatchObject({ status: 'active', waiting_for: { kind: 'resolution' } });
    const [callId] = view.waiting_for.call_ids;
    const human = await loopxAsync(['run', 'show', 'run_held', ...flags], env);
    expect(human.stdout).toContain(
      `settle: loopx run resolve run_held <call-id> (--committed RESULT | --absent | --abandon) --cluster ${CLUSTER} --cluster-schema ${schema}`,
    );
    const eventsBefore = (await db.query('SELECT 1 FROM run_events WHERE run_id = $1', ['run_held'])).length;

    // Refusals: typed, nothing changed, and each next action works as printed.
    const wrongCall = await loopxAsync(
      ['run', 'resolve', 'run_held', 'run_held/t9/k9', '--absent', ...flags, '--authority-dir', keys, '--json'],
      env,
    );
    expect(wrongCall.status).toBe(3);
    expect(wrongCall.json()).toMatchObject({
      error: {
        code: 'call_not_found',
        next_action: `list uncertain calls: loopx run show run_held --cluster ${CLUSTER} --cluster-schema ${schema} --authority-dir ${rel(keys)}`,
      },
    });
    expect((await runNextAction(wrongCall.json())).status).toBe(0);
    const unknownRun = await loopxAsync(['run', 'show', 'run_nowhere', ...flags, '--json'], env);
    expect(unknownRun.status).toBe(3);
    expect(unknownRun.json()).toMatchObject({ error: { code: 'cluster_run_not_found' } });
    expect((await runNextAction(unknownRun.json())).status).toBe(0);
    const noKeys = await loopxAsync(
      ['run', 'resolve', 'run_held', callId!, '--absent', ...flags, '--authority-dir', join(keys, 'missing'), '--json'],
      env,
    );
    expect(noKeys.status).not.toBe(0);
    expect(noKeys.json()).toMatchObject({ error: { code: 'authority_missing' } });
    const schemaAlone = await loopxAsync(['run', 'show', 'run_held', '--cluster-schema', schema, '--json'], env);
    expect(schemaAlone.status).toBe(2);
    expect(schemaAlone.json()).toMatchObject({ error: { code: 'cluster_schema_without_cluster' } });
    expect((await db.query('SELECT 1 FROM run_events WHERE run_id = $1', ['run_held'])).length).toBe(eventsBefore);
    expect(await workOf()).toEqual({ state: 'held', held_code: 'mutation_uncertain' });

    // The operator settles it: the receiver never got it (it was down).
    const settled = await loopxAsync(
      ['run', 'resolve', 'run_held', callId!, '--absent', ...flags, '--authority-dir', keys, '--json'],
      env,
    );
    expect(settled.status, settled.stderr).toBe(0);
    expectSchemaValid('run-summary.schema.json', settled.json());
    expect(settled.json()).toMatchObject({ run_id: 'run_held', status: 'active', waiting_for: null });

    // A daemon continues it, under a later epoch than the operator's.
    await until('the run to finish', async () => ((await workOf())?.state === 'finished' ? true : undefined));
    const events = await loopxAsync(['run', 'events', 'run_held', ...flags, '--json'], env);
    expect(events.status, events.stderr).toBe(0);
    const lines = events.stdout
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { sequence: number; type: string; data: Record<string, unknown> });
    for (const l of lines) expectSchemaValid('run-event.schema.json', l);
    expect(lines.map((l) => l.sequence)).toEqual(lines.map((_, i) => i + 1));
    expect(lines.at(-1)!.type).toBe('Completed');
    const rows = await db.query<{ sequence: string; type: string; epoch: string; data: string }>(
      'SELECT sequence, type, epoch, data FROM run_events WHERE run_id = $1 ORDER BY sequence',
      ['run_held'],
    );
    const owners = new Map(
      (
        await db.query<{ epoch: string; owner_instance: string }>(
          'SELECT epoch, owner_instance FROM run_lease_history WHERE run_id = $1',
          ['run_held'],
        )
      ).map((r) => [Number(r.epoch), r.owner_instance]),
    );
    for (let i = 1; i < rows.length; i++)
      expect(Number(rows[i]!.epoch)).toBeGreaterThanOrEqual(Number(rows[i - 1]!.epoch));
    const byOperator = rows.find(
      (r) => r.type === 'ToolResulted' && (JSON.parse(r.data) as { resolution?: string }).resolution === 'absent',
    )!;
    expect(owners.get(Number(byOperator.epoch))).toMatch(/^op_[0-9a-f]{24}$/);
    const after = rows.filter((r) => Number(r.sequence) > Number(byOperator.sequence));
    expect(after.length).toBeGreaterThan(0);
    for (const r of after) {
      expect(Number(r.epoch)).toBeGreaterThan(Number(byOperator.epoch));
      expect(owners.get(Number(r.epoch))).toBe(node.instanceId);
    }
    // Nothing was sent again: the one call has one effect, settled absent by the operator.
    const effects = await db.query<{ outcome: string }>('SELECT outcome FROM effects');
    expect(effects.map((e) => e.outcome)).toEqual(['absent']);
    // A finished run is not cancelled: refused as in a root, its work still finished.
    const late = await loopxAsync(['run', 'cancel', 'run_held', ...flags, '--authority-dir', keys, '--json'], env);
    expect(late.status).toBe(3);
    expect(late.json()).toMatchObject({ error: { code: 'run_terminal' } });
    expect(await workOf()).toMatchObject({ state: 'finished' });
  }, 120_000);

  it('cancel of a run a daemon is driving: the daemon lets go at its next turn boundary, no daemon takes it again, and the operator cancels it under its own epoch', async () => {
    const sink = await startWebhookSink({ port: 0 });
    closers.push(() => sink.close());
    sink.failNext('hold_until_released');
    const { db, workOf, flags, keys, node } = await clusterWithRun(sink.deliveriesUrl, 'run_cancel', 3);
    // The latch: the daemon is mid-turn, its first delivery sent and unanswered.
    await until('the first delivery to be in flight', async () => (sink.held() === 1 ? true : undefined));
    const cancelling = loopxAsync(['run', 'cancel', 'run_cancel', ...flags, '--authority-dir', keys, '--json'], env);
    await until('the cancel to take the run from the daemons', async () =>
      (await workOf())?.held_code === 'cancel_requested' ? true : undefined,
    );
    await until('the suspend to be requested', async () =>
      (await db.query('SELECT 1 FROM run_suspend_requests WHERE run_id = $1', ['run_cancel'])).length > 0
        ? true
        : undefined,
    );
    sink.release();
    const cancelled = await cancelling;
    expect(cancelled.status, cancelled.stderr).toBe(0);
    expectSchemaValid('run-summary.schema.json', cancelled.json());
    expect(cancelled.json()).toMatchObject({ run_id: 'run_cancel', status: 'cancelled' });
    expect(await workOf()).toMatchObject({ state: 'finished' });

    const rows = await db.query<{ sequence: string; type: string; epoch: string }>(
      'SELECT sequence, type, epoch FROM run_events WHERE run_id = $1 ORDER BY sequence',
      ['run_cancel'],
    );
    const types = rows.map((r) => r.type);
    expect(rows.map((r) => Number(r.sequence))).toEqual(rows.map((_, i) => i + 1));
    // The daemon finished the turn it was in, suspended at the boundary, and never resumed it.
    expect(types.slice(-2)).toEqual(['Suspended', 'Cancelled']);
    expect(types).not.toContain('Resumed');
    expect(sink.deliveries().map((d) => (d.body as { message: string }).message)).toEqual(['delivery 1']);
    const owners = new Map(
      (
        await db.query<{ epoch: string; owner_instance: string }>(
          'SELECT epoch, owner_instance FROM run_lease_history WHERE run_id = $1',
          ['run_cancel'],
        )
      ).map((r) => [Number(r.epoch), r.owner_instance]),
    );
    const [suspended, cancel] = rows.slice(-2);
    expect(owners.get(Number(suspended!.epoch))).toBe(node.instanceId);
    expect(owners.get(Number(cancel!.epoch))).toMatch(/^op_[0-9a-f]{24}$/);
    expect(Number(cancel!.epoch)).toBeGreaterThan(Number(suspended!.epoch));
  }, 120_000);
});

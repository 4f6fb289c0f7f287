/**
 * The cluster tests' world (test/cluster/): real `loopx daemon --cluster` processes on one real
 * PostgreSQL schema — on network namespaces of their own when run as root — with the reference
 * receiver counting every delivery attempt, and the checks every scenario ends with: events
 * gapless with exactly one RunStarted, one owner per epoch, epochs never decreasing along the
 * sequence, and zero duplicate deliveries. A scenario may bring its own database (`cluster(n,
 * { server })`: a proxy in front of servers it fails over); the file's default is a server of its
 * own, restartable.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { cpSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { afterAll, afterEach, expect } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { openPostgres, type PgDatabase } from '../../src/store/index.js';
import { CLI, REPO, STATE_HOME, loopxAsync, tempRoot } from './cli.js';
import { makeHosts, privatePostgres, type Hosts, type PrivatePostgres } from './hosts.js';
import { expectSchemaValid } from './pg-restore.js';

export const CLUSTER = 'env:LOOPX_CLUSTER_URL';
export const LEASE_MS = 1500;

export const running: ChildProcessWithoutNullStreams[] = [];
const sinks: WebhookSink[] = [];
const pools: PgDatabase[] = [];
/** Each daemon's stderr (its one line per handoff, takeover and hold), printed when a scenario fails. */
const logs: Array<() => string> = [];
/** The scenario's cluster, whose status is printed when a scenario fails. */
let lastCluster: Cluster | undefined;
afterEach(async ({ task }) => {
  if (task.result?.state === 'fail') {
    for (const [i, log] of logs.entries()) console.error(`daemon ${i + 1} stderr:\n${log().slice(-4000)}`);
    const status = await lastCluster?.status().catch((e: unknown) => String(e));
    console.error(`cluster status: ${JSON.stringify(status)}`);
  }
  logs.splice(0);
  for (const c of running.splice(0)) {
    c.kill('SIGCONT');
    c.kill('SIGKILL');
  }
  for (const s of sinks.splice(0)) await s.close();
});
afterAll(async () => {
  for (const p of pools) await p.close();
});

/** Three hosts and a server of the file's own (restartable), made once for the file's scenarios. */
let hosts: Hosts | undefined;
let server: PrivatePostgres | undefined;
/** The file's three hosts (made once). */
export const theHosts = (): Hosts => (hosts ??= makeHosts(3));
async function theServer(): Promise<PrivatePostgres> {
  return (server ??= await privatePostgres(theHosts().servicesAddress));
}

/** The database a cluster is on: its URL as the test (loopback) and the hosts (`address`) reach it. */
export interface ClusterServer {
  url(address?: string): string;
  /** A fast restart: every connection is cut, the server comes back on the same port. */
  restart(): void;
}

/** A scenario's bound: generous, so that only a hang fails it (never a timing assertion). */
export const SCENARIO_MS = 240_000;

/** A generous bound for anything that waits on another process (never a timing assertion). */
export const BOUND_MS = 90_000;

export async function until<T>(what: string, probe: () => Promise<T | undefined | false>): Promise<T> {
  const deadline = Date.now() + BOUND_MS;
  for (;;) {
    // A probe's own connection may be cut (the restart scenario cuts them all): it asks again.
    let v: T | undefined | false;
    let failure: unknown;
    try {
      v = await probe();
    } catch (e) {
      failure = e;
    }
    if (v !== undefined && v !== false) return v;
    if (Date.now() > deadline) throw failure ?? new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export interface Daemon {
  readonly child: ChildProcessWithoutNullStreams;
  readonly instance: string;
  readonly output: () => string;
}

export interface Cluster {
  readonly schema: string;
  readonly db: PgDatabase;
  readonly sink: WebhookSink;
  readonly agentFile: string;
  readonly server: ClusterServer;
  /** A daemon on host `host` (0, 1, 2: another network namespace each, as root). */
  daemon(host: number, env?: Record<string, string>): Promise<Daemon>;
  submit(runId: string): Promise<void>;
  status(): Promise<StatusDoc>;
}

export interface StatusDoc {
  installation: { state: string; changed: string[]; restore_generation: number } | null;
  instances: Array<{ instance_id: string; state: string; live: boolean }>;
  runs: Array<{
    run_id: string;
    work: string;
    held_code: string | null;
    lifecycle: string | null;
    owner_instance: string | null;
  }>;
}

/** An initialised cluster schema, one key scope copied to every host, and a receiver every host reaches. */
export async function cluster(deliveries: number, options: { readonly server?: ClusterServer } = {}): Promise<Cluster> {
  const hosts = theHosts();
  const server = options.server ?? (await theServer());
  const schema = `c_${randomBytes(6).toString('hex')}`;
  const flags = ['--cluster', CLUSTER, '--cluster-schema', schema];
  const here = { LOOPX_CLUSTER_URL: server.url() };
  const init = await loopxAsync(['cluster', 'init', ...flags, '--json'], here);
  expect(init.status, init.stderr).toBe(0);
  expectSchemaValid('cluster-init.schema.json', init.json());
  const keys = tempRoot('loopx-cluster-keys-');
  expect((await loopxAsync(['authority', 'init', '--authority-dir', keys])).status).toBe(0);
  const sink = await startWebhookSink({ port: 0, ...(hosts.isolated ? { linkAddress: hosts.servicesAddress } : {}) });
  sinks.push(sink);
  const db = openPostgres({ url: server.url(), schema, max: 2 });
  pools.push(db);
  const agentFile = join(dirname(tempRoot('loopx-cluster-agent-')), 'agent.json');
  const script = [
    ...Array.from({ length: deliveries }, (_, i) => ({
      tool_calls: [{ name: 'receiver.deliver', arguments: { message: `delivery ${i + 1}` } }],
    })),
    { text: 'all delivered' },
  ];
  writeFileSync(
    agentFile,
    JSON.stringify({
      id: 'cluster.worker',
      version: '1.0.0',
      model: { provider: 'scripted', model_id: 'scripted-v1' },
      turn_limit: 40,
      tool_plan: 'loopx.cluster.v1',
      script,
    }),
  );
  let made = 0;
  return (lastCluster = {
    schema,
    db,
    sink,
    agentFile,
    server,
    async daemon(host, extraEnv = {}) {
      // Each daemon: its own root, and its own copy of the cluster's key scope (provisioned alike to every host).
      const n = ++made;
      const root = tempRoot(`loopx-cluster-d${n}-`);
      expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
      const hostKeys = tempRoot(`loopx-cluster-d${n}-keys-`);
      cpSync(keys, hostKeys, { recursive: true });
      const on = hosts.hosts[host]!;
      const args = [
        ...CLI,
        '--root',
        root,
        '--authority-dir',
        hostKeys,
        '--json',
        'daemon',
        ...flags,
        '--receiver',
        sink.deliveriesUrl,
        '--lease-ms',
        String(LEASE_MS),
      ];
      const [cmd, ...prefix] = on.prefix.length > 0 ? [...on.prefix, process.execPath] : [process.execPath];
      const env = {
        ...process.env,
        XDG_STATE_HOME: STATE_HOME,
        LOOPX_CLUSTER_URL: server.url(hosts.servicesAddress),
        ...extraEnv,
      };
      const child = spawn(cmd!, [...prefix, ...args], { cwd: REPO, env });
      running.push(child);
      let out = '';
      let err = '';
      child.stderr.on('data', (b: Buffer) => (err += b.toString('utf8')));
      const doc = await new Promise<{ cluster_instance: string }>((resolve, reject) => {
        child.stdout.on('data', (b: Buffer) => {
          out += b.toString('utf8');
          try {
            resolve(JSON.parse(out));
          } catch {
            // not complete yet
          }
        });
        child.on('exit', (code) => reject(new Error(`daemon exited ${code}: ${err}`)));
      });
      expectSchemaValid('daemon-start.schema.json', doc);
      logs.push(() => err);
      return { child, instance: doc.cluster_instance, output: () => err };
    },
    async submit(runId) {
      const r = await loopxAsync(
        ['cluster', 'submit', ...flags, '--agent', agentFile, '--run-id', runId, '--json'],
        here,
      );
      expect(r.status, r.stderr).toBe(0);
      expectSchemaValid('cluster-submit.schema.json', r.json());
    },
    async status() {
      const r = await loopxAsync(['cluster', 'status', ...flags, '--json'], here);
      expect(r.status, r.stderr).toBe(0);
      expectSchemaValid('cluster-status.schema.json', r.json());
      return r.json<StatusDoc>();
    },
  });
}

export const drain = (c: Cluster, instance: string) =>
  loopxAsync(['cluster', 'drain', instance, '--cluster', CLUSTER, '--cluster-schema', c.schema, '--json'], {
    LOOPX_CLUSTER_URL: c.server.url(),
  });

/** A run as `loopx cluster status` reports it, read straight from the database (the waits poll this; one test reads the command). */
export const runOf = async (c: Cluster, runId: string): Promise<StatusDoc['runs'][number] | undefined> =>
  (
    await c.db.query<StatusDoc['runs'][number]>(
      `SELECT w.run_id, w.state AS work, w.held_code, r.lifecycle,
              (SELECT l.owner_instance FROM run_leases l WHERE l.run_id = w.run_id AND NOT l.released AND l.lease_expires_at > now()) AS owner_instance
         FROM cluster_work w LEFT JOIN runs r USING (run_id) WHERE w.run_id = $1`,
      [runId],
    )
  )[0];

/** The checks every scenario ends with (see the header). */
export async function provesOneOwnerAtATime(
  c: Cluster,
  runId: string,
): Promise<{ events: Array<{ sequence: number; type: string; epoch: number }> }> {
  const events = (
    await c.db.query<{ sequence: string; type: string; epoch: string }>(
      'SELECT sequence, type, epoch FROM run_events WHERE run_id = $1 ORDER BY sequence',
      [runId],
    )
  ).map((e) => ({ sequence: Number(e.sequence), type: e.type, epoch: Number(e.epoch) }));
  expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1));
  expect(events.filter((e) => e.type === 'RunStarted')).toHaveLength(1);
  // No write under a stale epoch: along the sequence the writing epoch never goes back.
  for (let i = 1; i < events.length; i++) expect(events[i]!.epoch).toBeGreaterThanOrEqual(events[i - 1]!.epoch);
  // Every writing epoch is one the database granted, to exactly one owner.
  const granted = await c.db.query<{ epoch: string; owners: string }>(
    'SELECT epoch, count(DISTINCT owner_instance) AS owners FROM run_lease_history WHERE run_id = $1 GROUP BY epoch',
    [runId],
  );
  const byEpoch = new Map(granted.map((g) => [Number(g.epoch), Number(g.owners)]));
  for (const e of new Set(events.map((x) => x.epoch))) expect(byEpoch.get(e)).toBe(1);
  // The receiver never got a delivery twice.
  const { counts, attempts } = c.sink.attempts();
  expect(counts.duplicate).toBe(0);
  expect(new Set(attempts.map((a) => a.operation_id)).size).toBe(attempts.length);
  return { events };
}

export const finished = (c: Cluster, runId: string) =>
  until(`run ${runId} to finish`, async () => {
    const r = await runOf(c, runId);
    return r?.work === 'finished' ? r : undefined;
  });

export const ownerNow = (c: Cluster, runId: string) =>
  until(`run ${runId} to have an owner`, async () => (await runOf(c, runId))?.owner_instance ?? undefined);

export const messages = (c: Cluster) => c.sink.deliveries().map((d) => (d.body as { message: string }).message);

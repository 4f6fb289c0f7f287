/**
 * A cluster of real `loopx daemon --cluster` processes (the built CLI) on one PostgreSQL schema
 * (127.0.0.1:5432/test as user postgres; LOOPX_BENCH_PG_URL names another), with an in-process
 * receiver (the dev webhook sink), in a fresh schema dropped afterwards:
 *   - planned handoff latency: a run's first delivery is held at the receiver while its daemon is
 *     asked to drain; from the moment the delivery is released (the turn can end) to the moment
 *     another daemon's `Resumed` is committed. Beside it, the same-run floor: the PostgreSQL round
 *     trips a handoff needs at least (the suspending commit, the lease release, the taking of the
 *     next epoch, the resuming commit), each timed as one statement or transaction of that shape.
 *   - crash takeover time: the owner SIGKILLed mid-turn; from the kill to the survivor's first
 *     event of the run. Its floor is the lease length (stated): a dead owner's lease must lapse.
 *   - throughput: 24 runs (two deliveries each) through 1 daemon and through 2, as a ratio, on
 *     this machine (both daemons share its cores with the database and the receiver).
 */
import { spawn, spawnSync, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync, cpSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { startWebhookSink, type WebhookSink } from '../src/dev/index.js';
import { loadAgentFile, submitClusterRun } from '../src/runtime/index.js';
import { openPostgres, type PgDatabase } from '../src/store/index.js';
import type { BenchFigure } from './harness.js';

const URL = process.env.LOOPX_BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const BIN = resolve(import.meta.dirname, '../../bin/loopx.js');
const LEASE_MS = 2000;
const median = (xs: readonly number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

interface World {
  readonly schema: string;
  readonly db: PgDatabase;
  readonly sink: WebhookSink;
  readonly dir: string;
  readonly keys: string;
  readonly agent: string;
  readonly env: NodeJS.ProcessEnv;
  readonly daemons: ChildProcessWithoutNullStreams[];
}

const cli = (w: World, args: readonly string[]) => {
  const r = spawnSync(process.execPath, [BIN, ...args], { env: w.env, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`loopx ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
};

async function world(deliveries: number): Promise<World> {
  const dir = mkdtempSync(join(tmpdir(), 'loopx-bench-cluster-'));
  const schema = `bc_${randomBytes(5).toString('hex')}`;
  const env = { ...process.env, XDG_STATE_HOME: join(dir, 'state'), LOOPX_BENCH_CLUSTER_URL: URL };
  const sink = await startWebhookSink({ port: 0 });
  const agent = join(dir, 'agent.json');
  const script = [
    ...Array.from({ length: deliveries }, (_, i) => ({
      tool_calls: [{ name: 'receiver.deliver', arguments: { message: `d${i}` } }],
    })),
    { text: 'done' },
  ];
  writeFileSync(
    agent,
    JSON.stringify({
      id: 'bench.worker',
      version: '1.0.0',
      model: { provider: 'scripted', model_id: 'scripted-v1' },
      turn_limit: 20,
      tool_plan: 'loopx.cluster.v1',
      script,
    }),
  );
  const w: World = {
    schema,
    db: openPostgres({ url: URL, schema, max: 2 }),
    sink,
    dir,
    keys: join(dir, 'keys'),
    agent,
    env,
    daemons: [],
  };
  cli(w, ['cluster', 'init', '--cluster', 'env:LOOPX_BENCH_CLUSTER_URL', '--cluster-schema', schema]);
  cli(w, ['authority', 'init', '--authority-dir', w.keys]);
  return w;
}

async function daemon(w: World): Promise<{ child: ChildProcessWithoutNullStreams; instance: string }> {
  const n = w.daemons.length + 1;
  const root = join(w.dir, `root${n}`);
  cli(w, ['init', '--root', root]);
  const keys = join(w.dir, `keys${n}`);
  cpSync(w.keys, keys, { recursive: true });
  const args = [
    BIN,
    '--root',
    root,
    '--authority-dir',
    keys,
    '--json',
    'daemon',
    '--cluster',
    'env:LOOPX_BENCH_CLUSTER_URL',
    '--cluster-schema',
    w.schema,
  ];
  const child = spawn(process.execPath, [...args, '--receiver', w.sink.deliveriesUrl, '--lease-ms', String(LEASE_MS)], {
    env: w.env,
  });
  w.daemons.push(child);
  let out = '';
  const doc = await new Promise<{ cluster_instance: string }>((ok, fail) => {
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString('utf8');
      try {
        ok(JSON.parse(out));
      } catch {
        // not complete yet
      }
    });
    child.on('exit', (code) => fail(new Error(`daemon exited ${code}`)));
  });
  return { child, instance: doc.cluster_instance };
}

async function close(w: World): Promise<void> {
  for (const d of w.daemons) d.kill('SIGKILL');
  await w.db.query(`DROP SCHEMA IF EXISTS ${w.schema} CASCADE`).catch(() => undefined);
  await w.db.close();
  await w.sink.close();
  rmSync(w.dir, { recursive: true, force: true });
}

const submit = (w: World, runId: string) =>
  cli(w, [
    'cluster',
    'submit',
    '--cluster',
    'env:LOOPX_BENCH_CLUSTER_URL',
    '--cluster-schema',
    w.schema,
    '--agent',
    w.agent,
    '--run-id',
    runId,
  ]);

async function until<T>(probe: () => Promise<T | undefined>, pauseMs = 2): Promise<T> {
  const deadline = Date.now() + 120_000;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error('bench: timed out');
    await new Promise((r) => setTimeout(r, pauseMs));
  }
}

const ownerOf = async (w: World, runId: string) =>
  (
    await w.db.query<{ owner_instance: string }>(
      'SELECT owner_instance FROM run_leases WHERE run_id = $1 AND NOT released AND lease_expires_at > now()',
      [runId],
    )
  )[0]?.owner_instance;
const hasEvent = async (w: World, runId: string, type: string) =>
  (await w.db.query('SELECT 1 FROM run_events WHERE run_id = $1 AND type = $2', [runId, type])).length > 0 || undefined;

/** The round trips a handoff needs at least, each timed as one statement or transaction of that shape on the same server. */
async function handoffFloor(w: World): Promise<number> {
  // One connection: the temporary tables live in the session that made them.
  const db = openPostgres({ url: URL, schema: w.schema, max: 1 });
  try {
    return await floorOn(db);
  } finally {
    await db.close();
  }
}

async function floorOn(db: PgDatabase): Promise<number> {
  const run = `floor_${randomBytes(4).toString('hex')}`;
  await db.query(
    `CREATE TEMP TABLE IF NOT EXISTS f_leases (run_id text PRIMARY KEY, epoch bigint, owner text, exp timestamptz, released bool)`,
  );
  await db.query(
    `CREATE TEMP TABLE IF NOT EXISTS f_events (run_id text, seq bigint, data text, PRIMARY KEY (run_id, seq))`,
  );
  const samples: number[] = [];
  for (let i = 0; i < 15; i++) {
    const t0 = performance.now();
    const commit = (seq: number) =>
      db.transaction(async (q) => {
        await q('SELECT 1 FROM f_leases WHERE run_id = $1 FOR SHARE', [run]);
        await q('INSERT INTO f_events VALUES ($1, $2, $3)', [run, seq, '{}']);
      });
    await commit(i * 2 + 1); // the suspending commit
    await db.query('UPDATE f_leases SET released = true WHERE run_id = $1', [run]); // the release
    await db.query(
      `INSERT INTO f_leases AS l VALUES ($1, 1, 'x', now() + interval '2 seconds', false) ON CONFLICT (run_id) DO UPDATE SET epoch = l.epoch + 1, released = false WHERE l.released OR l.exp <= now()`,
      [run],
    ); // the next epoch
    await commit(i * 2 + 2); // the resuming commit
    samples.push((performance.now() - t0) / 1000);
  }
  return median(samples);
}

async function plannedHandoff(): Promise<BenchFigure> {
  const w = await world(2);
  try {
    await daemon(w);
    await daemon(w);
    const latencies: number[] = [];
    for (let i = 0; i < 5; i++) {
      const runId = `handoff_${i}`;
      w.sink.failNext('hold_until_released');
      submit(w, runId);
      await until(async () => (w.sink.held() === 1 ? true : undefined));
      const owner = await until(() => ownerOf(w, runId));
      const draining = spawn(
        process.execPath,
        [
          BIN,
          '--json',
          'cluster',
          'drain',
          owner,
          '--cluster',
          'env:LOOPX_BENCH_CLUSTER_URL',
          '--cluster-schema',
          w.schema,
        ],
        {
          env: w.env,
        },
      );
      await until(async () =>
        (await w.db.query('SELECT 1 FROM run_suspend_requests WHERE run_id = $1', [runId])).length > 0
          ? true
          : undefined,
      );
      const t0 = performance.now();
      w.sink.release();
      await until(() => hasEvent(w, runId, 'Resumed'), 1);
      latencies.push((performance.now() - t0) / 1000);
      await new Promise((r) => draining.once('exit', r));
      // The drained daemon is done: one more, so that there are always two to hand off between.
      await daemon(w);
    }
    const floor = await handoffFloor(w);
    return {
      name: 'planned handoff: turn end on the drained daemon → Resumed committed by another (median of 5)',
      seconds: median(latencies),
      baselineName: 'the handoff’s PostgreSQL round trips (suspend commit, release, next epoch, resume commit)',
      baselineSeconds: floor,
      target: 'printed beside its floor (no target set)',
      ratioKind: 'cost',
      extra: `includes the suspending daemon finishing its turn and the NOTIFY wake-up of the other; lease ${LEASE_MS} ms`,
    };
  } finally {
    await close(w);
  }
}

async function crashTakeover(): Promise<BenchFigure> {
  const w = await world(2);
  try {
    await daemon(w);
    await daemon(w);
    const times: number[] = [];
    for (let i = 0; i < 3; i++) {
      const runId = `crash_${i}`;
      w.sink.failNext('hold_until_released');
      submit(w, runId);
      await until(async () => (w.sink.held() === 1 ? true : undefined));
      const owner = await until(() => ownerOf(w, runId));
      const [{ n }] = (await w.db.query<{ n: string }>('SELECT count(*) AS n FROM run_events WHERE run_id = $1', [
        runId,
      ])) as [{ n: string }];
      // Kill the owner: found by the instance it announced.
      const byInstance = await w.db.query<{ pid: number }>('SELECT pid FROM cluster_instances WHERE instance_id = $1', [
        owner,
      ]);
      const t0 = performance.now();
      process.kill(byInstance[0]!.pid, 'SIGKILL');
      w.sink.release();
      await until(
        async () =>
          Number(
            (await w.db.query<{ n: string }>('SELECT count(*) AS n FROM run_events WHERE run_id = $1', [runId]))[0]!.n,
          ) > Number(n)
            ? true
            : undefined,
        5,
      );
      times.push((performance.now() - t0) / 1000);
      await daemon(w);
    }
    return {
      name: 'crash takeover: owner SIGKILLed mid-turn → the survivor’s first event of the run (median of 3)',
      seconds: median(times),
      baselineName: `the lease length (${LEASE_MS} ms, renewed every third of it): a dead owner's lease must lapse`,
      baselineSeconds: LEASE_MS / 1000,
      target: 'printed beside its floor (no target set)',
      ratioKind: 'cost',
      extra: 'includes the survivor’s poll (1 s) and the reconciliation of the in-flight delivery',
    };
  } finally {
    await close(w);
  }
}

async function throughput(daemons: number, runs: number): Promise<number> {
  const w = await world(2);
  try {
    for (let i = 0; i < daemons; i++) await daemon(w);
    const ids = Array.from({ length: runs }, (_, i) => `tp_${i}`);
    const agent = loadAgentFile(w.agent);
    // Submitted by the library (one short transaction each, not a process start), the clock running.
    const t0 = performance.now();
    for (const id of ids)
      await submitClusterRun({ cluster: 'env:LOOPX_BENCH_CLUSTER_URL', schema: w.schema }, agent, { runId: id });
    await until(async () => {
      const [r] = await w.db.query<{ n: string }>(`SELECT count(*) AS n FROM cluster_work WHERE state = 'finished'`);
      return Number(r!.n) === runs ? true : undefined;
    }, 10);
    return (performance.now() - t0) / 1000;
  } finally {
    await close(w);
  }
}

/** One round trip to the server (`SELECT 1`), median of 200, on a pool already connected. */
async function roundTrip(): Promise<number> {
  const db = openPostgres({ url: URL, schema: 'public', max: 1 });
  try {
    await db.query('SELECT 1');
    const xs: number[] = [];
    for (let i = 0; i < 200; i++) {
      const t0 = performance.now();
      await db.query('SELECT 1');
      xs.push((performance.now() - t0) / 1000);
    }
    return median(xs);
  } finally {
    await db.close();
  }
}

async function runThroughput(): Promise<BenchFigure> {
  const runs = 24;
  const rtt = await roundTrip();
  const one: number[] = [];
  const two: number[] = [];
  for (let i = 0; i < 2; i++) {
    one.push(await throughput(1, runs));
    two.push(await throughput(2, runs));
  }
  return {
    name: `throughput: ${runs} runs (2 deliveries each) through 2 daemons`,
    seconds: median(two) / runs,
    baselineName: 'the same through 1 daemon',
    baselineSeconds: median(one) / runs,
    target: 'printed (no target set); ratio = 1-daemon time / 2-daemon time',
    ratioKind: 'speed',
    extra: `1 daemon ${(runs / median(one)).toFixed(1)} runs/s, 2 daemons ${(runs / median(two)).toFixed(1)} runs/s; one PostgreSQL round trip ${(rtt * 1e3).toFixed(3)} ms (a run is ${Math.round(median(one) / runs / rtt)} round trips' time through 1 daemon)`,
  };
}

export async function run(): Promise<BenchFigure[]> {
  process.env.LOOPX_BENCH_CLUSTER_URL = URL;
  return [await plannedHandoff(), await crashTakeover(), await runThroughput()];
}

/**
 * A cluster of real `loopx daemon --cluster` processes on one real PostgreSQL schema, with the
 * reference receiver (the dev webhook sink) counting every delivery attempt. Each scenario ends with
 * the same checks, read from the database and the receiver: events gapless with exactly one
 * RunStarted, one owner per epoch, no event written under an epoch after a later one had written
 * (epochs never decrease along the sequence), and zero duplicate deliveries.
 *
 * The receiver holds a delivery on request (`hold_until_released`): the latch that puts a driver
 * exactly mid-turn, with its mutating call dispatched and unanswered, with no sleeps.
 */
import { randomBytes } from 'node:crypto';
import { expect, it } from 'vitest';
import { loadAgentFile, submitClusterRun } from '../../src/runtime/index.js';
import {
  CLUSTER,
  SCENARIO_MS,
  cluster,
  drain,
  finished,
  messages,
  ownerNow,
  provesOneOwnerAtATime,
  running,
  until,
  type Daemon,
} from '../support/cluster.js';
import { loopxAsync } from '../support/cli.js';
import { describePg } from '../support/pg.js';
import { expectSchemaValid } from '../support/pg-restore.js';

describePg(
  'a cluster of daemons on one PostgreSQL (real processes; as root, each on a network namespace of its own)',
  () => {
    it.each([2, 3])(
      'planned handoff with %i daemons: each drained owner suspends the run at a turn boundary; the next resumes it at last_sequence + 1 under a new epoch',
      async (n) => {
        const c = await cluster(n + 1);
        const daemons: Daemon[] = [];
        for (let h = 0; h < n; h++) daemons.push(await c.daemon(h));
        const handedFrom: string[] = [];
        c.sink.failNext('hold_until_released');
        await c.submit('run_drain');
        for (let handoff = 1; handoff < n; handoff++) {
          await until(`delivery ${handoff} to be in flight`, async () => c.sink.held() === 1);
          const owner = await ownerNow(c, 'run_drain');
          expect(handedFrom).not.toContain(owner);
          handedFrom.push(owner);
          const drained = drain(c, owner);
          // The drained daemon has asked its run to suspend at the next turn boundary (the request is a row).
          await until(
            'the daemon to ask its run to suspend',
            async () =>
              (await c.db.query('SELECT 1 FROM run_suspend_requests WHERE run_id = $1', ['run_drain'])).length === 1,
          );
          if (handoff + 1 < n) c.sink.failNext('hold_until_released');
          c.sink.release();
          const result = await drained;
          expect(result.status, result.stderr).toBe(0);
          expect(result.json()).toMatchObject({ instance_id: owner, state: 'drained' });
          expectSchemaValid('cluster-drain.schema.json', result.json());
        }
        expect((await finished(c, 'run_drain')).lifecycle).toBe('completed');
        // The operator's view: every drained daemon says so, the last one is still active, the run is finished.
        const status = await c.status();
        expect(status.runs).toEqual([
          expect.objectContaining({
            run_id: 'run_drain',
            work: 'finished',
            lifecycle: 'completed',
            owner_instance: null,
          }),
        ]);
        for (const owner of handedFrom)
          expect(status.instances.find((i) => i.instance_id === owner)).toMatchObject({ state: 'drained', live: true });
        expect(status.instances.filter((i) => i.state === 'active')).toHaveLength(1);
        const { events } = await provesOneOwnerAtATime(c, 'run_drain');
        const resumed = events.filter((e) => e.type === 'Resumed');
        expect(resumed).toHaveLength(n - 1);
        for (const r of resumed) expect(events[r.sequence - 2]!.type).toBe('Suspended');
        // The owners, epoch by epoch: each drained daemon wrote before its handoff, and never after it.
        const owners = new Map(
          (
            await c.db.query<{ epoch: string; owner_instance: string }>(
              'SELECT epoch, owner_instance FROM run_lease_history WHERE run_id = $1',
              ['run_drain'],
            )
          ).map((o) => [Number(o.epoch), o.owner_instance]),
        );
        const writers = [...new Set(events.map((e) => owners.get(e.epoch)!))];
        expect(writers.slice(0, n - 1)).toEqual(handedFrom);
        expect(writers).toHaveLength(n);
        expect(messages(c)).toEqual(Array.from({ length: n + 1 }, (_, i) => `delivery ${i + 1}`));
      },
      SCENARIO_MS,
    );

    it(
      'crash handoff: SIGKILL of the owner mid-turn; after its lease lapses another daemon continues, the in-flight delivery reconciled under its id, never sent again',
      async () => {
        const c = await cluster(2);
        const daemons = [await c.daemon(0), await c.daemon(1)];
        c.sink.failNext('hold_until_released');
        await c.submit('run_crash');
        await until('the first delivery to be in flight', async () => c.sink.held() === 1);
        const owner = await ownerNow(c, 'run_crash');
        const dead = daemons.find((d) => d.instance === owner)!;
        const survivor = daemons.find((d) => d.instance !== owner)!;
        dead.child.kill('SIGKILL');
        await new Promise((r) => dead.child.once('exit', r));
        // The receiver stores the delivery its dead sender never hears about.
        c.sink.release();

        expect((await finished(c, 'run_crash')).lifecycle).toBe('completed');
        const { events } = await provesOneOwnerAtATime(c, 'run_crash');
        expect(c.sink.attempts().attempts).toHaveLength(2);
        expect(messages(c)).toEqual(['delivery 1', 'delivery 2']);
        // The first call was held as unknown, then took the outcome the effect owner reconciled — not a second send.
        const results = await c.db.query<{ data: string }>(
          `SELECT data FROM run_events WHERE run_id = $1 AND type = 'ToolResulted' ORDER BY sequence`,
          ['run_crash'],
        );
        const settled = results.map((r) => JSON.parse(r.data) as { status: string; settled_by?: string });
        expect(settled.some((s) => s.status === 'mutation_uncertain')).toBe(true);
        expect(settled.some((s) => s.settled_by === 'effect_owner' && s.status === 'ok')).toBe(true);
        const survivorEpochs = (
          await c.db.query<{ epoch: string }>(
            'SELECT epoch FROM run_lease_history WHERE run_id = $1 AND owner_instance = $2',
            ['run_crash', survivor.instance],
          )
        ).map((r) => Number(r.epoch));
        expect(events.at(-1)!.epoch).toBe(Math.max(...survivorEpochs));
      },
      SCENARIO_MS,
    );

    it(
      'a paused owner (SIGSTOP past its lease) is taken over; resumed with SIGCONT, its next write is refused by the database and it stops driving the run',
      async () => {
        const c = await cluster(2);
        const daemons = [await c.daemon(0), await c.daemon(1)];
        c.sink.failNext('hold_until_released');
        await c.submit('run_paused');
        await until('the first delivery to be in flight', async () => c.sink.held() === 1);
        const owner = await ownerNow(c, 'run_paused');
        const paused = daemons.find((d) => d.instance === owner)!;
        paused.child.kill('SIGSTOP');
        c.sink.release();
        expect((await finished(c, 'run_paused')).lifecycle).toBe('completed');
        const before = await provesOneOwnerAtATime(c, 'run_paused');

        paused.child.kill('SIGCONT');
        // The woken owner gets its delivery's answer and tries to record it: refused in the database.
        await until(
          'the woken daemon to stop driving the run',
          async () => /taken over by another daemon/.test(paused.output()) || undefined,
        );
        const after = await provesOneOwnerAtATime(c, 'run_paused');
        expect(after.events).toEqual(before.events);
        expect(messages(c)).toEqual(['delivery 1', 'delivery 2']);
      },
      SCENARIO_MS,
    );

    it(
      'an owner paused between its durable intent and its send is fenced at the receiver: the takeover raises the fence first, so the late send is refused, never stored',
      async () => {
        // One delivery only: nothing but the takeover's own fence raise stands between the late send and the receiver.
        const c = await cluster(1);
        // The first daemon stops itself right after the run's intent is durable, before the delivery is sent.
        const stale = await c.daemon(0, { LOOPX_TEST_FAULT: 'stop:engine.mutation.after-intent' });
        await c.submit('run_fenced');
        await until(
          'the owner to pause after its intent',
          async () =>
            (await c.db.query(`SELECT 1 FROM run_events WHERE run_id = $1 AND type = 'ToolCalled'`, ['run_fenced']))
              .length >= 1,
        );
        await c.daemon(1);
        expect((await finished(c, 'run_fenced')).lifecycle).toBe('completed');
        const before = await provesOneOwnerAtATime(c, 'run_fenced');
        // The call was reconciled as never delivered (the receiver had not seen it), and the run went on.
        expect(messages(c)).toEqual([]);

        stale.child.kill('SIGCONT');
        await until(
          'the late send to reach the receiver',
          async () => c.sink.attempts().counts.refused_stale_fence === 1,
        );
        await until(
          'the woken daemon to stop driving the run',
          async () => /taken over by another daemon/.test(stale.output()) || undefined,
        );
        expect(messages(c)).toEqual([]);
        const after = await provesOneOwnerAtATime(c, 'run_fenced');
        expect(after.events).toEqual(before.events);
      },
      SCENARIO_MS,
    );

    it(
      'refusals: a run id used twice, an unknown daemon, a schema never initialised, a URL reference that holds nothing — each typed, with the command that fixes it',
      async () => {
        const c = await cluster(1);
        const here = { LOOPX_CLUSTER_URL: c.server.url() };
        const flags = ['--cluster', CLUSTER, '--cluster-schema', c.schema, '--json'];
        await c.submit('run_once');
        const again = await loopxAsync(
          ['cluster', 'submit', ...flags, '--agent', c.agentFile, '--run-id', 'run_once'],
          here,
        );
        expect(again.status).toBe(4);
        expect(again.json()).toMatchObject({ error: { code: 'cluster_run_exists' } });
        const unknown = await loopxAsync(['cluster', 'drain', 'inst_000000000000000000000000', ...flags], here);
        expect(unknown.status).toBe(3);
        expect(unknown.json()).toMatchObject({ error: { code: 'cluster_instance_not_found' } });
        const fresh = `c_${randomBytes(6).toString('hex')}`;
        const bare = await loopxAsync(
          ['cluster', 'status', '--cluster', CLUSTER, '--cluster-schema', fresh, '--json'],
          here,
        );
        expect(bare.status).toBe(3);
        expect(bare.json()).toMatchObject({
          error: {
            code: 'cluster_not_initialised',
            next_action: `initialise it: loopx cluster init --cluster ${CLUSTER} --cluster-schema ${fresh}`,
          },
        });
        // The next action works as printed, and then the status reads.
        const [, ...fix] = (bare.json() as { error: { next_action: string } }).error.next_action
          .split(': loopx ')[1]!
          .split(' ');
        expect((await loopxAsync(['cluster', ...fix], here)).status).toBe(0);
        expect(
          (await loopxAsync(['cluster', 'status', '--cluster', CLUSTER, '--cluster-schema', fresh, '--json'], here))
            .status,
        ).toBe(0);
        const unset = await loopxAsync(['cluster', 'status', '--cluster', 'env:LOOPX_TEST_NOT_SET', '--json']);
        expect(unset.status).toBe(3);
        expect(unset.json()).toMatchObject({ error: { code: 'database_url_missing' } });
        expect(unset.stdout + unset.stderr).not.toContain(c.server.url());
      },
      SCENARIO_MS,
    );

    it(
      'the database cuts every connection of the daemons (pg_terminate_backend) twice mid-run: no run is double-owned and nothing committed is lost',
      async () => {
        const c = await cluster(3);
        await c.daemon(0);
        await c.daemon(1);
        c.sink.failNext('hold_until_released');
        await c.submit('run_cut');
        for (let cut = 1; cut <= 2; cut++) {
          await until(`delivery ${cut} to be in flight`, async () => c.sink.held() === 1);
          const before = await c.db.query<{ n: string }>('SELECT count(*) AS n FROM run_events WHERE run_id = $1', [
            'run_cut',
          ]);
          const cutOff = await c.db.query<{ n: string }>(
            `SELECT count(pg_terminate_backend(pid)) AS n FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'`,
          );
          expect(Number(cutOff[0]!.n)).toBeGreaterThan(0);
          if (cut === 1) c.sink.failNext('hold_until_released');
          c.sink.release();
          // What was committed before the cut is still there.
          const kept = await c.db.query<{ n: string }>('SELECT count(*) AS n FROM run_events WHERE run_id = $1', [
            'run_cut',
          ]);
          expect(Number(kept[0]!.n)).toBeGreaterThanOrEqual(Number(before[0]!.n));
        }
        expect((await finished(c, 'run_cut')).lifecycle).toBe('completed');
        await provesOneOwnerAtATime(c, 'run_cut');
        expect(messages(c)).toEqual(['delivery 1', 'delivery 2', 'delivery 3']);
      },
      SCENARIO_MS,
    );

    it(
      'a PostgreSQL restart mid-run: the daemons reconnect, no run is double-owned, nothing committed is lost, nothing is sent twice',
      async () => {
        const c = await cluster(2);
        await c.daemon(0);
        await c.daemon(1);
        c.sink.failNext('hold_until_released');
        await c.submit('run_restart');
        await until('the first delivery to be in flight', async () => c.sink.held() === 1);
        const before = Number(
          (
            await c.db.query<{ n: string }>('SELECT count(*) AS n FROM run_events WHERE run_id = $1', ['run_restart'])
          )[0]!.n,
        );
        c.server.restart();
        c.sink.release();
        expect((await finished(c, 'run_restart')).lifecycle).toBe('completed');
        const { events } = await provesOneOwnerAtATime(c, 'run_restart');
        expect(events.length).toBeGreaterThan(before);
        expect(messages(c)).toEqual(['delivery 1', 'delivery 2']);
      },
      SCENARIO_MS,
    );

    it(
      'a bounded load: 12 runs through 1, 2 and 3 daemons each complete exactly once, with every delivery made once',
      async () => {
        for (const n of [1, 2, 3]) {
          const c = await cluster(2);
          process.env.LOOPX_CLUSTER_URL = c.server.url();
          for (let h = 0; h < n; h++) await c.daemon(h);
          const ids = Array.from({ length: 12 }, (_, i) => `run_load_${n}_${i}`);
          // Submitted by the library (the command is what every other scenario uses): the load, not 12 process starts.
          const agent = loadAgentFile(c.agentFile);
          for (const id of ids) await submitClusterRun({ cluster: CLUSTER, schema: c.schema }, agent, { runId: id });
          for (const id of ids) expect((await finished(c, id)).lifecycle).toBe('completed');
          for (const id of ids) await provesOneOwnerAtATime(c, id);
          const started = await c.db.query<{ n: string }>(
            `SELECT count(*) AS n FROM run_events WHERE type = 'RunStarted'`,
          );
          expect(Number(started[0]!.n)).toBe(12);
          expect(c.sink.deliveries()).toHaveLength(24);
          for (const d of running.splice(0)) d.kill('SIGKILL');
        }
        delete process.env.LOOPX_CLUSTER_URL;
      },
      SCENARIO_MS,
    );
  },
);

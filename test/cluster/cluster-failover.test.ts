/**
 * A cluster on a promoted server: two daemons share one cluster schema on a primary with a
 * streaming standby, both reached through one service address (what a virtual IP is to an
 * operator). Mid-run — a delivery dispatched and held unanswered at the receiver — the primary dies,
 * the standby is promoted and the address moves to it. The daemons' writes are refused there (the
 * server is not the one the schema was recorded on) without holding the run, until the operator
 * rotates the cluster schema (`loopx cluster rotate`, previewed, confirmed by digest): its leases are
 * released, the daemons are admitted again without a restart, and the run is taken up under an
 * epoch past every epoch the old timeline could have granted, its in-flight delivery reconciled
 * under its id. It finishes: one owner per epoch, epochs never going back, nothing stranded,
 * nothing delivered twice.
 */
import { describe, expect, it } from 'vitest';
import type { ClusterRotationPlan } from '../../src/runtime/index.js';
import { loopxAsync } from '../support/cli.js';
import {
  CLUSTER,
  SCENARIO_MS,
  cluster,
  finished,
  messages,
  provesOneOwnerAtATime,
  runOf,
  theHosts,
  until,
} from '../support/cluster.js';
import { describePg } from '../support/pg.js';
import { expectSchemaValid } from '../support/pg-restore.js';
import { PgServer, ServiceAddress, canRunServers } from '../support/pg-servers.js';

// Skipped only where no PostgreSQL server binaries (or no `postgres` user) exist; under CI=true that fails instead.
if (process.env.CI === 'true' && !canRunServers())
  throw new Error('CI=true but this machine cannot start PostgreSQL servers of its own');

/** The first epoch a lease taken on timeline 2 may have. */
const TIMELINE_2 = 2 ** 32 + 1;

(canRunServers() ? describePg : describe.skip)('a cluster on a promoted PostgreSQL server', () => {
  it(
    'two daemons survive a failover: the run is taken up under a new timeline’s epoch and finishes with nothing sent twice',
    async () => {
      const primary = await PgServer.fresh();
      const standby = await PgServer.fromBackup(primary.baseBackup({ standby: true }));
      const vip = await ServiceAddress.start(primary, theHosts().servicesAddress);
      const c = await cluster(3, {
        server: {
          url: (address) => vip.url(address),
          restart: () => {
            throw new Error('this cluster fails over; it is not restarted');
          },
        },
      });
      await c.daemon(0);
      await c.daemon(1);
      c.sink.failNext('hold_until_released');
      await c.submit('run_failover');
      await until('the first delivery to be in flight', async () => c.sink.held() === 1);
      const [before] = await c.db.query<{ epoch: string }>('SELECT epoch FROM run_leases WHERE run_id = $1', [
        'run_failover',
      ]);
      expect(Number(before!.epoch)).toBeLessThan(TIMELINE_2);
      // Everything the owner committed (the delivery's dispatch) is on the standby when the primary dies.
      const lsn = primary.sql('SELECT pg_current_wal_lsn()');
      await standby.until(`SELECT pg_last_wal_replay_lsn() >= '${lsn}'::pg_lsn`, 't');
      primary.stop('immediate');
      standby.promote();
      await standby.until('SELECT pg_is_in_recovery()', 'f');
      vip.point(standby);
      c.sink.release();
      // The promoted server is not the one the schema was recorded on: the daemons' writes are refused, no run is held for it.
      const flags = ['--cluster', CLUSTER, '--cluster-schema', c.schema, '--json'];
      const env = { LOOPX_CLUSTER_URL: vip.url() };
      const plan = await until('the promoted server to answer', async () => {
        const r = await loopxAsync(['cluster', 'rotate', ...flags], env);
        return r.status === 0 ? r.json<ClusterRotationPlan>() : undefined;
      });
      expectSchemaValid('cluster-rotation-plan.schema.json', plan);
      expect(plan).toMatchObject({ restore_detected: true, restore_generation: 0, next_restore_generation: 1 });
      expect(plan.changed).toEqual(expect.arrayContaining(['timeline', 'server_port']));
      expect((await runOf(c, 'run_failover'))?.work).not.toBe('held');
      const status = await c.status();
      expect(status.installation).toMatchObject({ state: 'restored_pending_rotation', restore_generation: 0 });
      expect(status.runs[0]!.work).not.toBe('held');
      const wrong = await loopxAsync(['cluster', 'rotate', ...flags, '--confirm', 'f'.repeat(64)], env);
      expect(wrong.status).toBe(4);
      expect(wrong.json().error.code).toBe('cluster_rotation_confirm_mismatch');
      const rotated = await loopxAsync(['cluster', 'rotate', ...flags, '--confirm', plan.digest], env);
      expect(rotated.status, rotated.stderr).toBe(0);
      expectSchemaValid('cluster-rotation.schema.json', rotated.json());
      expect(rotated.json()).toMatchObject({ restore_generation: 1 });

      expect((await finished(c, 'run_failover')).lifecycle).toBe('completed');
      const { events } = await provesOneOwnerAtATime(c, 'run_failover');
      // Taken up again under an epoch of the new timeline, which wrote the rest of the run.
      const after = events.filter((e) => e.epoch >= TIMELINE_2);
      expect(after.length).toBeGreaterThan(0);
      expect(events.at(-1)!.epoch).toBeGreaterThanOrEqual(TIMELINE_2);
      expect(messages(c)).toEqual(['delivery 1', 'delivery 2', 'delivery 3']);
    },
    SCENARIO_MS,
  );
});

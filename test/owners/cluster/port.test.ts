/**
 * The cluster owner's port: its conformance suite once per row of the provider table that can keep
 * a cluster (`ports.cluster`), through the row's own factory, and what only the PostgreSQL provider
 * has — a schema it did not migrate is refused, never created, and its tables are the `cluster`
 * component's, under the names a cluster's schema has always had.
 */
import { expect, it } from 'vitest';
import { cluster } from '../../../src/owners/index.js';
import { STORE_PROVIDERS } from '../../../src/owners/providers/index.js';
import { describePg } from '../../support/pg.js';
import { describeClusterPort } from '../conformance/cluster-port.conformance.js';
import { pgHarnesses } from '../conformance/pg-harness.js';
import { eachProvider, gated } from '../conformance/providers.js';
import { rejectionOf } from '../conformance/support.js';

const CLUSTER_SQL = { postgresql: { component: cluster.CLUSTER_COMPONENT, migrations: cluster.CLUSTER_PG_MIGRATIONS } };
const pg = pgHarnesses(cluster.CLUSTER_COMPONENT, cluster.CLUSTER_PG_MIGRATIONS);

eachProvider(
  (row, place) => {
    describeClusterPort(row.name, () => {
      const at = place(CLUSTER_SQL);
      return { open: () => gated(row.ports.cluster!(at.location), at.ready) };
    });
  },
  STORE_PROVIDERS.filter((p) => p.ports.cluster !== undefined),
);

describePg('on the real PostgreSQL server', () => {
  it('a schema without the cluster component is refused before any statement, and nothing is created', async () => {
    const schema = pg.schema();
    const port = cluster.openPgClusterPort(pg.pool(schema));
    expect(await rejectionOf(() => port.submit({ run_id: 'run_a', agent: '{}', input: null }))).toMatchObject({
      code: 'pg_schema_not_migrated',
    });
    expect(await rejectionOf(() => port.instances())).toMatchObject({ code: 'pg_schema_not_migrated' });
    const [row] = await pg
      .pool('public')
      .query<{ n: number }>('SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = $1', [
        schema,
      ]);
    expect(row?.n).toBe(0);
  });

  it('the state is in the tables cluster_instances and cluster_work of the cluster schema', async () => {
    const db = await pg.database();
    const port = cluster.openPgClusterPort(db);
    await port.join({ instance_id: 'inst_a', host: 'h', pid: 1, lease_ms: 1000 });
    await port.submit({ run_id: 'run_a', agent: '{}', input: null });
    await port.requestCancel('run_a');
    expect(await db.query('SELECT instance_id, state FROM cluster_instances')).toEqual([
      { instance_id: 'inst_a', state: 'active' },
    ]);
    expect(await db.query('SELECT run_id, state, held_code FROM cluster_work')).toEqual([
      { run_id: 'run_a', state: 'held', held_code: 'cancel_requested' },
    ]);
  });
});

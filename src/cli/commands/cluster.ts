/**
 * `loopx cluster init|submit|status|drain --cluster env:NAME` — a cluster of daemons sharing one
 * PostgreSQL schema (docs/cluster.md): its tables, the runs it drives, who drives what, and the
 * planned handoff of a daemon's runs to the others. The database URL is given by reference and
 * never stored; `--cluster-schema` names the schema (default loopx_cluster).
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import { usageError } from '../../core/index.js';
import type { ClusterAccess } from '../../runtime/index.js';
import { emit, runtime, type GlobalOptions } from '../context.js';
import { DEFAULT_CLUSTER_SCHEMA } from '../runtime-facts.js';

interface ClusterFlags {
  cluster: string;
  clusterSchema?: string;
}

const accessOf = (o: ClusterFlags): ClusterAccess => ({
  cluster: o.cluster,
  ...(o.clusterSchema !== undefined ? { schema: o.clusterSchema } : {}),
});

const withClusterFlags = (c: Command): Command =>
  c
    .requiredOption(
      '--cluster <env:NAME>',
      'the database URL of the cluster, by reference: the environment variable that holds it',
    )
    .option('--cluster-schema <name>', `the cluster's schema (default ${DEFAULT_CLUSTER_SCHEMA})`);

/** The flags of a run command that also acts on a cluster's runs (`loopx run show|events|resolve|cancel`). */
export type OptionalClusterFlags = Partial<ClusterFlags>;

export const withOptionalCluster = (c: Command): Command =>
  c
    .option(
      '--cluster <env:NAME>',
      "the run is a cluster's: the environment variable that holds the cluster's database URL",
    )
    .option('--cluster-schema <name>', `the cluster's schema (default ${DEFAULT_CLUSTER_SCHEMA})`);

/** The cluster a run command acts on, or `undefined` for the root's runs; a schema without a cluster is refused. */
export function optionalClusterAccess(o: OptionalClusterFlags, command: string): ClusterAccess | undefined {
  if (o.cluster !== undefined) return accessOf({ ...o, cluster: o.cluster });
  if (o.clusterSchema !== undefined) {
    throw usageError(
      'cluster_schema_without_cluster',
      '--cluster-schema names a schema of a cluster; --cluster env:NAME is missing.',
      `see its options: loopx ${command} --help`,
    );
  }
  return undefined;
}

/** The operator's key directory for a write of a cluster's run: the invocation's --authority-dir (else the default). */
export const operatorKeys = (g: GlobalOptions): { keysDir?: string } =>
  g.authorityDir !== undefined ? { keysDir: resolve(g.authorityDir) } : {};

const positive = (value: string): number => {
  if (!/^[1-9]\d{0,8}$/.test(value)) throw new InvalidArgumentError('expected a whole number ≥ 1');
  return Number(value);
};

export function register(program: Command, globals: () => GlobalOptions): void {
  const cluster = program
    .command('cluster')
    .description('daemons on several hosts sharing one PostgreSQL schema, handing runs to each other');
  withClusterFlags(
    cluster
      .command('init')
      .description("create or migrate the cluster's schema: runs, run authority, effects and the daemons' tables"),
  ).action(async (o: ClusterFlags) => {
    const g = globals();
    const { initCluster } = await runtime();
    emit(g, await initCluster(accessOf(o)), (d, out) => {
      out.line(`cluster schema ${d.schema}:`);
      for (const c of d.components)
        out.line(`  ${c.component}: ${c.from === c.to ? `at version ${c.to}` : `version ${c.from} → ${c.to}`}`);
    });
  });
  withClusterFlags(cluster.command('submit').description('a run for the cluster: the first free daemon starts it'))
    .requiredOption('--agent <file>', 'the agent file (its tool plan must be loopx.cluster.v1)')
    .option('--input <text>', 'the first user message')
    .option('--run-id <id>', 'the run id (default: a new one)')
    .action(async (o: ClusterFlags & { agent: string; input?: string; runId?: string }) => {
      const g = globals();
      const { loadAgentFile, submitClusterRun } = await runtime();
      const agent = loadAgentFile(o.agent);
      const r = await submitClusterRun(accessOf(o), agent, {
        ...(o.input !== undefined ? { input: o.input } : {}),
        ...(o.runId !== undefined ? { runId: o.runId } : {}),
      });
      emit(g, r, (d, out) => {
        out.line(`submitted run ${d.run_id}`);
        out.hint('follow it: loopx cluster status');
      });
    });
  withClusterFlags(
    cluster.command('status').description('the daemons, their live leases and the runs they drive'),
  ).action(async (o: ClusterFlags) => {
    const g = globals();
    const { clusterStatus } = await runtime();
    emit(g, await clusterStatus(accessOf(o)), (d, out) => {
      out.line(`cluster schema ${d.schema}: ${d.instances.filter((i) => i.live).length} live daemon(s)`);
      if (d.installation !== null && d.installation.state !== 'active')
        out.hint(
          `the database is ${d.installation.state} (changed: ${d.installation.changed.join(', ') || 'none'}); the daemons' writes are refused until it is rotated: loopx cluster rotate`,
        );
      for (const i of d.instances)
        out.line(`  ${i.instance_id} on ${i.host} (pid ${i.pid}): ${i.live ? i.state : 'gone'}, driving ${i.driving}`);
      for (const r of d.runs)
        out.line(
          `  run ${r.run_id}: ${r.lifecycle ?? 'not started'}${r.last_sequence !== null ? ` at sequence ${r.last_sequence}` : ''} — ${r.work}${r.held_code ? ` (${r.held_code})` : ''}${r.owner_instance ? `, driven by ${r.owner_instance}` : ''}`,
        );
    });
  });
  registerRotate(cluster, globals);
  withClusterFlags(
    cluster
      .command('drain')
      .description(
        "hand a daemon's runs to the others: each suspends at its next turn boundary and is resumed elsewhere",
      ),
  )
    .argument('<instance>', 'the daemon to drain (its instance id, from cluster status)')
    .option('--wait-ms <ms>', 'how long to wait for the handoff (default 120000)', positive)
    .action(async (instance: string, o: ClusterFlags & { waitMs?: number }) => {
      const g = globals();
      const { drainClusterInstance } = await runtime();
      emit(
        g,
        await drainClusterInstance(accessOf(o), instance, o.waitMs !== undefined ? { waitMs: o.waitMs } : {}),
        (d, out) =>
          out.line(`daemon ${d.instance_id}: ${d.state === 'gone' ? 'gone (its leases lapse on their own)' : d.state}`),
      );
    });
}

/** `loopx cluster rotate`: the cluster schema after a failover or a restore (runtime/cluster-rotation.ts). */
function registerRotate(cluster: Command, globals: () => GlobalOptions): void {
  withClusterFlags(
    cluster
      .command('rotate')
      .description(
        'after a failover or a restore of the cluster database: a new store identity and restore generation, every run lease released, then daemons admitted again',
      ),
  )
    .option('--confirm <digest>', 'the plan digest the preview printed; without it, only the plan is shown')
    .action(async (o: ClusterFlags & { confirm?: string }) => {
      const g = globals();
      const { planClusterRotation, rotateCluster } = await runtime();
      if (o.confirm === undefined)
        return emit(g, await planClusterRotation(accessOf(o)), (d, out) => {
          out.line(
            `cluster schema ${d.schema}: ${d.restore_detected ? `not on the server it was recorded on (changed: ${d.changed.join(', ')})` : d.state}`,
          );
          out.line(
            `  restore generation ${d.restore_generation} → ${d.next_restore_generation}; a new store identity is minted`,
          );
          out.line(`  ${d.live_leases} live run lease(s) are released: each run is taken again under a new epoch`);
          out.hint(`confirm: loopx cluster rotate --confirm ${d.digest}`);
        });
      emit(g, await rotateCluster(accessOf(o), o.confirm), (d, out) => {
        out.line(
          `cluster schema ${d.schema} rotated: store identity ${d.store_identity}, restore generation ${d.restore_generation}; the daemons are admitted again`,
        );
        out.line(`  ${d.released_leases.length} run lease(s) released`);
      });
    });
}

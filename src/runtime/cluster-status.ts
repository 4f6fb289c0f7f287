/**
 * `loopx cluster status`: what an operator reads of a cluster — the schema's installation, the
 * daemons, the leases not released and the runs submitted — each fact from the owner that holds it.
 */
import { readInstallation, type InstallationView } from '../store/index.js';
import { requireCluster, withClusterDb, type ClusterAccess } from './cluster.js';

export interface ClusterStatus {
  readonly schema: string;
  /**
   * The schema's installation as the database says it is now: `restored_pending_rotation` after a
   * failover or a restore (the daemons' writes are refused until `loopx cluster rotate`).
   */
  readonly installation: Pick<InstallationView, 'state' | 'changed' | 'store_identity' | 'restore_generation'> | null;
  readonly instances: Array<{
    instance_id: string;
    host: string;
    pid: number;
    state: string;
    live: boolean;
    heartbeat_age_ms: number;
    driving: number;
  }>;
  readonly leases: Array<{
    run_id: string;
    epoch: number;
    owner_instance: string;
    live: boolean;
    expires_in_ms: number;
  }>;
  readonly runs: Array<{
    run_id: string;
    work: string;
    held_code: string | null;
    lifecycle: string | null;
    last_sequence: number | null;
    owner_instance: string | null;
  }>;
}

/** `loopx cluster status`: the daemons, their live leases and the runs they drive, as the database has them now. */
export async function clusterStatus(a: ClusterAccess): Promise<ClusterStatus> {
  return withClusterDb(a, async (db, o) => {
    await requireCluster(db, a);
    // Each owner answers for its own facts; "driving" and a run's owner are live leases on the database clock.
    const instances = await o.cluster.instances();
    const leases = await o.leases.unreleased();
    const work = await o.cluster.listWork();
    const heads = new Map((await o.runs.list()).map((h) => [h.runId, h]));
    const live = leases.filter((l) => l.live);
    const ownerOf = new Map(live.map((l) => [l.run_id, l.owner_instance]));
    const i = await db.transaction((q) => readInstallation(q), { isolation: 'repeatable read', readOnly: true });
    return {
      schema: db.schema,
      installation:
        i === undefined
          ? null
          : {
              state: i.state,
              changed: i.changed,
              store_identity: i.store_identity,
              restore_generation: i.restore_generation,
            },
      instances: instances.map((i) => ({
        instance_id: i.instance_id,
        host: i.host,
        pid: i.pid,
        state: i.state,
        live: i.live,
        heartbeat_age_ms: i.heartbeat_age_ms,
        driving: live.filter((l) => l.owner_instance === i.instance_id).length,
      })),
      leases: leases.map((l) => ({
        run_id: l.run_id,
        epoch: l.epoch,
        owner_instance: l.owner_instance,
        live: l.live,
        expires_in_ms: l.expires_in_ms,
      })),
      runs: work.map((w) => ({
        run_id: w.run_id,
        work: w.state,
        held_code: w.held_code,
        lifecycle: heads.get(w.run_id)?.lifecycle ?? null,
        last_sequence: heads.get(w.run_id)?.lastSequence ?? null,
        owner_instance: ownerOf.get(w.run_id) ?? null,
      })),
    };
  });
}

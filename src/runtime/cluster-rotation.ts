/**
 * `loopx cluster rotate`: a cluster schema's installation after a failover or a restore. A schema
 * whose server is not the one it was recorded on — a promoted standby, a point-in-time restore, a
 * physical copy — admits no daemon's effect write (`store_restored_pending_rotation`; the daemons
 * hold no run for it and retry; the run store and the leases do not ask the installation, and the
 * epochs move past the old server's: run-authority/postgres.ts). Rotating previews a plan bound by a digest and, only
 * with `--confirm <digest>`:
 *   1. mints a new store identity and the next restore generation in state `rotating`, with the
 *      live server recorded (every daemon admitted before is refused from then on);
 *   2. releases every run lease, so each run is taken again under a new epoch — past every epoch
 *      of the old timeline after a promotion (run-authority/postgres.ts) — and no driver from before
 *      writes under its old one;
 *   3. admits writers (`active`). The daemons read their admission again and go on, no restart.
 * Interrupted, it is run again: a `rotating` installation resumes at step 2 (each step is idempotent).
 */
import { canonicalJson, conflict, sha256Hex } from '../core/index.js';
import { pgRunLeaseFacts, revokeRunLeases } from '../run-authority/index.js';
import {
  activateInstallation,
  installationMissing,
  installationView,
  readInstallation,
  rotateInstallation,
  type InstallationView,
  type PgAdmission,
} from '../store/index.js';
import { openClusterDb, withClusterDb, type ClusterAccess } from './cluster.js';

export const CLUSTER_ROTATION_PLAN_SCHEMA = 'loopx_cluster_rotation_plan_v0';

/** What `loopx cluster rotate` would do, bound by `digest`. */
export interface ClusterRotationPlan {
  readonly schema_version: typeof CLUSTER_ROTATION_PLAN_SCHEMA;
  readonly schema: string;
  readonly state: InstallationView['state'];
  readonly restore_detected: boolean;
  readonly changed: InstallationView['changed'];
  readonly store_identity: string;
  readonly restore_generation: number;
  readonly next_restore_generation: number;
  /** Runs whose lease is live now: released by the rotation and taken again under a new epoch. */
  readonly live_leases: number;
  readonly digest: string;
}

export interface ClusterRotation {
  readonly schema: string;
  readonly store_identity: string;
  readonly restore_generation: number;
  /** The runs whose leases the rotation released (sorted). */
  readonly released_leases: readonly string[];
}

/** `loopx cluster rotate` without `--confirm`: the plan. */
export function planClusterRotation(a: ClusterAccess): Promise<ClusterRotationPlan> {
  return withClusterDb(a, async (db) => {
    const v = await installationView(db);
    const live = (await pgRunLeaseFacts(db).unreleased()).filter((l) => l.live).length;
    const body = {
      schema_version: CLUSTER_ROTATION_PLAN_SCHEMA,
      schema: db.schema,
      state: v.state,
      restore_detected: v.state === 'restored_pending_rotation',
      changed: v.changed,
      store_identity: v.store_identity,
      restore_generation: v.restore_generation,
      next_restore_generation: v.state === 'rotating' ? v.restore_generation : v.restore_generation + 1,
      live_leases: live,
    } as const;
    // The digest binds what the rotation acts on; the count of live leases only informs (leases lapse on their own).
    const { live_leases: _, ...bound } = body;
    return { ...body, digest: sha256Hex(canonicalJson(bound)) };
  });
}

/** `loopx cluster rotate --confirm <digest>`: the steps of the header, in order. */
export async function rotateCluster(a: ClusterAccess, confirm: string): Promise<ClusterRotation> {
  const plan = await planClusterRotation(a);
  if (plan.digest !== confirm) throw confirmMismatch(a);
  const db = openClusterDb(a, 2);
  let rotated: PgAdmission;
  try {
    rotated = await db.transaction(async (q) => {
      const v = await readInstallation(q, true);
      if (v === undefined) throw installationMissing(db.schema);
      if (
        v.store_identity !== plan.store_identity ||
        v.restore_generation !== plan.restore_generation ||
        v.state !== plan.state
      )
        throw confirmMismatch(a);
      return v.state === 'rotating'
        ? { store_identity: v.store_identity, restore_generation: v.restore_generation }
        : rotateInstallation(q, v);
    });
  } finally {
    await db.close();
  }
  // Runs' leases are not the installation's to admit: released on any connection, then writers admitted.
  const own = openClusterDb(a, 2);
  try {
    const released = await revokeRunLeases(own);
    await own.transaction((q) => activateInstallation(q, rotated));
    return { schema: own.schema, ...rotated, released_leases: released };
  } finally {
    await own.close();
  }
}

const confirmMismatch = (a: ClusterAccess) =>
  conflict(
    'cluster_rotation_confirm_mismatch',
    'The cluster schema changed since the rotation was previewed (or the digest is not its plan); nothing was rotated.',
    {
      nextAction: `preview the rotation again: loopx cluster rotate --cluster ${a.cluster}${a.schema === undefined ? '' : ` --cluster-schema ${a.schema}`}`,
    },
  );

/**
 * Public API of the cluster owner: a cluster's membership (daemons, heartbeats, drains) and its
 * work queue (submitted runs: pending, held with a code — a cancel request among them — or
 * finished), behind `ClusterPort` (contract.ts) with an in-memory reference and a PostgreSQL
 * provider (the `cluster` component of a cluster's schema). It knows nothing of runs, leases or
 * effects: those are the run store's, the run authority's and the effect owner's, and the runtime
 * asks them. No recovery contract: a cluster's schema is not part of a runtime root.
 */
export {
  CANCEL_REQUESTED,
  type ClusterInstance,
  type ClusterPort,
  type ClusterWork,
  type InstanceJoin,
  type InstanceState,
  type SubmittedWork,
  type WorkState,
} from './contract.js';
export {
  createMemoryClusterState,
  memoryClusterPort,
  type MemoryClusterOptions,
  type MemoryClusterState,
} from './memory.js';
export { CLUSTER_COMPONENT, CLUSTER_PG_MIGRATIONS, openPgClusterPort } from './postgres.js';

/**
 * The cluster owner's contract: the facts a cluster of daemons decides about itself, and nothing
 * else — its membership (instances and their heartbeats, the drain asked of one), and its work
 * queue (the runs submitted to it, which are pending, held with a code — a cancel request among
 * them — or finished). Runs, their leases and their effects are other owners' facts (the run
 * store, the run authority, the effect owner): a caller asks them, never this contract.
 *
 * Providers: memory.ts (the reference, for tests and embedding) and postgres.ts (the `cluster`
 * component of a cluster's schema). One suite, test/owners/conformance/cluster-port.conformance.ts,
 * runs every rule below against each.
 *
 * - Clock: liveness and ages are read on the provider's clock (the database's for PostgreSQL),
 *   never the caller's: an instance is `live` while `heartbeat + lease_ms` is after now.
 * - Membership: an instance id joins once (`cluster_instance_exists`, conflict, and nothing
 *   changes, for a second join). Its state moves `active` → `draining` → `drained` → `stopped`;
 *   `draining` is only ever entered from `active` (by `requestDrain`, or the member's own
 *   `markInstance`), so a drain asked late never takes a drained or stopped member back.
 * - Work: a run id is submitted once (`submit` answers false and changes nothing the second time).
 *   Every transition is one conditional write that answers whether it applied — a caller that
 *   lost a race sees `false`, never an error:
 *     hold           pending → held (code)
 *     requeue        held → pending, except a run held for `cancel_requested`: a cancel request
 *                    is never undone here; only `finish` ends it
 *     requestCancel  pending or held → held (cancel_requested)
 *     finish         pending or held → finished (idempotent: a finished run stays as it is)
 * - Order: work in submission order (ties by run id); instances in join order (ties by id).
 * - Wake-ups: `submit` and `requeue` wake every watcher (of any process) when they changed
 *   something, `requestDrain` whenever the instance is known; `wake` does so on request. A wake-up is a hint to read again, never
 *   authority, and may be lost (a watcher polls as well).
 * - "Not found" is `undefined` (or an empty list), never an error. A provider's failure to reach
 *   its store rejects (PostgreSQL: the typed `pg_*` refusals); nothing is then known to have changed
 *   but a single-statement write that lost its answer may have applied — every write is safe to
 *   repeat, since each is conditional on the state it moves from.
 * - Rows come back as copies; changing one changes nothing stored.
 */

export type InstanceState = 'active' | 'draining' | 'drained' | 'stopped';
export type WorkState = 'pending' | 'held' | 'finished';

/** The held code of a run an operator is cancelling: no daemon claims it, and `requeue` leaves it held. */
export const CANCEL_REQUESTED = 'cancel_requested';

/** What a daemon says of itself when it joins. */
export interface InstanceJoin {
  readonly instance_id: string;
  readonly host: string;
  readonly pid: number;
  /** How long after its last heartbeat the instance counts as gone (positive). */
  readonly lease_ms: number;
}

export interface ClusterInstance extends InstanceJoin {
  readonly state: InstanceState;
  /** Its last heartbeat is younger than its lease, on the provider's clock. */
  readonly live: boolean;
  readonly heartbeat_age_ms: number;
}

/** A run submitted to the cluster: its agent definition and input as the submitter gave them (stored, never parsed here). */
export interface SubmittedWork {
  readonly run_id: string;
  readonly agent: string;
  readonly input: string | null;
}

export interface ClusterWork extends SubmittedWork {
  readonly state: WorkState;
  /** Why a held run is held (`mutation_uncertain`, `cancel_requested`, a refusal's code); null otherwise. */
  readonly held_code: string | null;
}

export interface ClusterPort {
  // ── membership ──
  /** A new member, `active`, its heartbeat now; `cluster_instance_exists` for an id already joined. */
  join(member: InstanceJoin): Promise<void>;
  /** The member is alive now; its state (a drain asked of it shows here), or undefined for an unknown id. */
  heartbeat(instanceId: string): Promise<InstanceState | undefined>;
  /** Ask a member to drain: `active` → `draining` (any other state stays); its state after, or undefined for an unknown id. */
  requestDrain(instanceId: string): Promise<InstanceState | undefined>;
  /** A member's own report of its state (`draining` only from `active`); nothing for an unknown id. */
  markInstance(instanceId: string, state: Exclude<InstanceState, 'active'>): Promise<void>;
  instance(instanceId: string): Promise<ClusterInstance | undefined>;
  instances(): Promise<ClusterInstance[]>;

  // ── the work queue ──
  /** A run for the cluster, `pending`; false (nothing changed) when its id was submitted before. */
  submit(work: SubmittedWork): Promise<boolean>;
  work(runId: string): Promise<ClusterWork | undefined>;
  listWork(): Promise<ClusterWork[]>;
  /** Up to `limit` pending run ids, in submission order, leaving out those in `excluding`. */
  pending(options: { readonly limit: number; readonly excluding?: readonly string[] }): Promise<string[]>;
  /** Up to `limit` run ids held with `code`, in submission order. */
  held(options: { readonly code: string; readonly limit: number }): Promise<string[]>;
  hold(runId: string, code: string): Promise<boolean>;
  requeue(runId: string): Promise<boolean>;
  requestCancel(runId: string): Promise<boolean>;
  finish(runId: string): Promise<boolean>;

  // ── wake-ups ──
  /** Wake every watcher (`subject` names what changed, for logs only). */
  wake(subject: string): Promise<void>;
  /** Call `onWake` on every wake-up until the returned stop is called. */
  watch(onWake: () => void): Promise<() => void>;
}

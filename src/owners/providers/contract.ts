/**
 * The storage-provider contract: one object per provider (memory, SQLite, PostgreSQL — `table.ts`
 * lists them) that owners and the runtime ask by a location's `provider` name, instead of branching
 * on it. A row says where its state lives, opens each owner's storage port there, and answers the
 * questions about its locations that used to be conditionals: decoding a recorded location,
 * equality, its description in a refusal, what to check before a Goal's work store is created and,
 * for a database service, what to migrate and how to read one snapshot of it.
 *
 * Failure modes every row keeps:
 * - A port a row opens keeps its own port's contract (`<owner>/port.ts`, `work/contract.ts`):
 *   conditional commit, conflict reasons, `ambiguous` only at the commit point. A row adds no
 *   retry, no cache of rows and no decision.
 * - Decoding is strict and total: a recorded location a row cannot read whole is `undefined`
 *   (the caller's typed refusal, e.g. `work_store_location_invalid`), never a guess or a default.
 * - Opening never creates what the operator creates: a service's schema is migrated only by
 *   `migrate` (`loopx db migrate`); a port or `work.ready` on an unmigrated one rejects typed
 *   (`pg_schema_not_migrated`). Files in a root are created on first open, as always.
 * - A row holds no credential: a service is named by a URL *reference* (`env:NAME`), read when
 *   first opened (`database_url_missing` when unset) and never written anywhere.
 * - `release` ends what a row shares across opens in this process (pools); a later open starts
 *   anew. Ports close themselves, never the shared resource.
 */
import type * as clusterOwner from '../cluster/index.js';
import type * as effectOwner from '../effect/index.js';
import type * as quotaOwner from '../quota/index.js';
import type * as schedulerOwner from '../scheduler/index.js';
import type * as sessionOwner from '../session/index.js';
import type * as workOwner from '../work/index.js';
import type { ServiceSnapshot } from './snapshot.js';

/** Where a provider keeps state: its registered name (`registerStoreProvider`) and its own fields. */
export interface StoreLocation {
  readonly provider: string;
}

/** A database service's location: reached through a URL reference (`env:NAME`), the installation's state in one schema. */
export interface ServiceLocation extends StoreLocation {
  readonly database_url: string;
  readonly schema: string;
}

/** A Goal's request for where its work lives (`goal create --work-provider`): unset fields take the root's. */
export interface WorkChoice {
  readonly provider: string;
  /** `env:NAME`, the variable holding the URL. */
  readonly database_url?: string;
  readonly schema?: string;
}

/** One Goal's work store: the runtime root, the Goal whose store it is, and where it lives. */
export interface WorkPlace<W extends StoreLocation = StoreLocation> {
  readonly root: string;
  readonly goal_id: string;
  readonly location: W;
}

/** How a Goal's work store is opened: the identity expected of it (`work/identity.ts`), and whether a missing store may be created. */
export interface OpenWorkOptions {
  readonly goal_id: string;
  readonly expected_incarnation?: string;
  readonly expected_store_identity?: string;
  /** A service's store is created only with `create` (Goal creation); files are created on first open. */
  readonly create?: boolean;
  readonly synchronous?: 'FULL' | 'NORMAL' | 'OFF';
}

/** A component of a service's schema brought to this loopx's version (`loopx db migrate`). */
export interface MigratedComponent {
  readonly component: string;
  readonly from: number;
  readonly to: number;
}

/** What only a database service has: migrations, one snapshot per backup set, installation checks. */
export interface StoreService {
  /** The same database and schema (one installation), whatever the row key inside it. */
  same(a: ServiceLocation, b: ServiceLocation): boolean;
  /** `loopx db migrate`: the installation and every component (`root`), or the work component alone (a Goal's own schema, `goal_work`). */
  migrate(location: ServiceLocation, what: 'root' | 'goal_work'): Promise<MigratedComponent[]>;
  /** Whether the schema already holds an installation (another root's state, or a restored copy). */
  occupied(location: ServiceLocation): Promise<boolean>;
  /** One read-only snapshot of the schema, held until closed (a backup set reads every component in it). */
  snapshot(location: ServiceLocation): Promise<ServiceSnapshot>;
}

/**
 * One storage provider. `R` is the location of a root's Goal state on it, `W` that of one Goal's
 * work store. Methods, not function-valued fields: a row of any location type is a row of the table.
 */
export interface StoreProvider<R extends StoreLocation = StoreLocation, W extends StoreLocation = StoreLocation> {
  readonly name: R['provider'];
  /** Its state is files of the runtime root: `init` creates them, backup captures them, recovery writes them. */
  readonly inRoot: boolean;
  /** ` (schema x)`, or nothing: what a message adds after the provider's name to say where. */
  describe(location: R | W): string;

  readonly root: {
    /** A root's recorded choice (the `store` namespace of its configuration), or undefined when it cannot be read whole. */
    decode(recorded: Readonly<Record<string, unknown>>): R | undefined;
    /**
     * `loopx init --store <name>`: the location a fresh root takes and the fields its configuration
     * records (none for the default, which is never recorded); absent when a root cannot choose it.
     */
    choose?(choice: { readonly databaseUrl?: string; readonly schema?: string }): {
      readonly location: R;
      readonly record?: Readonly<Record<string, string>>;
    };
  };

  /** Whether a root store may already hold state: its file exists; a service always may. */
  holds(root: string, location: R, file: string): boolean;

  /** The storage port of each root-wide owner, opened at `location` (a closed port leaves the shared resource open). */
  readonly ports: {
    session(root: string, location: R): sessionOwner.SessionPort;
    effect(root: string, location: R): effectOwner.EffectPort;
    quota(root: string, location: R): quotaOwner.QuotaPort;
    scheduler(root: string, location: R): schedulerOwner.SchedulerPort;
    /** A cluster's membership and work queue (not a root's owner); absent where a cluster cannot live. */
    cluster?(location: R): clusterOwner.ClusterPort;
  };

  readonly work: {
    /** Where a root at `root` keeps the work of a Goal that chose nothing. */
    ofRoot(root: R, goalId: string): W;
    /** A Goal's recorded choice (`work-store.json` without its schema version), or undefined when it cannot be read whole. */
    decode(recorded: Readonly<Record<string, unknown>>, goalId: string): W | undefined;
    /** The same store: database, schema and row key. */
    same(a: W, b: W): boolean;
    /** Whether the store a Goal has answers a request of this provider (its unset fields match anything). */
    answers(have: W, request: WorkChoice): boolean;
    /**
     * The store a request names for a new Goal (`goal create --work-provider`); a pending record of
     * the same place keeps its row key. Absent when a Goal cannot choose this provider.
     */
    choose?(
      request: WorkChoice,
      at: { readonly root: StoreLocation; readonly goal_id: string; readonly pending: StoreLocation | null },
    ): W;
    /** Refuses, before a Goal is made, a store that cannot take it (a schema not migrated to this version). */
    ready(location: W): Promise<void>;
    open(place: WorkPlace<W>, options: OpenWorkOptions): Promise<workOwner.WorkProvider>;
    /**
     * Sets a retired lifetime's store aside so a new lifetime starts on its own: either in place
     * (files moved under `retired/`; answers null) or by a new location to record (a fresh row key).
     */
    setAside(place: WorkPlace<W>, retiredInstanceId: string): W | null;
    /** The record after the store's service was rotated through another reference; undefined when it has no reference to rebind. */
    rebind?(location: W, reference: string): W | undefined;
  };

  /** Present for a database service. */
  readonly service?: StoreService;
  /** Ends what this provider shares in this process (pools); idempotent. */
  release?(): Promise<void>;
}

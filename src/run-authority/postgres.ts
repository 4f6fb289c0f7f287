/**
 * The PostgreSQL run authority: run records, run ownership, import leases, root bindings and Goal
 * lifetime supersessions as tables of an installation's schema (component `run_authority`), so
 * several loopx processes — on several hosts — share one authority over the runs they hand to each
 * other. Key material never enters the database: keys and claims are the host's own local
 * authority directory (`keys`, the same scope provisioned to every host of one cluster), so a
 * snapshot signed on one host verifies on another of the same scope and fails closed elsewhere.
 *
 *   run_records        one encoded record per run (records.ts), written only under the run's lease
 *   run_leases         ownership: (run_id, epoch, owner_instance, lease_expires_at) on the
 *                      database clock; every acquisition is a new epoch
 *   run_lease_history  one row per (run_id, epoch): who held each epoch (what the cluster's
 *                      checks prove "one owner per epoch" from)
 *   run_import_leases  at most one importer of a run at a time, with an expiry of its own
 *   root_bindings, lifetime_supersessions   as the local directory keeps them (roots.ts, lifetimes.ts)
 *
 * Fencing at the resource, never by belief:
 * - A lease is taken by one conditional statement: the row is created at epoch 1, or moved to the
 *   next epoch only when it was released or its expiry has passed on the database's clock. A live
 *   holder's row is never taken, and two takers of one expired row get different epochs — one of
 *   them waits on the row lock and then finds it live.
 * - Each held lease is renewed in the background (every third of its length); a renewal that
 *   finds the epoch moved marks the lease lost. Nothing here trusts that mark: every write under a
 *   lease — a record here, a run store commit (`fence`) — first locks the lease row `FOR SHARE` at
 *   (run, epoch, instance) inside its own transaction and fails with `run_lease_lost` otherwise,
 *   so a paused process that wakes after another took the run over fails in the database.
 * - Epochs are ordered across a failover and a restore. An epoch taken on the server's timeline T,
 *   in a schema at restore generation G, is at least (T − 1 + G)·2³² + 1 (`EPOCH_FLOOR`): timeline
 *   1 of a schema never rotated counts 1, 2, 3, … as ever; the first epoch a promoted standby (or a
 *   point-in-time restore) grants is past every epoch its old primary could have granted and lost in
 *   the failover, and so is the first after a rotation (`loopx cluster rotate`, also after a restore
 *   on the same timeline) — past any the old server grants if it is started again, so a receiver
 *   that has seen the new one refuses the old server's deliveries as stale.
 *   A lease's expiry is the promoted server's clock's, like every other.
 * - Session advisory locks are never used: poolers and a server's silent loss of a session break
 *   them; a lease row survives both and expires on its own.
 *
 * A release that cannot reach the server is left to expire (its epoch is then taken over); it is
 * never reported as held. `close` drains outstanding leases (LeaseBook), stops the renewals and
 * closes the key directory; the pool is not its own.
 */
import { randomBytes } from 'node:crypto';
import { conflict, faultPoint, internal } from '../core/index.js';
import { isLoopxError } from '../core/index.js';
import {
  INSTALLATION_GENERATION,
  LIVE_TIMELINE,
  pgFailure,
  requireSchemaVersion,
  type PgDatabase,
  type PgMigration,
  type PgQuery,
} from '../store/index.js';
import { checkRunId, IMPORT_WAIT_MS, isRunId, LeaseBook } from './leases.js';
import {
  lifetimesRevision,
  lifetimesSupersededIn,
  readLifetime,
  supersedeLifetime,
  type LifetimeTable,
} from './lifetimes.js';
import { readActivation, writeActivation, type ActivationSetting } from './activation.js';
import { observeWorkHead, rewindWorkMark, type WorkHead, type WorkMark, type WorkMarkTable } from './work-marks.js';
import type { LocalRunAuthority } from './local.js';
import { decodeRecord, encodeRecord } from './records.js';
import {
  bindRoot,
  rebindRoot,
  type RebindOutcome,
  type RootBindingTable,
  type RootDirectoryIdentity,
  stillThere,
} from './roots.js';
import type {
  ClaimInput,
  ImportLease,
  LifetimeSupersession,
  LifetimeSupersessionOutcome,
  LifetimeSupersessionRequest,
  RunAuthority,
  RunLease,
  RunRecord,
} from './contract.js';

/** The component `loopx db migrate` records these tables under. */
export const RUN_AUTHORITY_COMPONENT = 'run_authority';

export const RUN_AUTHORITY_PG_MIGRATIONS: readonly PgMigration[] = [
  {
    version: 1,
    sql: `CREATE TABLE run_records (run_id TEXT COLLATE "C" PRIMARY KEY, owner_root TEXT COLLATE "C" NOT NULL, body TEXT NOT NULL);
     CREATE INDEX run_records_by_owner ON run_records (owner_root);
     CREATE TABLE run_leases (
       run_id TEXT COLLATE "C" PRIMARY KEY,
       epoch BIGINT NOT NULL CHECK (epoch >= 1),
       owner_instance TEXT COLLATE "C" NOT NULL,
       acquired_at TIMESTAMPTZ NOT NULL,
       lease_expires_at TIMESTAMPTZ NOT NULL,
       released BOOLEAN NOT NULL DEFAULT false
     );
     CREATE TABLE run_lease_history (
       run_id TEXT COLLATE "C" NOT NULL,
       epoch BIGINT NOT NULL,
       owner_instance TEXT COLLATE "C" NOT NULL,
       acquired_at TIMESTAMPTZ NOT NULL,
       PRIMARY KEY (run_id, epoch)
     );
     CREATE TABLE run_import_leases (
       run_id TEXT COLLATE "C" PRIMARY KEY,
       owner_token TEXT COLLATE "C" NOT NULL,
       lease_expires_at TIMESTAMPTZ NOT NULL
     );
     CREATE TABLE root_bindings (root_id TEXT COLLATE "C" PRIMARY KEY, dev TEXT NOT NULL, ino TEXT NOT NULL, path TEXT NOT NULL);
     CREATE TABLE lifetime_supersessions (goal_instance_id TEXT COLLATE "C" PRIMARY KEY, body TEXT NOT NULL);`,
  },
  {
    // Work marks: each Goal work store's lifetime and last committed head (work-marks.ts).
    version: 2,
    sql: `CREATE TABLE work_marks (store_key TEXT COLLATE "C" PRIMARY KEY, body TEXT NOT NULL);`,
  },
  {
    // Per-user settings: the recovery activation switch (activation.ts).
    version: 3,
    sql: `CREATE TABLE authority_settings (name TEXT COLLATE "C" PRIMARY KEY, body TEXT NOT NULL);`,
  },
];

/**
 * A cluster schema's rotation (`loopx cluster rotate`): every lease released at once, so each run is
 * taken again under a new epoch and no driver from before writes under its old one (every write
 * under a lease checks its row). The runs whose leases were released, sorted.
 */
export async function revokeRunLeases(db: PgDatabase): Promise<string[]> {
  const rows = await db.query<{ run_id: string }>(
    'UPDATE run_leases SET released = true, lease_expires_at = now() WHERE NOT released RETURNING run_id',
  );
  return rows.map((r) => r.run_id).sort();
}

/** The least epoch a lease taken now may have: 1 on timeline 1, past every earlier timeline's after a promotion (see the header). */
const EPOCH_FLOOR = `(((${LIVE_TIMELINE}) - 1 + ${INSTALLATION_GENERATION}) * 4294967296 + 1)`;

/** Default lease length: a dead owner's runs are taken over this long after its last renewal. */
export const DEFAULT_LEASE_MS = 15_000;

/** Where a lease taken here stands: its epoch, and whether a renewal found it taken over. */
interface Held {
  readonly epoch: number;
  lost: boolean;
}

export interface PgAuthorityOptions {
  readonly db: PgDatabase;
  /** The host's own authority directory: the scope and keys every claim is made and verified with. */
  readonly keys: LocalRunAuthority;
  /** This process's instance id (default: a fresh `inst_<hex>` per authority object, i.e. per process start). */
  readonly instanceId?: string;
  /** Lease length on the database clock (default 15 s); renewed every third of it. */
  readonly leaseMs?: number;
  /** How long `beginImport` waits for a competing importer of the same run (default 30 s). */
  readonly importWaitMs?: number;
}

/** A write under a lease this process no longer holds at its epoch: another owner took the run over. */
export const runLeaseLost = (runId: string, epoch: number): ReturnType<typeof conflict> =>
  conflict(
    'run_lease_lost',
    `Run ${runId} was taken over by another owner; this process's lease (epoch ${epoch}) is no longer current and it stops driving the run.`,
    {
      nextAction: `follow the run where it continues: loopx run events ${runId} --follow`,
      details: { run_id: runId, epoch },
    },
  );

export class PgRunAuthority implements RunAuthority {
  readonly scopeId: Uint8Array;
  readonly instanceId: string;
  readonly #db: PgDatabase;
  readonly #keys: LocalRunAuthority;
  readonly #leaseMs: number;
  readonly #importWaitMs: number;
  readonly #leases = new LeaseBook();
  readonly #held = new Map<string, Held>();
  readonly #roots: RootBindingTable;
  readonly #lifetimes: LifetimeTable;
  #renewal: NodeJS.Timeout | undefined;
  #checked: Promise<void> | undefined;

  constructor(options: PgAuthorityOptions) {
    this.#db = options.db;
    this.#keys = options.keys;
    this.scopeId = options.keys.scopeId;
    this.instanceId = options.instanceId ?? `inst_${randomBytes(12).toString('hex')}`;
    this.#leaseMs = options.leaseMs ?? DEFAULT_LEASE_MS;
    this.#importWaitMs = options.importWaitMs ?? IMPORT_WAIT_MS;
    this.#roots = this.#rootTable();
    this.#lifetimes = this.#lifetimeTable();
  }

  // ── keys: the host's own directory ─────────────────────────────────────────────────────

  currentKeyGeneration(): number {
    return this.#keys.currentKeyGeneration();
  }

  keyGenerations(): Array<{ generation: number; retired: boolean }> {
    return this.#keys.keyGenerations();
  }

  rotate(): number {
    this.#leases.live();
    return this.#keys.rotate();
  }

  retire(generation: number): void {
    this.#leases.live();
    this.#keys.retire(generation);
  }

  claim(input: ClaimInput): Uint8Array {
    this.#leases.liveFor(input.runId);
    return this.#keys.claim(input);
  }

  verifyClaim(scopeId: Uint8Array, input: ClaimInput, hmac: Uint8Array): boolean {
    this.#leases.liveFor(input.runId);
    return this.#keys.verifyClaim(scopeId, input, hmac);
  }

  // ── run leases ─────────────────────────────────────────────────────────────────────────

  async acquireRun(runId: string): Promise<RunLease | undefined> {
    this.#leases.live();
    checkRunId(runId);
    const rows = await this.#q(
      `WITH taken AS (
         INSERT INTO run_leases AS l (run_id, epoch, owner_instance, acquired_at, lease_expires_at)
         VALUES ($1, ${EPOCH_FLOOR}, $2, now(), now() + make_interval(secs => $3))
         ON CONFLICT (run_id) DO UPDATE
           SET epoch = GREATEST(l.epoch + 1, ${EPOCH_FLOOR}), owner_instance = EXCLUDED.owner_instance, acquired_at = EXCLUDED.acquired_at,
               lease_expires_at = EXCLUDED.lease_expires_at, released = false
           WHERE l.released OR l.lease_expires_at <= now()
         RETURNING run_id, epoch, owner_instance, acquired_at)
       INSERT INTO run_lease_history (run_id, epoch, owner_instance, acquired_at) SELECT * FROM taken RETURNING epoch`,
      [runId, this.instanceId, this.#leaseMs / 1000],
    );
    if (rows.length === 0) return undefined;
    const held: Held = { epoch: Number(rows[0]!.epoch), lost: false };
    this.#held.set(runId, held);
    this.#scheduleRenewal();
    return this.#leases.runLease(runId, async () => {
      if (this.#held.get(runId) === held) this.#held.delete(runId);
      // Best effort: a release that does not reach the server leaves the lease to expire.
      await this.#q(
        'UPDATE run_leases SET released = true, lease_expires_at = now() WHERE run_id = $1 AND epoch = $2 AND owner_instance = $3',
        [runId, held.epoch, this.instanceId],
      ).catch(() => undefined);
    });
  }

  /** The epoch this process holds `runId` at (undefined when it holds no lease of it). */
  heldEpoch(runId: string): number | undefined {
    return this.#held.get(runId)?.epoch;
  }

  /**
   * The check every write under a run's lease runs first, inside its own transaction: this
   * process still holds the run at its epoch. The lease row is locked `FOR SHARE`, so a takeover
   * (which updates the row) waits until the write commits — or finds it had the epoch first.
   */
  readonly fence = async (q: PgQuery, runId: string): Promise<number> => {
    const held = this.#held.get(runId);
    if (!held) throw internal('run_lease_required', `A write of run ${runId} needs this process's lease of it.`);
    const rows = await q(
      'SELECT 1 FROM run_leases WHERE run_id = $1 AND epoch = $2 AND owner_instance = $3 AND NOT released FOR SHARE',
      [runId, held.epoch, this.instanceId],
    );
    if (rows.length === 0) {
      held.lost = true;
      throw runLeaseLost(runId, held.epoch);
    }
    return held.epoch;
  };

  #scheduleRenewal(): void {
    if (this.#renewal) return;
    this.#renewal = setInterval(() => void this.#renew(), Math.max(50, Math.floor(this.#leaseMs / 3)));
    this.#renewal.unref();
  }

  /** Extend every lease held here; one whose epoch moved (or that was released elsewhere) is lost. */
  async #renew(): Promise<void> {
    const held = [...this.#held.entries()].filter(([, h]) => !h.lost);
    if (held.length === 0) {
      clearInterval(this.#renewal);
      this.#renewal = undefined;
      return;
    }
    try {
      const renewed = await this.#db.query<{ run_id: string; epoch: string }>(
        `UPDATE run_leases AS l SET lease_expires_at = now() + make_interval(secs => $2)
           FROM unnest($3::text[], $4::bigint[]) AS h (run_id, epoch)
          WHERE l.run_id = h.run_id AND l.epoch = h.epoch AND l.owner_instance = $1 AND NOT l.released
          RETURNING l.run_id, l.epoch`,
        [this.instanceId, this.#leaseMs / 1000, held.map(([id]) => id), held.map(([, h]) => h.epoch)],
      );
      const kept = new Set(renewed.map((r) => `${r.run_id}\u0000${r.epoch}`));
      for (const [id, h] of held) if (!kept.has(`${id}\u0000${h.epoch}`) && this.#held.get(id) === h) h.lost = true;
    } catch {
      // The server is unreachable: nothing is renewed, and every write fails in the database anyway.
    }
  }

  // ── records ────────────────────────────────────────────────────────────────────────────

  async readRecord(runId: string): Promise<RunRecord | undefined> {
    this.#leases.liveFor(runId);
    if (!isRunId(runId)) return undefined;
    const [row] = await this.#q<{ body: string }>('SELECT body FROM run_records WHERE run_id = $1', [runId]);
    return row ? decodeRecord(runId, row.body) : undefined;
  }

  async writeRecord(lease: RunLease, record: RunRecord, options: { fault?: string } = {}): Promise<void> {
    this.#leases.requireLease(lease, record.runId);
    const encoded = encodeRecord(record);
    if (options.fault) faultPoint(`${options.fault}.before-rename`);
    await this.#ready();
    await this.#db
      .transaction(async (q) => {
        await this.fence(q, record.runId);
        await q(
          'INSERT INTO run_records (run_id, owner_root, body) VALUES ($1, $2, $3) ON CONFLICT (run_id) DO UPDATE SET owner_root = EXCLUDED.owner_root, body = EXCLUDED.body',
          [record.runId, record.ownerRoot, encoded],
        );
      })
      .catch((e: unknown) => {
        throw isLoopxError(e) ? e : pgFailure(e, this.#db.schema);
      });
    if (options.fault) faultPoint(`${options.fault}.after-rename`);
  }

  // ── imports ────────────────────────────────────────────────────────────────────────────

  async beginImport(runId: string): Promise<ImportLease> {
    this.#leases.live();
    checkRunId(runId);
    const token = `${this.instanceId}/${randomBytes(8).toString('hex')}`;
    // An importer that died leaves its row to expire after one lease length, as a run lease does.
    const tryLock = async (): Promise<boolean> =>
      (
        await this.#q(
          `INSERT INTO run_import_leases AS l (run_id, owner_token, lease_expires_at) VALUES ($1, $2, now() + make_interval(secs => $3))
           ON CONFLICT (run_id) DO UPDATE SET owner_token = EXCLUDED.owner_token, lease_expires_at = EXCLUDED.lease_expires_at
           WHERE l.lease_expires_at <= now() RETURNING 1`,
          [runId, token, this.#leaseMs / 1000],
        )
      ).length === 1;
    await this.#leases.waitForImportLock(runId, tryLock, this.#importWaitMs);
    return this.#leases.importLease(runId, async () => {
      await this.#q('DELETE FROM run_import_leases WHERE run_id = $1 AND owner_token = $2', [runId, token]).catch(
        () => undefined,
      );
    });
  }

  // ── roots and lifetimes ────────────────────────────────────────────────────────────────

  async bindRoot(rootId: string, directory: RootDirectoryIdentity): Promise<void> {
    this.#leases.live();
    await bindRoot(
      this.#roots,
      rootId,
      directory,
      async () => (await this.#q('SELECT 1 FROM run_records WHERE owner_root = $1 LIMIT 1', [rootId])).length > 0,
    );
  }

  async rebindRoot(rootId: string, directory: RootDirectoryIdentity): Promise<RebindOutcome> {
    this.#leases.live();
    return rebindRoot(this.#roots, rootId, directory);
  }

  async supersedeLifetime(request: LifetimeSupersessionRequest): Promise<LifetimeSupersessionOutcome> {
    this.#leases.live();
    return supersedeLifetime(this.#lifetimes, request);
  }

  async lifetimeSupersession(goalInstanceId: string): Promise<LifetimeSupersession | undefined> {
    this.#leases.liveRead();
    return readLifetime(this.#lifetimes, goalInstanceId);
  }

  async lifetimesSupersededIn(sourceRoot: string, goalId: string): Promise<LifetimeSupersession[]> {
    this.#leases.liveRead();
    return lifetimesSupersededIn(this.#lifetimes, sourceRoot, goalId);
  }

  async revision(): Promise<number> {
    this.#leases.liveRead();
    return lifetimesRevision(this.#lifetimes);
  }

  async rootBound(rootId: string): Promise<boolean> {
    this.#leases.liveRead();
    return (await this.#roots.get(rootId)) !== undefined;
  }

  async rootDirectory(rootId: string): Promise<string | undefined> {
    this.#leases.liveRead();
    const bound = await this.#roots.get(rootId);
    return bound !== undefined && stillThere(bound) ? bound.path : undefined;
  }

  async observeWorkHead(head: WorkHead): Promise<WorkMark> {
    this.#leases.live();
    return observeWorkHead(this.#workMarks(), head);
  }

  async rewindWorkMark(head: WorkHead): Promise<WorkMark> {
    this.#leases.live();
    return rewindWorkMark(this.#workMarks(), head);
  }

  async activation(): Promise<ActivationSetting> {
    this.#leases.liveRead();
    return readActivation(this.#settingTable());
  }

  async setActivation(request: { readonly disabled: boolean; readonly reason?: string }): Promise<ActivationSetting> {
    this.#leases.live();
    return writeActivation(this.#settingTable(), request);
  }

  #settingTable(): WorkMarkTable {
    return {
      get: async (key) =>
        (await this.#q<{ body: string }>('SELECT body FROM authority_settings WHERE name = $1', [key]))[0]?.body,
      put: async (key, encoded) => {
        await this.#q(
          'INSERT INTO authority_settings (name, body) VALUES ($1, $2) ON CONFLICT (name) DO UPDATE SET body = EXCLUDED.body',
          [key, encoded],
        );
      },
    };
  }

  #workMarks(): WorkMarkTable {
    return {
      get: async (key) =>
        (await this.#q<{ body: string }>('SELECT body FROM work_marks WHERE store_key = $1', [key]))[0]?.body,
      put: async (key, encoded) => {
        await this.#q(
          'INSERT INTO work_marks (store_key, body) VALUES ($1, $2) ON CONFLICT (store_key) DO UPDATE SET body = EXCLUDED.body',
          [key, encoded],
        );
      },
    };
  }

  #rootTable(): RootBindingTable {
    type Row = { dev: string; ino: string; path: string };
    return {
      get: async (rootId) => {
        const [row] = await this.#q<Row>('SELECT dev, ino, path FROM root_bindings WHERE root_id = $1', [rootId]);
        return row && { dev: row.dev, ino: row.ino, path: row.path };
      },
      create: async (rootId, id) =>
        (
          await this.#q(
            'INSERT INTO root_bindings (root_id, dev, ino, path) VALUES ($1, $2, $3, $4) ON CONFLICT (root_id) DO NOTHING RETURNING 1',
            [rootId, id.dev, id.ino, id.path],
          )
        ).length === 1,
      put: async (rootId, id) => {
        await this.#q(
          'INSERT INTO root_bindings (root_id, dev, ino, path) VALUES ($1, $2, $3, $4) ON CONFLICT (root_id) DO UPDATE SET dev = EXCLUDED.dev, ino = EXCLUDED.ino, path = EXCLUDED.path',
          [rootId, id.dev, id.ino, id.path],
        );
      },
    };
  }

  #lifetimeTable(): LifetimeTable {
    return {
      get: async (id) =>
        (
          await this.#q<{ body: string }>('SELECT body FROM lifetime_supersessions WHERE goal_instance_id = $1', [id])
        )[0]?.body,
      list: async () =>
        (await this.#q<{ goal_instance_id: string }>('SELECT goal_instance_id FROM lifetime_supersessions')).map(
          (r) => r.goal_instance_id,
        ),
      create: async (id, encoded) =>
        (
          await this.#q(
            'INSERT INTO lifetime_supersessions (goal_instance_id, body) VALUES ($1, $2) ON CONFLICT (goal_instance_id) DO NOTHING RETURNING 1',
            [id, encoded],
          )
        ).length === 1,
    };
  }

  // ── plumbing ───────────────────────────────────────────────────────────────────────────

  /** The component's schema version, once (a refusal is not remembered: a schema migrated later opens). */
  #ready(): Promise<void> {
    return (this.#checked ??= requireSchemaVersion(
      this.#db,
      RUN_AUTHORITY_COMPONENT,
      RUN_AUTHORITY_PG_MIGRATIONS,
    ).catch((e: unknown) => {
      this.#checked = undefined;
      throw e;
    }));
  }

  /** One statement on its own (autocommit), after the version check; a server failure is typed. */
  async #q<R extends Record<string, unknown> = Record<string, unknown>>(
    sql: string,
    params: readonly unknown[] = [],
  ): Promise<R[]> {
    await this.#ready();
    try {
      return await this.#db.query<R>(sql, params);
    } catch (e) {
      throw isLoopxError(e) ? e : pgFailure(e, this.#db.schema);
    }
  }

  /** Number of outstanding run and import leases (observable drain). */
  get outstandingLeases(): number {
    return this.#leases.outstanding;
  }

  close(): Promise<void> {
    return this.#leases.close(() => {
      clearInterval(this.#renewal);
      this.#renewal = undefined;
      void this.#keys.close();
    });
  }

  /** Test hook: the host key buffers, to observe that shutdown zeroes them. */
  keyBuffersForTest(): readonly Buffer[] {
    return this.#keys.keyBuffersForTest();
  }
}

export const openPgRunAuthority = (options: PgAuthorityOptions): PgRunAuthority => new PgRunAuthority(options);

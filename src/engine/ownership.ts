/**
 * A run's ownership through the per-user run authority: the run's exclusive lock (the authority's
 * lease), its durable authority record and the transitions the engine writes to it, and this
 * root's identity as the record's owner. The kernel and the transfer protocol change a record only
 * through here; the authority holds the keys and the locks, this module only decides which record
 * a step writes.
 *
 * Rules it keeps:
 * - Every run has a record, and it names one owner root by its random id. A run whose record names
 *   another root is `run_moved` here — whoever holds its lock — and never runs again in this root.
 * - Records are written only under the run's lease, and each durable write passes its named fault
 *   point (`authority.resume`, `authority.tombstone`, …) for the crash tests.
 * - Continuing execution needs an ACTIVE record. Local resume moves SUSPENDED → ACTIVE at the next
 *   transition generation, so the claim of the last export dies and that snapshot can never be
 *   imported; an IMPORTING record of this root is completed to ACTIVE.
 * - A run that ended gets its tombstone (TERMINAL, at the next transition generation) before its
 *   lock is released; a tombstoned record is never resumed or imported.
 * - A root id counts only from the directory the authority bound it to: a byte copy of a root is
 *   `root_is_copy` the first time it asks for its id, and so owns no runs.
 * - A root belongs to one run authority. It records that authority (a digest of its scope) in its
 *   run store when first bound — a root made before it was recorded takes the authority that
 *   already holds its binding — and a writer under any other authority is
 *   `root_authority_mismatch`, as is one under an authority that never bound a root with committed
 *   work. The move to another authority is the operator's recorded `adoptAuthority`
 *   (`loopx authority bind-root --adopt`), confirmed by digest.
 * - A root keeps the highest authority revision it has seen: an authority whose record of
 *   superseded lifetimes went back (or missing) is `authority_rolled_back`.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { conflict, internal, rejected, type LoopxError } from '../core/index.js';
import { TERMINAL_LIFECYCLES } from '../snapshot/index.js';
import { LAYOUT } from '../owners/index.js';
import {
  authorityRolledBack,
  rootAuthorityMismatch,
  rootDirectoryIdentity,
  type RebindOutcome,
  type RunAuthority,
  type RunLease,
  type RunRecord,
} from '../run-authority/index.js';
import type { RunStore } from './run-store/contract.js';
import { headOf, RUN_ID, runNotFound, terminalError } from './runs.js';

/** What `adoptAuthority` answers: digests shortened to 16 hex (enough to compare, never the scope). */
export interface AuthorityAdoption {
  readonly root_id: string;
  readonly from_authority: string | null;
  readonly to_authority: string;
  readonly digest: string;
  readonly state: 'preview' | 'adopted' | 'unchanged';
}

const rootRequired = (): LoopxError => internal('root_required', 'Binding needs a runtime root directory.');

const LOCK_ATTEMPTS = 20;
const LOCK_PAUSE_MS = 5;

export class RunOwnership {
  readonly authority: RunAuthority;
  readonly #root: string | undefined;
  readonly #store: () => RunStore;
  #rootId: string | undefined;

  /** `store` opens the root's run store on first use (the root id lives there). */
  constructor(options: {
    readonly authority: RunAuthority;
    readonly root: string | undefined;
    readonly store: () => RunStore;
  }) {
    this.authority = options.authority;
    this.#root = options.root;
    this.#store = options.store;
  }

  /**
   * This root's random identity, proved against the directory the authority bound it to, under
   * the authority the root belongs to (see the header).
   */
  async rootId(): Promise<string> {
    if (this.#rootId === undefined) {
      const store = this.#store();
      // A root that had no id yet was never bound by any authority: this one binds it, whatever it holds.
      const hadId = (await store.readRootMeta('root_id')) !== undefined;
      const id = await store.rootId();
      if (this.#root !== undefined) {
        const recorded = await store.readRootMeta('authority_scope');
        const mine = this.authorityDigest();
        if (recorded !== undefined && recorded !== mine) throw rootAuthorityMismatch('other');
        if (
          recorded === undefined &&
          hadId &&
          !(await this.authority.rootBound(id)) &&
          (await this.#hasCommittedWork(store))
        )
          throw rootAuthorityMismatch('never_bound');
        const { now, seen } = await this.#checkRevision(store);
        await this.authority.bindRoot(id, rootDirectoryIdentity(this.#root));
        if (recorded === undefined) await store.writeRootMeta('authority_scope', mine);
        if (now > seen) await store.writeRootMeta('authority_revision', String(now));
      }
      this.#rootId = id;
    }
    return this.#rootId;
  }

  /** A digest of this authority's scope: what a root records of the authority it belongs to (the scope itself stays out of the root). */
  authorityDigest(): string {
    return createHash('sha256').update('loopx.root-authority/v1\0').update(this.authority.scopeId).digest('hex');
  }

  /** The authority's revision now and the highest this root saw; `authority_rolled_back` when it is below what the root saw. */
  async #checkRevision(store: RunStore): Promise<{ now: number; seen: number }> {
    const seen = Number((await store.readRootMeta('authority_revision')) ?? '0');
    const now = await this.authority.revision();
    if (now < seen) throw authorityRolledBack(now, seen);
    return { now, seen };
  }

  /** A run recorded here, or a Goal made here: the root holds work some authority's writers made. */
  async #hasCommittedWork(store: RunStore): Promise<boolean> {
    if ((await store.list()).length > 0) return true;
    const goals = join(this.#root!, LAYOUT.goalsDir);
    return existsSync(goals) && readdirSync(goals).length > 0;
  }

  /** The operator's explicit binding of this root to its directory; refused while the bound original exists. */
  async bindRootDirectory(): Promise<{ readonly root_id: string; readonly binding: RebindOutcome }> {
    if (this.#root === undefined) throw rootRequired();
    const store = this.#store();
    const id = await store.rootId();
    const recorded = await store.readRootMeta('authority_scope');
    if (recorded !== undefined && recorded !== this.authorityDigest()) throw rootAuthorityMismatch('other');
    const binding = await this.authority.rebindRoot(id, rootDirectoryIdentity(this.#root));
    if (recorded === undefined) await store.writeRootMeta('authority_scope', this.authorityDigest());
    this.#rootId = id;
    return { root_id: id, binding };
  }

  /**
   * `loopx authority bind-root --adopt`: move this root to this authority. Without `confirm` it
   * changes nothing and answers the digest to confirm — over the root id and both authorities'
   * digests — so what the operator confirmed is what is done. With the digest, the root records
   * the new authority (and the move in its history) and the authority binds the root.
   */
  async adoptAuthority(confirm: string | undefined): Promise<AuthorityAdoption> {
    if (this.#root === undefined) throw rootRequired();
    const store = this.#store();
    const id = await store.rootId();
    const from = (await store.readRootMeta('authority_scope')) ?? null;
    const to = this.authorityDigest();
    const digest = createHash('sha256')
      .update(JSON.stringify({ root_id: id, from, to }))
      .digest('hex');
    const view = {
      root_id: id,
      from_authority: from === null ? null : from.slice(0, 16),
      to_authority: to.slice(0, 16),
      digest,
    };
    if (from === to) return { ...view, state: 'unchanged' };
    if (confirm === undefined) return { ...view, state: 'preview' };
    if (confirm !== digest)
      throw rejected(
        'authority_adoption_digest_mismatch',
        'The digest does not match what this adoption would do now.',
        {
          nextAction: 'preview it again: loopx authority bind-root --adopt',
        },
      );
    const seen = await this.authority.revision();
    await this.authority.rebindRoot(id, rootDirectoryIdentity(this.#root));
    const history = JSON.parse((await store.readRootMeta('authority_history')) ?? '[]') as unknown[];
    await store.writeRootMeta(
      'authority_history',
      JSON.stringify([...history, { from, to, at: new Date().toISOString() }]),
    );
    await store.writeRootMeta('authority_revision', String(seen));
    await store.writeRootMeta('authority_scope', to);
    this.#rootId = id;
    return { ...view, state: 'adopted' };
  }

  // ── locks ────────────────────────────────────────────────────────────────────────────

  /** The run's lease, or undefined while another process (or call) holds it. */
  tryLock(runId: string): Promise<RunLease | undefined> {
    if (!RUN_ID.test(runId)) throw runNotFound(runId);
    return this.authority.acquireRun(runId);
  }

  /** The run's lease, or `run_busy` — `run_moved` instead when another root owns the run. */
  async lock(runId: string): Promise<RunLease> {
    const lease = await this.tryLockPatiently(runId);
    if (!lease) {
      // Busy only when it is ours: a run another root owns is run_moved, whoever holds its lock now.
      const record = await this.authority.readRecord(runId);
      if (record && (await this.#store().get(runId)) && record.ownerRoot !== (await this.rootId()))
        await this.ownedRecord(runId);
      throw conflict('run_busy', `Run ${runId} is being driven by another process or call.`, {
        nextAction: `wait for it, or follow it: loopx run events ${runId} --follow`,
      });
    }
    return lease;
  }

  /**
   * The run's lock, tried a few times over about a tenth of a second before giving up: a reader
   * that asks whether the run is driven (`isDriven`, the daemon's run view) holds it for an
   * instant, and that instant must not become a writer's `run_busy`. A driver holds it for a
   * whole turn or more, so it is still refused.
   */
  private async tryLockPatiently(runId: string): Promise<RunLease | undefined> {
    for (let attempt = 0; ; attempt++) {
      const lease = await this.tryLock(runId);
      if (lease || attempt >= LOCK_ATTEMPTS) return lease;
      await delay(LOCK_PAUSE_MS);
    }
  }

  /** Whether a live driver (any process) holds the run's lock now. */
  async isDriven(runId: string): Promise<boolean> {
    const lease = await this.tryLock(runId);
    if (!lease) return true;
    await lease.release();
    return false;
  }

  /** Release a run lock; a run that ended while held gets its tombstone first. */
  async release(lease: RunLease, runId: string): Promise<void> {
    try {
      const head = await this.#store().get(runId);
      if (!lease.released && head && TERMINAL_LIFECYCLES.includes(head.lifecycle)) {
        const record = await this.authority.readRecord(runId);
        // The tombstone is a transition: a claim bound earlier stays verifiable (so its snapshot is
        // refused as tombstoned) but no longer counts as this generation's export.
        if (record && record.ownerRoot === (await this.rootId()) && record.state !== 'TERMINAL')
          await this.tombstone(lease, record);
      }
    } finally {
      await lease.release();
    }
  }

  // ── records ──────────────────────────────────────────────────────────────────────────

  /** The run's authority record, which must name this root as its owner. */
  async ownedRecord(runId: string): Promise<RunRecord> {
    const record = await this.authority.readRecord(runId);
    if (!record) {
      throw rejected('run_authority_record_missing', `The run authority has no record of run ${runId}.`, {
        nextAction: 'use the authority directory this root was used with (--authority-dir)',
      });
    }
    if (record.ownerRoot !== (await this.rootId())) {
      throw conflict('run_moved', `Run ${runId} is owned by another runtime root; this copy will never run again.`, {
        nextAction: 'continue the run in the root that imported it',
      });
    }
    return record;
  }

  /** Ownership for continuing execution: owned, and ACTIVE. */
  async activeRecord(runId: string): Promise<void> {
    const record = await this.ownedRecord(runId);
    if (record.state === 'ACTIVE') return;
    if (record.state === 'TERMINAL') throw await this.#tombstonedError(runId);
    throw conflict('run_not_active', `Run ${runId} is ${record.state} in the run authority.`, {
      nextAction: `resume it: loopx run resume ${runId}`,
    });
  }

  /**
   * Local resume's authority step, while the kernel is still suspended: SUSPENDED → ACTIVE at the
   * next transition generation (the old claim dies, so that snapshot can never be imported);
   * IMPORTING here with the kernel run present → ACTIVE (completes an interrupted import).
   */
  async activateRecord(lease: RunLease, runId: string): Promise<void> {
    const record = await this.ownedRecord(runId);
    if (record.state === 'ACTIVE') return;
    if (record.state === 'TERMINAL') throw await this.#tombstonedError(runId);
    const next: RunRecord =
      record.state === 'SUSPENDED'
        ? {
            runId,
            state: 'ACTIVE',
            transitionGeneration: record.transitionGeneration + 1,
            ownerRoot: record.ownerRoot,
            updatedAt: '',
          }
        : { ...record, state: 'ACTIVE' };
    await this.writeRecord(lease, next, 'authority.resume');
  }

  /** The run has ended: TERMINAL at the next transition generation. */
  tombstone(lease: RunLease, record: RunRecord): Promise<void> {
    return this.writeRecord(
      lease,
      { ...record, state: 'TERMINAL', transitionGeneration: record.transitionGeneration + 1 },
      'authority.tombstone',
    );
  }

  /** A durable record write under the run's lease; `fault` names its crash points. */
  writeRecord(lease: RunLease, record: RunRecord, fault?: string): Promise<void> {
    return this.authority.writeRecord(
      lease,
      { ...record, updatedAt: new Date().toISOString() },
      fault ? { fault } : {},
    );
  }

  /** The authority tombstoned the run; a kernel not yet terminal means a cancel was interrupted. */
  async #tombstonedError(runId: string): Promise<LoopxError> {
    const head = await headOf(this.#store(), runId);
    if (TERMINAL_LIFECYCLES.includes(head.lifecycle)) return terminalError(head);
    return rejected(
      'run_cancel_incomplete',
      `Run ${runId} is tombstoned in the run authority but its cancel did not finish here.`,
      {
        nextAction: `finish it: loopx run cancel ${runId}`,
      },
    );
  }
}

/**
 * The shape every storage port of an owner shares (session, quota, scheduler, effect; work keeps its own
 * contract in work/contract.ts, which this one follows): Promise-based reads and one conditional
 * `commit` whose outcome is data, and the owner-side loop that turns read → decide → commit into
 * one answer. Ports store rows; they never decide. No driver type appears here.
 *
 * Commit outcomes, for every port:
 * - `applied`: everything the write names landed, atomically and durably.
 * - `conflict`: the write's precondition did not hold on the current rows (`exists`: a row it
 *   creates is there already; `missing`: a row it changes is not there; `changed`: a row it
 *   changes is not the one the decision read). Nothing was written.
 * - `ambiguous`: the commit point itself failed and the port cannot prove whether the write
 *   landed — never reported as applied or failed. The owner reads the rows back: when they show
 *   the write's after-image the write applied; otherwise the outcome stays unproved
 *   (`store_outcome_unproved`) and the caller retries the SAME request — every precondition makes
 *   a write apply at most once, so a retry can never apply it twice.
 * - `failed`: provably nothing was written (`code` says why, e.g. `provider_closed`,
 *   `provider_busy`); retrying is safe.
 * A commit rejects instead of answering only when a row it must check does not decode
 * (`<owner>_store_corrupt`): a damaged store is never written to.
 */
import { canonicalJson } from '../core/index.js';
import { conflict, internal, type LoopxError } from '../core/index.js';

export type ConflictReason = 'exists' | 'missing' | 'changed';

export type CommitResult =
  | { readonly status: 'applied' }
  | { readonly status: 'conflict'; readonly reason: ConflictReason }
  | { readonly status: 'ambiguous' }
  | { readonly status: 'failed'; readonly code: string };

export const APPLIED: CommitResult = { status: 'applied' };
export const conflictOf = (reason: ConflictReason): CommitResult => ({ status: 'conflict', reason });

/** One decision of an owner: the answer, and the write that makes it true (none for a readback). */
export type Decided<T, W> =
  | { readonly result: T }
  | {
      readonly result: T;
      readonly write: W;
      /** After an ambiguous commit: reads the rows back; true when they show this write's after-image. */
      readonly landed: () => Promise<boolean>;
    };

/** Re-reads and re-decides at most this many times when other writers keep winning. */
export const MAX_COMMIT_ATTEMPTS = 8;

/**
 * Runs `decide` (read the current rows, ask the rules) and commits what it decided. A conflict
 * means another writer changed the rows in between: read and decide again, so a racing duplicate
 * turns into the readback the rules give for it, and a fenced writer into its typed refusal.
 */
export async function decideAndCommit<T, W>(
  owner: string,
  commit: (write: W) => Promise<CommitResult>,
  decide: () => Promise<Decided<T, W>>,
): Promise<T> {
  for (let attempt = 1; attempt <= MAX_COMMIT_ATTEMPTS; attempt++) {
    const d = await decide();
    if (!('write' in d)) return d.result;
    const r = await commit(d.write);
    switch (r.status) {
      case 'applied':
        return d.result;
      case 'conflict':
        continue;
      case 'ambiguous':
        if (await d.landed()) return d.result;
        throw outcomeUnproved(owner);
      case 'failed':
        throw commitFailed(owner, r.code);
    }
  }
  throw conflict(
    'store_commit_contention',
    `Other writers kept changing the ${owner} store; the request was not applied.`,
    {
      nextAction: 'retry the same request',
      details: { owner, attempts: MAX_COMMIT_ATTEMPTS },
    },
  );
}

/** True when `stored` is exactly `afterImage` (field for field, as canonical JSON). */
export const shows = (stored: object | undefined, afterImage: object): boolean =>
  stored !== undefined && canonicalJson(stored) === canonicalJson(afterImage);

export const outcomeUnproved = (owner: string): LoopxError =>
  internal('store_outcome_unproved', `The ${owner} store could not confirm whether the write landed.`, {
    nextAction: 'retry the same request (it applies at most once)',
    details: { owner },
  });

export const commitFailed = (owner: string, code: string): LoopxError =>
  internal('store_commit_failed', `The ${owner} store refused the write (${code}); nothing was written.`, {
    nextAction: 'retry the same request',
    details: { owner, provider_code: code },
  });

/** The code of a row that does not decode, per owner over a storage port (one closed set: built once, here). */
const STORE_CORRUPT = {
  session: 'session_store_corrupt',
  quota: 'quota_store_corrupt',
  scheduler: 'scheduler_store_corrupt',
  effect: 'effect_store_corrupt',
} as const;
export type StoreOwner = keyof typeof STORE_CORRUPT;

/** A stored row of `owner` that does not decode (`field` names the column): the store was damaged under us — stop, never guess. */
export const storeCorrupt = (owner: StoreOwner, file: string, cause: { readonly field: string }): LoopxError =>
  internal(STORE_CORRUPT[owner], `${file} holds a malformed row (${cause.field}).`, {
    nextAction: `run the backup verifier on a copy of ${file}`,
    cause,
  });

/** A read that failed for a reason other than a typed refusal (the disk, the connection): nothing was decided. */
export const storeReadFailed = (owner: string, file: string, cause: unknown): LoopxError =>
  internal('store_read_failed', `Reading ${file} failed.`, {
    cause,
    nextAction: 'check the disk or the database server, then retry',
    details: { owner },
  });

/** A read or commit on a closed port. */
export const providerClosed = (owner: string): LoopxError =>
  internal('provider_closed', `The ${owner} store is closed.`, { details: { owner } });

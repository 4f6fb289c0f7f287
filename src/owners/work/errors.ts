/**
 * Refusals of the work owner and its providers that more than one module raises, each built only
 * here (one kind, one message shape, one next action). Refusals raised by one function stay beside it.
 */
import { conflict, internal, notFound, rejected, type LoopxError } from '../../core/index.js';
import { providerClosed as closedPort } from '../port.js';

/** A call on a closed provider: a caller's bug, never a verdict on the store (built once, in owners/port.ts). */
export const providerClosed = (): LoopxError => closedPort('work');

/** The store's own history or head breaks the provider contract (a gap, a foreign head): the store is damaged, so nothing is written to it. */
export const protocolViolation = (why: string, details?: Record<string, unknown>): LoopxError =>
  rejected('provider_protocol_violation', `The work store breaks its protocol: ${why}.`, {
    nextAction: 'do not write to this store; inspect a copy with the recovery read side',
    ...(details ? { details } : {}),
  });

/** A committed work event the work owner cannot apply or read. */
export const workEventInvalid = (why: string, details?: Record<string, unknown>): LoopxError =>
  rejected('work_event_invalid', `A work event cannot be applied: ${why}.`, {
    nextAction: 'inspect a copy with the recovery read side',
    ...(details ? { details } : {}),
  });

/** A write to a store whose Goal work moved to another (`move_out`): it takes no write from then on. */
export const workStoreMoved = (goalId: string, movedTo: { readonly provider: string }): LoopxError =>
  conflict(
    'work_store_moved',
    `Goal ${goalId}'s work moved to another store (${movedTo.provider}); this one takes no more writes.`,
    {
      nextAction: `work with the Goal where it continues, through its root: loopx todo list --goal ${goalId}`,
      details: { goal_id: goalId, provider: movedTo.provider },
    },
  );

/** A copy of work.db that cannot be read (not a regular file, unreadable, not openable). */
export const workDbUnreadable = (why: string, cause?: unknown): LoopxError =>
  rejected('work_db_unreadable', `The work database copy cannot be read: ${why}.`, {
    nextAction: 'point at a complete copy of the work.db file',
    ...(cause === undefined ? {} : { cause }),
  });

export const workDbTooLarge = (maxBytes: number, details?: Record<string, unknown>): LoopxError =>
  rejected('work_db_too_large', `The work database copy exceeds ${maxBytes} bytes.`, {
    nextAction: 'inspect it with sqlite3 directly',
    ...(details ? { details } : {}),
  });

/** Someone other than the lease holder acts on a leased Todo. */
export const leaseNotHolder = (todoId: string, who: string): LoopxError =>
  conflict('lease_not_holder', `${who} does not hold the lease of Todo ${todoId}.`, {
    nextAction: 'stop working on this Todo: only its lease holder acts on it',
    details: { todo_id: todoId },
  });

export const leaseVersionMismatch = (todoId: string, version: number, expectedVersion: number): LoopxError =>
  conflict('lease_version_mismatch', `The lease of Todo ${todoId} is at version ${version}, not ${expectedVersion}.`, {
    nextAction: 'read the lease again and retry with its version',
    details: { todo_id: todoId, expected_version: expectedVersion, version },
  });

/** A Goal whose work store does not exist (opened without `create`). */
export const workStoreMissing = (goalId: string): LoopxError =>
  notFound('work_store_missing', 'The Goal has no work database.', {
    nextAction: `create the Goal first: loopx goal create ${goalId} --title TITLE`,
  });

/** The store's own metadata (schema, identity, incarnation, head row) cannot be trusted. */
export const metadataInvalid = (why: string): LoopxError =>
  rejected('work_store_metadata_invalid', `The work database's metadata is invalid: ${why}.`, {
    nextAction: 'do not write to it; inspect a copy with the recovery read side',
  });

/** A read of a live store failed below the provider (disk, database server). */
export const workStoreReadFailed = (cause: unknown): LoopxError =>
  internal('work_store_read_failed', 'Reading the work database failed.', {
    cause,
    nextAction: 'check the disk or the database server, then retry',
  });

/** `revokeAuthority` on a store that grants none (no active lease, no writer fence). */
export const nothingToRevoke = (goalId: string): LoopxError =>
  conflict(
    'work_nothing_to_revoke',
    `Goal ${goalId} holds no active lease and no writer fence; there is nothing to revoke.`,
    { details: { goal_id: goalId } },
  );

export const storeReplaced = (goalId: string): LoopxError =>
  rejected(
    'work_store_replaced',
    'The Goal’s work store was removed or replaced since this process opened it; it is not written.',
    {
      nextAction: `reopen the Goal's work (a replaced store must be adopted, not written): loopx goal show ${goalId}`,
      details: { goal_id: goalId },
    },
  );

/** The work owner's limits and input checks: every request field is checked here before a plan is made. */
import { rejected, type LoopxError } from '../../core/index.js';
import type { JsonValue } from './contract.js';
import { TODO_STATUSES, type FenceToken, type TodoStatus, type WorkOperation } from './model.js';
import type { LeaseProof } from './api.js';

export const OPERATION_ID = /^[A-Za-z0-9][A-Za-z0-9._:@/+=-]{0,199}$/;
export const TODO_ID = /^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$/;
export const MAX_TITLE = 1000;
export const MAX_TEXT = 64 * 1024;
export const MAX_ACTOR = 200;
export const MIN_LEASE_TTL_MS = 1000;
export const MAX_LEASE_TTL_MS = 7 * 24 * 60 * 60 * 1000;
export const MAX_PRIORITY = 1_000_000;
/** Todo updates in one `update_todos` batch. */
export const MAX_BATCH = 100;
/** Provider-revision conflicts retried (each re-evaluates against the fresh head) before giving up. */
export const MAX_ATTEMPTS = 16;
export const HISTORY_PAGE = 500;
export const REQUEST_SCHEMA = 'loopx_work_request_v0';
export const LEASE_OPERATIONS: ReadonlySet<WorkOperation> = new Set([
  'acquire_lease',
  'renew_lease',
  'transfer_lease',
  'release_lease',
]);

export const invalid = (field: string, rule: string): LoopxError =>
  rejected('work_request_invalid', `${field}: ${rule}.`, {
    nextAction: `fix ${field} and retry with a new operation id`,
    details: { field },
  });

export function text(field: string, v: unknown, max: number, allowEmpty = false): string {
  if (typeof v !== 'string' || (!allowEmpty && v.length === 0) || v.length > max)
    throw invalid(field, `a ${allowEmpty ? '' : 'non-empty '}string of at most ${max} characters`);
  return v;
}
export function nat(field: string, v: unknown): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < 0) throw invalid(field, 'a non-negative integer');
  return v;
}
export function todoId(v: unknown): string {
  if (typeof v !== 'string' || !TODO_ID.test(v))
    throw invalid('todo_id', '1–128 characters of A–Z a–z 0–9 . _ : -, starting with a letter or digit');
  return v;
}
export function status(v: unknown): TodoStatus {
  if (!(TODO_STATUSES as readonly unknown[]).includes(v)) throw invalid('status', `one of ${TODO_STATUSES.join(', ')}`);
  return v as TodoStatus;
}
export function priority(v: unknown): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || Math.abs(v) > MAX_PRIORITY)
    throw invalid('priority', `an integer between -${MAX_PRIORITY} and ${MAX_PRIORITY}`);
  return v;
}
export function ttl(v: unknown): number {
  if (typeof v !== 'number' || !Number.isSafeInteger(v) || v < MIN_LEASE_TTL_MS || v > MAX_LEASE_TTL_MS)
    throw invalid('ttl_ms', `an integer between ${MIN_LEASE_TTL_MS} and ${MAX_LEASE_TTL_MS}`);
  return v;
}
export const note = (v: unknown): string | null => (v === null ? null : text('note', v, MAX_TEXT, true));
export const actor = (field: string, v: unknown): string => text(field, v, MAX_ACTOR);
export function leaseProof(v: LeaseProof | undefined): LeaseProof | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'object' || v === null) throw invalid('lease', 'an object {owner, execution_key, lease_epoch}');
  return {
    owner: actor('lease.owner', v.owner),
    execution_key: actor('lease.execution_key', v.execution_key),
    lease_epoch: nat('lease.lease_epoch', v.lease_epoch),
  };
}
export function fenceToken(v: FenceToken | undefined): FenceToken | undefined {
  if (v === undefined) return undefined;
  if (typeof v !== 'object' || v === null || typeof v.fence_id !== 'string' || !Number.isSafeInteger(v.epoch))
    throw invalid('fence', 'a fence token {fence_id, epoch}');
  return { fence_id: v.fence_id, epoch: v.epoch };
}
/** Drops undefined members so the digest covers exactly the request's semantic fields (a copy: own members in order, as Object.fromEntries builds it). */
export function defined(o: Record<string, JsonValue | undefined>): Record<string, JsonValue> {
  const out: Record<string, JsonValue> = {};
  for (const k of Object.keys(o)) {
    const v = o[k];
    if (v === undefined) continue;
    if (k === '__proto__')
      Object.defineProperty(out, k, { value: v, enumerable: true, writable: true, configurable: true });
    else out[k] = v;
  }
  return out;
}

/**
 * The one place work providers encode and decode what they store: canonical JSON text for events,
 * projections and receipts, and the argument checks every provider applies the same way. Providers
 * store these bytes and hand back parsed copies; they never re-encode stored text.
 */
import { canonicalJsonEach, rejected } from '../../core/index.js';
import { MAX_SCAN_LIMIT, type JsonObject, type WorkCommitRequest, type WriterFence } from './contract.js';

export interface EncodedCommit {
  readonly operation_id: string;
  readonly request_digest: string;
  readonly expected_provider_revision: string;
  readonly events: string;
  readonly projection: string;
  readonly receipt: string;
}

const DIGEST = /^[0-9a-f]{64}$/;

/** Encodes a commit request, or names why it cannot be stored (`failed` code; nothing written). */
export function encodeCommit(request: WorkCommitRequest): EncodedCommit | { readonly failed: string } {
  if (
    typeof request.operation_id !== 'string' ||
    request.operation_id.length === 0 ||
    request.operation_id.length > 256
  ) {
    return { failed: 'commit_operation_id_invalid' };
  }
  if (typeof request.request_digest !== 'string' || !DIGEST.test(request.request_digest))
    return { failed: 'commit_request_digest_invalid' };
  if (typeof request.expected_provider_revision !== 'string') return { failed: 'commit_expected_revision_invalid' };
  if (!Array.isArray(request.events) || request.events.length === 0) return { failed: 'commit_events_empty' };
  if (request.writer_fence !== undefined && !isFence(request.writer_fence))
    return { failed: 'commit_writer_fence_invalid' };
  try {
    // One call: the Todo a commit names is in its events, its projection and its receipt, and is written once.
    const [events, projection, receipt] = canonicalJsonEach([
      request.events,
      request.next_projection,
      request.receipt,
    ]) as [string, string, string];
    return {
      operation_id: request.operation_id,
      request_digest: request.request_digest,
      expected_provider_revision: request.expected_provider_revision,
      events,
      projection,
      receipt,
    };
  } catch {
    return { failed: 'commit_not_json' };
  }
}

export const decodeObject = (text: string): JsonObject => JSON.parse(text) as JsonObject;
export const decodeEvents = (text: string): JsonObject[] => JSON.parse(text) as JsonObject[];

export function assertScanArguments(afterCursor: number, limit: number): void {
  if (!Number.isSafeInteger(afterCursor) || afterCursor < 0) {
    throw rejected('scan_cursor_invalid', 'A scan starts after a non-negative integer cursor.', {
      nextAction: 'pass a cursor of 0 or more',
    });
  }
  if (!Number.isSafeInteger(limit) || limit < 1 || limit > MAX_SCAN_LIMIT) {
    throw rejected('scan_limit_invalid', `A scan page holds 1 to ${MAX_SCAN_LIMIT} transactions.`, {
      nextAction: `pass a limit between 1 and ${MAX_SCAN_LIMIT}`,
    });
  }
}

const isFence = (v: unknown): v is WriterFence =>
  typeof v === 'object' &&
  v !== null &&
  typeof (v as WriterFence).fence_id === 'string' &&
  Number.isSafeInteger((v as WriterFence).epoch) &&
  (v as WriterFence).epoch >= 0;

/** The writer fence a head projection holds (its `fence` member), or null. */
export function fenceOf(head: JsonObject | null): WriterFence | null {
  const f = head?.fence;
  return isFence(f) ? { fence_id: f.fence_id, epoch: f.epoch } : null;
}

/** fenced_commit: true when the commit carries no fence token, or the one `current` holds. */
export const fenceHolds = (current: WriterFence | null, token: WriterFence | undefined): boolean =>
  token === undefined || (current !== null && current.fence_id === token.fence_id && current.epoch === token.epoch);

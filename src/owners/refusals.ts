/**
 * Refusals every owner shares, built only here. An operation id names one request in every owner
 * that keeps operation receipts (work) or an effect journal (effect).
 */
import { rejected, type LoopxError } from '../core/index.js';

/** The operation id was already used for a different request: a refused input (exit 3, HTTP 422), never a retry. */
export const operationIdentityMismatch = (operationId: string): LoopxError =>
  rejected('operation_identity_mismatch', `Operation ${operationId} was already used for a different request.`, {
    nextAction: 'read the original result under this operation id; a different request needs a new operation id',
    details: { operation_id: operationId },
  });

/**
 * A capture from a database service met rows its owner's reader refuses: the export would leave
 * them out, so the component is not captured (the backup records it unreadable, a hold) — never
 * exported without them.
 */
export const captureRowsInvalid = (owner: string, codes: readonly string[]): LoopxError =>
  rejected(
    'owner_capture_rows_invalid',
    `The ${owner} rows in the database include rows its reader refuses; the component was not captured.`,
    {
      nextAction: 'inspect the owner’s rows in the database; back up again once they are sound',
      details: { owner, codes: [...new Set(codes)].sort() },
    },
  );

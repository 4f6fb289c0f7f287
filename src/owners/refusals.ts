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

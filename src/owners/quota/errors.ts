/**
 * Typed refusals of the quota owner. Each code is stable and carries exactly one next action;
 * details hold ids and digests only.
 */
import { LoopxError, type ErrorKind, type LoopxErrorOptions } from '../../core/index.js';

export const QUOTA_ERROR_CODES = ['quota_input_invalid', 'quota_spend_conflict', 'quota_spend_not_found'] as const;
export type QuotaErrorCode = (typeof QUOTA_ERROR_CODES)[number];

export class QuotaError extends LoopxError {
  declare readonly code: QuotaErrorCode;
  constructor(kind: ErrorKind, code: QuotaErrorCode, message: string, options: LoopxErrorOptions & { nextAction: string }) {
    super(kind, code, message, options);
    this.name = 'QuotaError';
  }
}

export const isQuotaError = (e: unknown, code?: QuotaErrorCode): e is QuotaError => e instanceof QuotaError && (code === undefined || e.code === code);

export const invalidInput = (message: string, field: string): QuotaError =>
  new QuotaError('usage', 'quota_input_invalid', message, { nextAction: `correct ${field} and retry`, details: { field } });

export const spendConflict = (effectId: string, existingDigest: string, requestDigest: string): QuotaError =>
  new QuotaError('conflict', 'quota_spend_conflict', 'This settlement identity already debited a different request.', {
    nextAction: 'read the original entry; a different debit needs its own effect_id',
    details: { effect_id: effectId, existing_digest: existingDigest, request_digest: requestDigest },
  });

export const spendNotFound = (effectId: string): QuotaError =>
  new QuotaError('not_found', 'quota_spend_not_found', 'No spend entry with this effect id.', {
    nextAction: 'list the ledger of the Goal and use an existing effect id',
    details: { effect_id: effectId },
  });

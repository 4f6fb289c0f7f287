/**
 * Typed refusals of the quota owner. Each code is stable and carries exactly one next action;
 * details hold ids and digests only.
 */
import { OwnerError, ownerErrors } from '../owner-errors.js';

export const QUOTA_ERROR_CODES = ['quota_input_invalid', 'quota_spend_conflict', 'quota_spend_not_found'] as const;
export type QuotaErrorCode = (typeof QUOTA_ERROR_CODES)[number];

/** The quota owner's refusals (owner-errors.ts). */
export const QUOTA_ERRORS = ownerErrors('quota', 'QuotaError', QUOTA_ERROR_CODES);
export type QuotaError = OwnerError<QuotaErrorCode>;

export const isQuotaError = QUOTA_ERRORS.is;

export const invalidInput = (message: string, field: string): QuotaError =>
  new OwnerError(QUOTA_ERRORS, 'usage', 'quota_input_invalid', message, {
    nextAction: `correct ${field} and retry`,
    details: { field },
  });

export const spendConflict = (effectId: string, existingDigest: string, requestDigest: string): QuotaError =>
  new OwnerError(
    QUOTA_ERRORS,
    'conflict',
    'quota_spend_conflict',
    'This settlement identity already debited a different request.',
    {
      nextAction: 'read the original entry; a different debit needs its own effect_id',
      details: { effect_id: effectId, existing_digest: existingDigest, request_digest: requestDigest },
    },
  );

export const spendNotFound = (effectId: string): QuotaError =>
  new OwnerError(QUOTA_ERRORS, 'not_found', 'quota_spend_not_found', 'No spend entry with this effect id.', {
    nextAction: 'list the ledger of the Goal and use an existing effect id',
    details: { effect_id: effectId },
  });

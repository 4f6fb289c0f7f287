/**
 * Typed refusals of the effect owner. Each code is stable and carries exactly one next action;
 * details hold ids and outcomes only — never intents, receipts or URLs.
 */
import type { LoopxError } from '../../core/index.js';
import { OwnerError, ownerErrors } from '../owner-errors.js';
import { operationIdentityMismatch } from '../refusals.js';

export const EFFECT_ERROR_CODES = [
  'effect_input_invalid',
  'effect_target_unsafe',
  'effect_payload_too_large',
  'effect_not_found',
  'operation_identity_mismatch',
  'idempotency_key_in_use',
  'effect_dispatch_in_flight',
  'effect_not_dispatched',
  'effect_already_settled',
  'effect_not_held',
  'effect_not_reissuable',
  'effect_outcome_unknown',
  'effect_state_changed',
  'delivery_receiver_gone',
] as const;
export type EffectErrorCode = (typeof EFFECT_ERROR_CODES)[number];

/** The effect owner's refusals (owner-errors.ts). */
export const EFFECT_ERRORS = ownerErrors('effect', 'EffectError', EFFECT_ERROR_CODES);
export type EffectError = OwnerError<EffectErrorCode>;

export const isEffectError = EFFECT_ERRORS.is;

export const invalidInput = (message: string, field: string): EffectError =>
  new OwnerError(EFFECT_ERRORS, 'usage', 'effect_input_invalid', message, {
    nextAction: `correct ${field} and retry`,
    details: { field },
  });

export const targetUnsafe = (): EffectError =>
  new OwnerError(
    EFFECT_ERRORS,
    'rejected',
    'effect_target_unsafe',
    'An effect target is a public label: no credentials, query, fragment or spaces.',
    {
      nextAction: 'name the target by its scheme and host only (e.g. webhook:host:port)',
    },
  );

export const payloadTooLarge = (field: 'intent' | 'receipt', limit: number): EffectError =>
  new OwnerError(
    EFFECT_ERRORS,
    'rejected',
    'effect_payload_too_large',
    `The ${field} exceeds ${limit} bytes of canonical JSON.`,
    {
      nextAction: `store a smaller ${field} (a digest or a reference instead of the content)`,
      details: { field, limit },
    },
  );

export const effectNotFound = (operationId: string): EffectError =>
  new OwnerError(EFFECT_ERRORS, 'not_found', 'effect_not_found', 'No effect with this operation id.', {
    nextAction: 'list the effects of the Goal and use an existing operation id',
    details: { operation_id: operationId },
  });

/** A changed intent under a recorded operation id: the refusal every owner's operation ids share. */
export const identityMismatch = (operationId: string): LoopxError => operationIdentityMismatch(operationId);

export const keyInUse = (idempotencyKey: string, holder: string): EffectError =>
  new OwnerError(
    EFFECT_ERRORS,
    'conflict',
    'idempotency_key_in_use',
    'The idempotency key belongs to another operation.',
    {
      nextAction: 'retry under the original operation id, never under a new one',
      details: { idempotency_key: idempotencyKey, operation_id: holder },
    },
  );

export const dispatchInFlight = (operationId: string): EffectError =>
  new OwnerError(
    EFFECT_ERRORS,
    'conflict',
    'effect_dispatch_in_flight',
    'The effect was already dispatched and has no recorded outcome.',
    {
      nextAction: 'reconcile the effect by its original operation id; never dispatch it again',
      details: { operation_id: operationId },
    },
  );

export const notDispatched = (operationId: string): EffectError =>
  new OwnerError(
    EFFECT_ERRORS,
    'rejected',
    'effect_not_dispatched',
    'The effect was never dispatched, so its outcome cannot be committed or unknown.',
    {
      nextAction: 'dispatch it from the outbox first',
      details: { operation_id: operationId },
    },
  );

export const alreadySettled = (operationId: string, outcome: string): EffectError =>
  new OwnerError(EFFECT_ERRORS, 'conflict', 'effect_already_settled', `The effect is already settled as ${outcome}.`, {
    nextAction: 'read its receipt; a settled effect is never settled differently or dispatched again',
    details: { operation_id: operationId, outcome },
  });

export const notHeld = (operationId: string, outcome: string): EffectError =>
  new OwnerError(
    EFFECT_ERRORS,
    'rejected',
    'effect_not_held',
    `Only an unknown effect can be held; this one is ${outcome}.`,
    {
      nextAction: 'settle the effect as unknown first',
      details: { operation_id: operationId, outcome },
    },
  );

export const notReissuable = (operationId: string, outcome: string): EffectError =>
  new OwnerError(
    EFFECT_ERRORS,
    'rejected',
    'effect_not_reissuable',
    `Only an absent effect may be reissued; this one is ${outcome}.`,
    {
      nextAction:
        outcome === 'unknown' ? 'reconcile the effect by its original operation id first' : 'read its receipt instead',
      details: { operation_id: operationId, outcome },
    },
  );

/**
 * An effect was (or may have been) dispatched and its outcome is not known: thrown by the code
 * that dispatches it (a tool, a delivery) so that its caller records it as unknown — uncertain,
 * never retried, reconciled only under its original operation id. Kind `internal`: it is no
 * refusal, so nothing that treats typed refusals as "did not act" can mistake it for one.
 */
export const outcomeUnknown = (operationId: string, reason: string): EffectError =>
  new OwnerError(
    EFFECT_ERRORS,
    'internal',
    'effect_outcome_unknown',
    `The outcome of operation ${operationId} is unknown (${reason}).`,
    {
      nextAction: 'reconcile the effect by its original operation id; never dispatch it again',
      details: { operation_id: operationId, reason },
    },
  );

export const stateChanged = (operationId: string, expected: string, outcome: string): EffectError =>
  new OwnerError(
    EFFECT_ERRORS,
    'conflict',
    'effect_state_changed',
    `The effect is ${outcome} now, not ${expected} as it was read.`,
    {
      nextAction: 'read the effect again and decide on its current state',
      details: { operation_id: operationId, expected, outcome },
    },
  );

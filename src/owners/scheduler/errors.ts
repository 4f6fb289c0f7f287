/**
 * Typed refusals of the scheduler owner. Each code is stable and carries exactly one next
 * action; details hold ids and instants only.
 */
import { OwnerError, ownerErrors } from '../owner-errors.js';

export const SCHEDULER_ERROR_CODES = [
  'scheduler_input_invalid',
  'scheduler_cadence_invalid',
  'timer_not_found',
  'timer_identity_mismatch',
  'timer_reset_token_stale',
  'timer_due_mismatch',
  'timer_disabled',
] as const;
export type SchedulerErrorCode = (typeof SCHEDULER_ERROR_CODES)[number];

/** The scheduler owner's refusals (owner-errors.ts). */
export const SCHEDULER_ERRORS = ownerErrors('scheduler', 'SchedulerError', SCHEDULER_ERROR_CODES);
export type SchedulerError = OwnerError<SchedulerErrorCode>;

export const isSchedulerError = SCHEDULER_ERRORS.is;

export const invalidInput = (message: string, field: string): SchedulerError =>
  new OwnerError(SCHEDULER_ERRORS, 'usage', 'scheduler_input_invalid', message, {
    nextAction: `correct ${field} and retry`,
    details: { field },
  });

export const cadenceInvalid = (): SchedulerError =>
  new OwnerError(
    SCHEDULER_ERRORS,
    'usage',
    'scheduler_cadence_invalid',
    'A cadence is FREQ=MINUTELY|HOURLY|DAILY with an optional INTERVAL=n (1–1000000).',
    {
      nextAction: 'pass a cadence such as FREQ=MINUTELY;INTERVAL=5',
    },
  );

export const timerNotFound = (timerId: string): SchedulerError =>
  new OwnerError(SCHEDULER_ERRORS, 'not_found', 'timer_not_found', 'No such timer.', {
    nextAction: 'list the timers of the Goal and use an existing timer id',
    details: { timer_id: timerId },
  });

export const timerIdentityMismatch = (timerId: string): SchedulerError =>
  new OwnerError(
    SCHEDULER_ERRORS,
    'conflict',
    'timer_identity_mismatch',
    'The timer id was already created with a different request.',
    {
      nextAction: 'read the existing timer, or reset it with its current reset token',
      details: { timer_id: timerId },
    },
  );

export const resetTokenStale = (timerId: string): SchedulerError =>
  new OwnerError(
    SCHEDULER_ERRORS,
    'conflict',
    'timer_reset_token_stale',
    'The timer was reset since this token was read; this writer is fenced.',
    {
      nextAction: 'reload the timer and act under its current reset token',
      details: { timer_id: timerId },
    },
  );

export const dueMismatch = (timerId: string, expected: string, got: string): SchedulerError =>
  new OwnerError(
    SCHEDULER_ERRORS,
    'conflict',
    'timer_due_mismatch',
    "The acknowledged occurrence is not the timer's next one.",
    {
      nextAction: 'reload the timer and acknowledge its current next_due_at',
      details: { timer_id: timerId, next_due_at: expected, due_at: got },
    },
  );

export const timerDisabled = (timerId: string): SchedulerError =>
  new OwnerError(SCHEDULER_ERRORS, 'rejected', 'timer_disabled', 'The timer is disabled and does not fire.', {
    nextAction: 'enable the timer through the scheduler owner first',
    details: { timer_id: timerId },
  });

/** The fixture owner's refusals, from the owners' one error factory (src/owners/owner-errors.ts). */
import { OwnerError, ownerErrors } from '../../../src/owners/owner-errors.js';

export const FIXTURE_ERROR_CODES = ['fixture_input_invalid', 'fixture_note_conflict'] as const;
export type FixtureErrorCode = (typeof FIXTURE_ERROR_CODES)[number];

export const FIXTURE_ERRORS = ownerErrors('fixture', 'FixtureError', FIXTURE_ERROR_CODES);
export type FixtureError = OwnerError<FixtureErrorCode>;
export const isFixtureError = FIXTURE_ERRORS.is;

export const invalidInput = (message: string, field: string): FixtureError =>
  new OwnerError(FIXTURE_ERRORS, 'usage', 'fixture_input_invalid', message, {
    nextAction: `correct ${field} and retry`,
    details: { field },
  });

export const noteConflict = (noteId: string): FixtureError =>
  new OwnerError(
    FIXTURE_ERRORS,
    'conflict',
    'fixture_note_conflict',
    'The note id was already used for another note.',
    {
      nextAction: 'read the existing note; a different note needs its own note id',
      details: { note_id: noteId },
    },
  );

/**
 * The typed refusals of an owner, from one factory: `ownerErrors(owner, name, codes)` declares an
 * owner's closed set of codes and the predicate its callers branch on, and every refusal of that
 * owner is one `OwnerError` of it, built in the owner's `errors.ts` — one builder per code, with
 * its kind, its message shape and exactly one next action (test/core/refusal-codes.test.ts finds
 * each code built in one place). Details hold public-safe facts only: ids, generations, outcomes,
 * digests — never payloads, URLs or paths.
 *
 * An owner whose refusals need no predicate of their own (goal, work) builds them with core's
 * `rejected`/`conflict`/… instead.
 */
import { LoopxError, type ErrorKind, type LoopxErrorOptions } from '../core/index.js';

/** One owner's refusals: its closed set of codes and the predicate callers branch on (never on message text). */
export interface OwnerErrors<C extends string> {
  /** The owner's name, as in the OWNERS table. */
  readonly owner: string;
  /** The errors' `name` (e.g. `SessionError`), as stack traces show it. */
  readonly name: string;
  readonly codes: readonly C[];
  /** Whether `e` is one of this owner's refusals — with `code`, when given. */
  is(e: unknown, code?: C): e is OwnerError<C>;
}

/** A refusal of one owner: a `LoopxError` whose code is one of that owner's. */
export class OwnerError<C extends string = string> extends LoopxError {
  declare readonly code: C;
  /** The owner that refused (not enumerable: an error's own fields stay those of every LoopxError). */
  declare readonly owner: string;
  constructor(
    errors: OwnerErrors<C>,
    kind: ErrorKind,
    code: C,
    message: string,
    options: LoopxErrorOptions & { nextAction: string },
  ) {
    super(kind, code, message, options);
    this.name = errors.name;
    Object.defineProperty(this, 'owner', { value: errors.owner, enumerable: false });
  }
}

/** The refusals of `owner`, named `name`, with exactly the codes `codes`. */
export function ownerErrors<const C extends string>(owner: string, name: string, codes: readonly C[]): OwnerErrors<C> {
  const known: ReadonlySet<string> = new Set(codes);
  return {
    owner,
    name,
    codes,
    is: (e: unknown, code?: C): e is OwnerError<C> =>
      e instanceof OwnerError && e.owner === owner && known.has(e.code) && (code === undefined || e.code === code),
  };
}

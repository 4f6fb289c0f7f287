/**
 * Typed errors. Every refusal loopx makes is a LoopxError with a stable `code`, a one-line
 * human message and, where an operator must act, exactly one `nextAction`. Callers branch on
 * `code` (or `kind`), never on message text. `kind` decides the process exit code.
 */

/** Exit-code classes of ARCHITECTURE.md "Decisions". */
export type ErrorKind = 'internal' | 'usage' | 'rejected' | 'conflict' | 'not_found';

export const EXIT_CODES: Readonly<Record<ErrorKind | 'ok', number>> = {
  ok: 0,
  internal: 1,
  usage: 2,
  rejected: 3,
  conflict: 4,
  // A missing run or file is input the command cannot act on: a refusal, not a crash.
  not_found: 3,
};

/** The exit code of a command that drove a run which ended `failed` (`run start`, `run resume`, `work run`): its document is printed, the run failed. */
export const RUN_FAILED_EXIT = 5;

export interface LoopxErrorOptions {
  nextAction?: string;
  cause?: unknown;
  /** Facts safe to show in public output (ids, counts, codes — never paths or payloads). */
  details?: Record<string, unknown>;
}

export class LoopxError extends Error {
  readonly code: string;
  readonly kind: ErrorKind;
  readonly nextAction: string | undefined;
  readonly details: Record<string, unknown> | undefined;

  constructor(kind: ErrorKind, code: string, message: string, options: LoopxErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'LoopxError';
    this.kind = kind;
    this.code = code;
    this.nextAction = options.nextAction;
    this.details = options.details;
  }

  toJSON(): Record<string, unknown> {
    return {
      code: this.code,
      message: this.message,
      ...(this.nextAction ? { next_action: this.nextAction } : {}),
      ...(this.details ? { details: this.details } : {}),
    };
  }
}

export const isLoopxError = (e: unknown): e is LoopxError => e instanceof LoopxError;

const KINDS: readonly ErrorKind[] = ['usage', 'not_found', 'conflict', 'rejected', 'internal'];

/**
 * A refusal another process of loopx wrote as JSON (its `kind` and `toJSON()`), raised again here
 * with its code, kind, next action and details as that process built them; undefined when the
 * document does not name a code (the caller's own failure then stands for it). An unknown kind is
 * `internal`; a missing message is `fallbackMessage`.
 */
export function refusalFromJson(doc: unknown, fallbackMessage: string): LoopxError | undefined {
  const e = (typeof doc === 'object' && doc !== null ? doc : {}) as Record<string, unknown>;
  if (typeof e.code !== 'string' || !/^[a-z0-9_]{1,64}$/.test(e.code)) return undefined;
  const kind = KINDS.includes(e.kind as ErrorKind) ? (e.kind as ErrorKind) : 'internal';
  return new LoopxError(kind, e.code, typeof e.message === 'string' ? e.message : fallbackMessage, {
    ...(typeof e.next_action === 'string' ? { nextAction: e.next_action } : {}),
    ...(typeof e.details === 'object' && e.details !== null ? { details: e.details as Record<string, unknown> } : {}),
  });
}

export const hasCode = (e: unknown, code: string): boolean => isLoopxError(e) && e.code === code;

export const usageError = (code: string, message: string, nextAction?: string): LoopxError =>
  new LoopxError('usage', code, message, nextAction ? { nextAction } : {});

export const rejected = (code: string, message: string, options: LoopxErrorOptions = {}): LoopxError =>
  new LoopxError('rejected', code, message, options);

export const conflict = (code: string, message: string, options: LoopxErrorOptions = {}): LoopxError =>
  new LoopxError('conflict', code, message, options);

export const notFound = (code: string, message: string, options: LoopxErrorOptions = {}): LoopxError =>
  new LoopxError('not_found', code, message, options);

export const internal = (code: string, message: string, options: LoopxErrorOptions = {}): LoopxError =>
  new LoopxError('internal', code, message, options);

export const exitCodeOf = (e: unknown): number => (isLoopxError(e) ? EXIT_CODES[e.kind] : EXIT_CODES.internal);

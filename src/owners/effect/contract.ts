/**
 * The effect owner's contract: the journal of external effects (`effects.db` in a runtime root),
 * its outbox, and reconciliation of uncertain outcomes under their ORIGINAL operation identity.
 *
 * The owner decides over a storage port (port.ts; memory.ts and sqlite.ts implement it), so the
 * guarantees below hold for every provider.
 *
 * Failure modes — what each operation guarantees:
 * - Every write is atomic and durable when its Promise resolves; one whose commit point failed
 *   unprovably is read back, and answered only if the readback shows it (else
 *   `store_outcome_unproved`: retry the same request — it applies at most once). Each state
 *   change also appends one row to the effect's history (evidence is never overwritten, not even
 *   by `reissue`).
 * - `recordIntent` is durable BEFORE anything is dispatched. It is idempotent by operation id:
 *   the same operation id with the same intent digest returns the existing row (`replayed`);
 *   a different digest fails with `operation_identity_mismatch`; an idempotency key already held
 *   by another operation fails with `idempotency_key_in_use`.
 * - The outbox holds exactly the effects awaiting their first dispatch (outcome pending, never
 *   dispatched). `beginDispatch` takes an effect out of the outbox and records the attempt before
 *   the caller sends it; a second `beginDispatch` fails with `effect_dispatch_in_flight`, so no
 *   effect is ever dispatched twice by this owner.
 * - `settle` records an outcome. From `pending` any outcome is allowed (committed and unknown only
 *   after a dispatch); from `unknown` only `committed` or `absent` (resolution). Repeating the
 *   same outcome with the same receipt is a readback (`replayed`); anything else on a settled
 *   effect fails with `effect_already_settled`.
 * - Unknown outcomes are never re-dispatched, and never under a new identity. `reconcile` asks the
 *   external system by the original operation id and turns unknown (or a dispatch that never
 *   settled) into committed or absent — or leaves a visible hold (`holds()`), never a guess.
 *   Only `absent` may be reissued, under the same operation id and idempotency key.
 * - `resolve` settles an uncertain effect from evidence found outside the external system's
 *   answer (an operator's finding), only while the effect is exactly in the state the caller read
 *   (outcome and attempt); otherwise it fails with `effect_state_changed` and changes nothing, so
 *   an outcome settled meanwhile (by reconciliation) is never overwritten. The same outcome and
 *   receipt again is a readback (`replayed`).
 * - "Not found" is `undefined` from `get*`; a write naming a missing effect fails with
 *   `effect_not_found`.
 * - Targets are public-safe labels (no credentials, queries or fragments); intents and receipts
 *   are private and never appear in errors or findings.
 */

export type JsonValue = null | boolean | number | string | readonly JsonValue[] | { readonly [key: string]: JsonValue };

export const EFFECT_OUTCOMES = ['pending', 'committed', 'absent', 'unknown', 'rejected', 'superseded'] as const;
export type EffectOutcome = (typeof EFFECT_OUTCOMES)[number];
export type SettledOutcome = Exclude<EffectOutcome, 'pending'>;

/**
 * The scope of an effect made by an agent run outside any Goal (a built-in tool of a plain run):
 * `run:<run id>` in the `goal_id` field. It is never a Goal id (those have no `:`), so such an
 * effect is never adopted with a Goal.
 */
export const runEffectScope = (runId: string): string => `run:${runId}`;

export interface EffectRecord {
  readonly operation_id: string;
  readonly idempotency_key: string;
  /** The Goal the effect belongs to, or the run scope of a run outside any Goal (`runEffectScope`). */
  readonly goal_id: string;
  /** What kind of effect, e.g. `webhook.deliver`. */
  readonly kind: string;
  /** Public-safe label of the external system, e.g. `webhook:127.0.0.1:8080`. */
  readonly target: string;
  /** The intent as canonical JSON text (the bytes `intent_digest` covers, with the identity). */
  readonly intent: string;
  readonly intent_digest: string;
  readonly outcome: EffectOutcome;
  readonly receipt: JsonValue | null;
  /** Dispatches under this identity (0 until the first `beginDispatch`). */
  readonly attempt: number;
  readonly dispatched_at: string | null;
  /** Why reconciliation left this effect held (a public-safe code), or null. */
  readonly hold: string | null;
  readonly reconcile_attempts: number;
  readonly created_at: string;
  readonly settled_at: string | null;
}

export interface RecordIntentRequest {
  readonly operation_id: string;
  readonly idempotency_key: string;
  readonly goal_id: string;
  readonly kind: string;
  readonly target: string;
  readonly intent: JsonValue;
}

export interface AdoptEffectRequest extends RecordIntentRequest {
  readonly outcome: SettledOutcome;
  readonly receipt: JsonValue;
  /** Dispatches the source recorded. */
  readonly attempt: number;
}

export interface EffectWriteResult {
  readonly effect: EffectRecord;
  readonly replayed: boolean;
}

export interface OutboxEntry {
  readonly operation_id: string;
  readonly idempotency_key: string;
  readonly goal_id: string;
  readonly kind: string;
  readonly target: string;
  readonly enqueued_at: string;
}

export type EffectEvent = 'intent' | 'dispatch' | 'settle' | 'hold' | 'reissue';

/** One append-only history row per state change. */
export interface EffectTransition {
  readonly operation_id: string;
  readonly seq: number;
  readonly event: EffectEvent;
  readonly outcome: EffectOutcome;
  readonly receipt: JsonValue | null;
  readonly reason: string | null;
  readonly at: string;
}

/** What the external system says about the ORIGINAL operation id. */
export type ReconcileObservation =
  | { readonly status: 'committed'; readonly receipt: JsonValue }
  | { readonly status: 'absent'; readonly receipt?: JsonValue }
  | { readonly status: 'unknown'; readonly reason: string };

export type ReconcileQuery = (effect: EffectRecord) => Promise<ReconcileObservation>;

export interface ReconcileResult {
  readonly effect: EffectRecord;
  /** `held`: still unknown, visible in `holds()`. `already_settled`: nothing was uncertain. */
  readonly resolution: 'committed' | 'absent' | 'held' | 'already_settled';
}

/** The state an effect was read in, which `resolve` requires it still to be in. */
export interface ExpectedEffectState {
  readonly outcome: EffectOutcome;
  readonly attempt: number;
}

/** What `resolve` may settle an uncertain effect as: committed, absent, or unknown (a dispatch that never settled, now recorded as such). */
export type ResolvedOutcome = 'committed' | 'absent' | 'unknown';

export interface ListEffectsFilter {
  readonly goal_id?: string;
  readonly outcome?: EffectOutcome;
}

/**
 * The effect owner's live API (journal.ts, over any `EffectPort`). Reads and writes are
 * asynchronous; `close` is not. A write that a store could not prove landed rejects with
 * `store_outcome_unproved` (retry the same request: it applies at most once).
 */
export interface EffectJournal {
  recordIntent(request: RecordIntentRequest): Promise<EffectWriteResult>;
  /** Take the effect out of the outbox and record the dispatch attempt; call before sending. */
  beginDispatch(operationId: string): Promise<EffectRecord>;
  settle(operationId: string, outcome: SettledOutcome, receipt: JsonValue): Promise<EffectWriteResult>;
  /** Record that reconciliation could not resolve an unknown effect (a visible hold). */
  holdUnknown(operationId: string, reason: string): Promise<EffectRecord>;
  /** Put an `absent` effect back into the outbox under the same identity. */
  reissue(operationId: string): Promise<EffectRecord>;
  /**
   * Adoption (`reconcile`): record an effect recovered from a backup under its ORIGINAL operation
   * id and idempotency key, with the outcome reconciliation established, without dispatching it.
   * The same request again is a readback; another outcome for it is `effect_already_settled`.
   */
  adopt(request: AdoptEffectRequest): Promise<EffectWriteResult>;
  /** Resolve an uncertain effect by asking the external system about its original operation id. */
  reconcile(operationId: string, query: ReconcileQuery): Promise<ReconcileResult>;
  /** Settle an uncertain effect from outside evidence, if it is still exactly in the `expected` state. */
  resolve(
    operationId: string,
    expected: ExpectedEffectState,
    outcome: ResolvedOutcome,
    receipt: JsonValue,
  ): Promise<EffectWriteResult>;

  get(operationId: string): Promise<EffectRecord | undefined>;
  getByIdempotencyKey(idempotencyKey: string): Promise<EffectRecord | undefined>;
  /** Effects in creation order. */
  list(filter?: ListEffectsFilter): Promise<EffectRecord[]>;
  /** Effects awaiting their first dispatch, in enqueue order. */
  outbox(): Promise<OutboxEntry[]>;
  /** Effects whose outcome is uncertain: unknown, or dispatched and never settled. */
  holds(): Promise<EffectRecord[]>;
  history(operationId: string): Promise<EffectTransition[]>;

  close(): void;
}

export interface EffectJournalOptions {
  /** Clock for recorded timestamps (tests inject a fixed one). */
  readonly now?: () => Date;
}

/** Upper bounds on stored JSON (canonical UTF-8 bytes). */
export const MAX_INTENT_BYTES = 1024 * 1024;
export const MAX_RECEIPT_BYTES = 64 * 1024;

/**
 * The session owner's contract: Goal-bound agent sessions, their session/execution generations,
 * Turn journals and Turn settlement (`sessions.db` in a runtime root).
 *
 * Failure modes — what each operation guarantees (the storage side is port.ts):
 * - Every write is atomic: it lands completely or not at all, and is durable when it resolves.
 *   Another writer winning in between is re-read and re-decided; a store that cannot confirm a
 *   write rejects with `store_outcome_unproved` (retry the same request: it applies at most once).
 * - "Not found" is `undefined` from `get*`; a write naming a missing session or turn fails with
 *   `session_not_found` / `turn_not_found` (kind not_found).
 * - Fencing: every write that acts for an executor carries the execution generation it was
 *   admitted under. A write whose generation is not the session's current one fails with
 *   `session_generation_stale` (kind conflict) and changes nothing — an old executor is never
 *   able to append to, or settle, the work of a newer one. `bindRun` and `retireSession` bump the
 *   execution generation; `readmitSession` bumps both generations (a new admission of the lineage).
 * - Turn journals record phases as an ordered prefix of `TURN_PHASES`. Recording a phase already
 *   in the prefix is an idempotent readback; skipping ahead fails with `turn_phase_out_of_order`.
 * - Settlement is idempotent by settlement identity: repeating `settleTurn` with the same
 *   `settlement_id` and the same request returns the original settlement (`replayed: true`),
 *   even after the generation moved on. A turn is never settled twice: a different settlement of
 *   a settled turn fails with `turn_already_settled`; a reused `settlement_id` with a different
 *   request fails with `settlement_identity_mismatch`.
 * - Nothing here reads a clock for decisions; timestamps are recorded facts only.
 */

/** The only execution mode this runtime has: loopx runs the agent itself. Persisted, never changed implicitly. */
export const SESSION_MODE = 'managed_runtime';
export type SessionMode = typeof SESSION_MODE;

export type SessionStatus = 'active' | 'retired';

/** A Goal reference: the alias and the lifetime it denotes. */
export interface GoalRef {
  readonly goal_id: string;
  readonly goal_instance_id: string;
}

export interface Session {
  readonly session_id: string;
  readonly goal_id: string;
  readonly goal_instance_id: string;
  readonly session_mode: SessionMode;
  /** Admission of this session lineage; bumped by `readmitSession`. Starts at 1. */
  readonly session_generation: number;
  /** Execution fence; bumped by `bindRun`, `retireSession` and `readmitSession`. Starts at 1. */
  readonly execution_generation: number;
  readonly run_id: string | null;
  readonly status: SessionStatus;
  readonly created_at: string;
  readonly updated_at: string;
}

/** `loopx_turn_transaction_contract_v0` phases, in order. A journal records a prefix of them. */
export const TURN_PHASES = [
  'host_execute',
  'typed_result',
  'validation',
  'durable_writeback',
  'quota_spend',
  'scheduler_apply',
  'scheduler_ack',
] as const;
export type TurnPhase = (typeof TURN_PHASES)[number];

export type TurnStatus = 'in_progress' | 'committed' | 'stopped' | 'failed';
export type SettlementStatus = Exclude<TurnStatus, 'in_progress'>;

/** `turn_result_kind` values of the settlement transaction. */
export const TURN_RESULT_KINDS = [
  'validated_progress',
  'validated_completion',
  'repair_required',
  'replan_required',
  'user_action_required',
  'wait',
  'iteration_failed',
  'host_failure',
  'validation_failed',
  'writeback_failed',
  'quota_spend_failed',
  'terminal_closeout_failed',
] as const;
export type TurnResultKind = (typeof TURN_RESULT_KINDS)[number];

export interface TurnPhaseRecord {
  readonly phase: TurnPhase;
  readonly at: string;
  /** A public-safe reference (e.g. an effect ref `<effect_id>#<step>`), or null. */
  readonly ref: string | null;
}

export interface TurnJournal {
  /** sha256 hex of the canonical JSON `{"session_id":…,"turn_index":…}` (see `turnKeyOf`). */
  readonly turn_key: string;
  readonly session_id: string;
  readonly goal_id: string;
  readonly goal_instance_id: string;
  readonly turn_index: number;
  /** The execution generation that began the turn. */
  readonly execution_generation: number;
  readonly run_id: string;
  readonly status: TurnStatus;
  readonly phases: readonly TurnPhaseRecord[];
  readonly created_at: string;
  readonly updated_at: string;
}

export interface SettleTurnRequest {
  /** The settlement identity: repeating it with the same request is a readback, never a second settlement. */
  readonly settlement_id: string;
  readonly status: SettlementStatus;
  /** Required for `failed`: the first phase not in the recorded prefix. Null otherwise. */
  readonly failed_phase?: TurnPhase | null;
  readonly result_kind?: TurnResultKind | null;
  readonly expected_execution_generation: number;
}

export interface TurnSettlement {
  readonly settlement_id: string;
  readonly turn_key: string;
  readonly session_id: string;
  readonly goal_id: string;
  readonly status: SettlementStatus;
  readonly failed_phase: TurnPhase | null;
  readonly result_kind: TurnResultKind | null;
  /** How many phases the journal had recorded when it was settled. */
  readonly phase_count: number;
  /** sha256 hex over the semantic settlement request (see `settlementDigest`). */
  readonly request_digest: string;
  readonly settled_at: string;
}

export interface SettleTurnResult {
  readonly settlement: TurnSettlement;
  readonly replayed: boolean;
}

export interface BeginTurnResult {
  readonly turn: TurnJournal;
  readonly replayed: boolean;
}

export interface OpenSessionOptions {
  /** Make `openSession` idempotent: an existing session with this id and the same Goal is returned. */
  readonly session_id?: string;
}

/**
 * The session owner's live API (session.ts), over any storage port (port.ts). Every method
 * answers with a Promise; a refusal is a rejection with a typed SessionError.
 */
export interface SessionStore {
  openSession(goal: GoalRef, options?: OpenSessionOptions): Promise<Session>;
  getSession(sessionId: string): Promise<Session | undefined>;
  /** Sessions in creation order, optionally of one Goal. */
  listSessions(goalId?: string): Promise<Session[]>;
  /** Bind a run to the session under the expected execution generation; bumps it. */
  bindRun(sessionId: string, runId: string, expectedExecutionGeneration: number): Promise<Session>;
  /** Retire the session (final): bumps the execution generation so every executor is fenced. Idempotent. */
  retireSession(sessionId: string, expectedSessionGeneration: number): Promise<Session>;
  /** A new admission of the same lineage: bumps both generations and clears the run binding. */
  readmitSession(sessionId: string, expectedSessionGeneration: number): Promise<Session>;

  /** Begin turn `turnIndex` (the session's next index) under the current execution generation. */
  beginTurn(sessionId: string, turnIndex: number, expectedExecutionGeneration: number): Promise<BeginTurnResult>;
  /** Append `phase` to the turn's ordered prefix (idempotent for a phase already recorded). */
  recordPhase(
    turnKey: string,
    phase: TurnPhase,
    expectedExecutionGeneration: number,
    ref?: string | null,
  ): Promise<TurnJournal>;
  settleTurn(turnKey: string, request: SettleTurnRequest): Promise<SettleTurnResult>;
  getTurn(turnKey: string): Promise<TurnJournal | undefined>;
  /** Turns of a session in index order. */
  listTurns(sessionId: string): Promise<TurnJournal[]>;
  getSettlement(turnKey: string): Promise<TurnSettlement | undefined>;

  /** Releases the store's port; later calls are refused (`provider_closed`). */
  close(): void;
}

export interface SessionStoreOptions {
  /** Clock for recorded timestamps (tests inject a fixed one). */
  readonly now?: () => Date;
}

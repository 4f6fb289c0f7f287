/**
 * The session storage port: durable rows of sessions, Turn journals (with their phase prefixes)
 * and Turn settlements. Storage only — a port never validates a request, reads a clock or decides
 * a fence; the session owner (session.ts over rules.ts) does, and hands the port finished rows.
 * Implementations: memory.ts, sqlite.ts (a new provider is a new file beside them). No driver type
 * crosses this file. The conformance suite test/owners/conformance/session-port.conformance.ts
 * checks every guarantee below against each implementation.
 *
 * - snapshot_read: one `read` returns every row it names from one consistent state.
 * - atomic_conditional_commit: `commit` lands every row of the write or none, and only when the
 *   write's precondition holds on the current rows; otherwise `conflict` and nothing is written
 *   (see port.ts for the outcomes). Every change to a session bumps its execution generation, so
 *   the execution generation is the session's revision. Preconditions:
 *   - `create_session`: no session has the id (else `exists`).
 *   - `update_session`: the session exists (`missing`) at `expected_execution_generation` (`changed`).
 *   - `begin_turn`: the turn's session exists (`missing`) at `expected_execution_generation`
 *     (`changed`), and no turn has the key or the session's turn index (`exists`).
 *   - `append_phase`: the turn exists (`missing`), is `in_progress` with exactly `position` phases
 *     and its session is at `expected_execution_generation` (`changed`). The turn's `updated_at`
 *     becomes the phase's `at`.
 *   - `settle_turn`: no settlement of the turn and none with the settlement id (`exists`); the turn
 *     exists (`missing`), is `in_progress` with exactly `phase_count` phases and its session is at
 *     `expected_execution_generation` (`changed`). The turn's status becomes the settlement's, its
 *     `updated_at` the `settled_at`.
 * - idempotent repeat: committing the same write again never applies it twice — its precondition
 *   no longer holds (`exists` / `changed`) and the rows stay as the first commit left them. The
 *   owner turns such a repeat into the readback its rules give.
 * - explicit_ambiguous_commit: a commit point that failed unprovably is `ambiguous`. Readback
 *   rule: the owner reads the written rows back (`read`); they show the write's after-image
 *   exactly when it landed, otherwise the outcome stays unproved and the caller retries the same
 *   request.
 * - `failed` means provably nothing was written.
 * - "Not found" is an absent field of `read` and an empty list, never an error. Reads reject with
 *   a typed LoopxError only for a closed port (`provider_closed`) or a row that does not decode
 *   (`session_store_corrupt`), which a commit rejects with too.
 * - Rows come back as copies; changing one changes nothing stored.
 */
import type { CommitResult } from '../port.js';
import type { Session, TurnJournal, TurnPhaseRecord, TurnSettlement } from './contract.js';

/** Which rows to read; each field names rows, and an absent one reads nothing for it. */
export interface SessionQuery {
  readonly session_id?: string;
  readonly turn_key?: string;
  readonly settlement_id?: string;
}

export interface SessionRows {
  /** The session `session_id` names, else the session of the turn `turn_key` names. */
  readonly session?: Session;
  readonly turn?: TurnJournal;
  /** The session's turn with the highest index. */
  readonly last_turn?: TurnJournal;
  /** The settlement of the turn `turn_key` names. */
  readonly settlement?: TurnSettlement;
  /** The settlement stored under `settlement_id`, of whichever turn. */
  readonly settlement_by_id?: TurnSettlement;
}

export type SessionWrite =
  | { readonly op: 'create_session'; readonly session: Session }
  | { readonly op: 'update_session'; readonly expected_execution_generation: number; readonly session: Session }
  | { readonly op: 'begin_turn'; readonly expected_execution_generation: number; readonly turn: TurnJournal }
  | {
      readonly op: 'append_phase';
      readonly expected_execution_generation: number;
      readonly turn_key: string;
      readonly position: number;
      readonly phase: TurnPhaseRecord;
    }
  | {
      readonly op: 'settle_turn';
      readonly expected_execution_generation: number;
      readonly phase_count: number;
      readonly settlement: TurnSettlement;
    };

export interface SessionPort {
  /** The registered storage provider of this implementation (`registerStoreProvider`). */
  readonly provider: string;
  read(query: SessionQuery): Promise<SessionRows>;
  /** Sessions in creation order, optionally of one Goal. */
  listSessions(goalId?: string): Promise<Session[]>;
  /** Turns of a session in index order. */
  listTurns(sessionId: string): Promise<TurnJournal[]>;
  commit(write: SessionWrite): Promise<CommitResult>;
  /** Releases the store; later reads reject and commits fail with `provider_closed`. Idempotent. */
  close(): void;
}

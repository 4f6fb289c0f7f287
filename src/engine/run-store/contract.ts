/**
 * The run-store contract: the durable kernel state of runs and their event log.
 *
 * - `commit` is atomic: the head, message upserts, mutation upserts and events land together or
 *   not at all. It is conditional on `expectedSequence` (the run's current last sequence; 0 for a
 *   new run) and fails with `run_sequence_conflict` (kind conflict) otherwise — the fence that keeps
 *   a stale writer from appending. Events get sequences expectedSequence+1, +2, …
 * - "Not found" is `undefined` from `get`, never an error.
 * - Suspend requests are written outside the sequence (`requestSuspend`), so a request from
 *   another process never conflicts with the driver; the driver consumes them in a commit.
 * - Reads are snapshot-consistent per call. `readEvents` returns events in sequence order.
 * - `onCommit` listeners fire after a commit is durable, in this process only; other processes
 *   observe commits by reading (subscribers poll).
 * - Every read and write is asynchronous, so a store on a database server (PostgreSQL) sits behind
 *   the same contract as the embedded SQLite one; SQLite answers within the call, and a commit's
 *   checks and writes never interleave with another commit of the same process.
 */
import type { AgentDefinition } from '../agent.js';
import type { NewEvent, RunEvent } from '../events.js';
import type { DefinitionIdentity, Lifecycle, Message, ModelRef, PlanIdentity } from '../../snapshot/index.js';

export interface PendingInteraction {
  readonly interactionId: string;
  readonly callId: string;
  readonly prompt: string;
}

export interface RunFailure {
  readonly code: string;
  readonly message: string;
  /** What the operator can do about it, where there is something (provider failures, budgets). */
  readonly nextAction?: string;
}

/** One model call's token usage (usage.ts): the provider's report, or estimated from the response. */
export interface TurnUsage {
  readonly turn: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly estimated: boolean;
}

/** A run's running token total; `estimated` when any part of it is. */
export interface RunUsage {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly estimated: boolean;
}

/** Everything about a run except its messages and events. */
export interface RunHead {
  readonly runId: string;
  readonly definition: DefinitionIdentity;
  readonly model: ModelRef;
  readonly turnLimit: number;
  readonly completedTurns: number;
  readonly lifecycle: Lifecycle;
  readonly planIdentity: PlanIdentity;
  /** Sorted, unique. */
  readonly usedInteractionIds: readonly string[];
  readonly lastSequence: number;
  readonly messageCount: number;
  /** A turn has started and not completed. */
  readonly turnInProgress: boolean;
  /** Suspend when completedTurns reaches this (set by --suspend-after-turns / resume --turns). */
  readonly suspendAtTurn: number | null;
  readonly pendingInteraction: PendingInteraction | null;
  readonly failure: RunFailure | null;
  /** Set on runs that arrived by import: the snapshot's last sequence. Events at or before it are not here. */
  readonly importedAtSequence?: number;
  /** Tokens the run's model calls used (absent before its first response). */
  readonly usage?: RunUsage;
  /** The latest model call's usage (what its Turn debits). */
  readonly turnUsage?: TurnUsage;
  readonly createdAt: string;
  readonly updatedAt: string;
}

export type MutationState = 'intent' | 'committed' | 'failed' | 'uncertain' | 'absent' | 'abandoned';

export interface MutationRecord {
  readonly runId: string;
  readonly callId: string;
  readonly turn: number;
  readonly toolName: string;
  readonly argumentsJson: string;
  readonly state: MutationState;
  readonly resultJson: string | null;
}

export interface RunCommit {
  readonly head: RunHead;
  readonly expectedSequence: number;
  /** Upserts by message index (0-based position in the history). */
  readonly messages?: ReadonlyArray<{ readonly index: number; readonly message: Message }>;
  readonly mutations?: readonly MutationRecord[];
  readonly events: readonly NewEvent[];
  /** Consume the run's pending suspend request in this commit. */
  readonly clearSuspendRequest?: boolean;
}

/** The root-level facts a run store keeps beside its root id (ownership.ts). */
export type RootMetaKey = 'root_id' | 'authority_scope' | 'authority_revision' | 'authority_history';

export interface RunStore {
  putDefinition(def: AgentDefinition): Promise<void>;
  getDefinition(identity: DefinitionIdentity): Promise<AgentDefinition | undefined>;
  /** The stored definition's body (`definitionBody`, the bytes `putDefinition` compares), unparsed; undefined if none. */
  definitionBodyOf(identity: DefinitionIdentity): Promise<string | undefined>;

  get(runId: string): Promise<RunHead | undefined>;
  list(): Promise<RunHead[]>;
  messages(runId: string): Promise<Message[]>;
  mutations(runId: string): Promise<MutationRecord[]>;
  /** Appends the events and returns them with their sequences and times; the head's lastSequence is set to match. */
  commit(c: RunCommit): Promise<RunEvent[]>;

  readEvents(runId: string, afterSequence: number, limit: number): Promise<RunEvent[]>;

  /**
   * Create a run from an imported snapshot: the head (at the snapshot's last sequence) and its
   * messages, with no events — the event tail starts at lastSequence+1 — and its definition (as
   * `putDefinition`), atomically: an import stores nothing in a root before it commits. Fails with
   * `run_sequence_conflict` if the run exists. `body`, when given, is `definitionBody(definition)`
   * as the caller already computed it (import compares it with the stored one before its consume
   * point): these are the bytes stored and compared, so what was checked is what is stored.
   */
  insertImported(
    head: RunHead,
    messages: readonly Message[],
    definition: AgentDefinition,
    body?: string,
  ): Promise<void>;

  /** This store's random identity (a runtime root's id), created once. */
  rootId(): Promise<string>;
  /** A root-level fact kept beside the root id (the authority the root belongs to, and what it has seen of it); `undefined` while unset. */
  readRootMeta(key: RootMetaKey): Promise<string | undefined>;
  /** Set a root-level fact (replacing it), atomically and durably. */
  writeRootMeta(key: Exclude<RootMetaKey, 'root_id'>, value: string): Promise<void>;

  requestSuspend(runId: string): Promise<void>;
  suspendRequested(runId: string): Promise<boolean>;

  onCommit(listener: (runId: string) => void): () => void;
  close(): void;
}

/**
 * The run kernel. It owns the turn loop and every state change of a run, and the RFC 0007
 * transfer protocols (signed export, import, local resume) that move runs between roots through
 * the run authority. It holds no keys (the authority signs and verifies), and it never decides an
 * effect's outcome by guessing.
 *
 * Rules it keeps:
 * - One driver per run: driving needs the run's exclusive lock (an OS lock for a root on disk), so
 *   a second process — or a second call in this one — gets `run_busy` instead of a duplicate turn.
 * - Every step is committed before the next one starts; a crash loses at most the step in flight.
 * - A mutating tool call goes through the effect owner, which decides its outcome (mutations.ts):
 *   intent durable before dispatch, outcome after. An intent found without an outcome by a later
 *   driver means the earlier driver died mid-call: the effect owner's outcome is taken if it has
 *   one, else the call becomes *uncertain* and waits for `resolve`; it is never re-run.
 * - Suspension happens only at a completed turn boundary; a request made during a turn (from any
 *   process) takes effect when that turn completes.
 * - Message, model-call and tool-call ids derive from (run id, turn, index).
 *
 * Its length (over 600 lines) is the kernel and the transfer protocols sharing one run lock and
 * one record discipline; splitting the import protocol into its own module is planned with the
 * owners' common recovery contract, when the engine's run store becomes a port like the owners'.
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { canonicalJson, conflict, hasCode, internal, isLoopxError, LoopxError, notFound, rejected, toHex, faultPoint, tryLockExclusive, ensurePrivateDir } from '../core/index.js';
import { decodeEnvelope, encodeEnvelope, encodeSnapshot, ENVELOPE_ERRORS, signEnvelope, snapshotDigest, TERMINAL_LIFECYCLES, verifyEnvelope, type Message, type SnapshotEnvelope, type RunSnapshotState, type ToolCallPart, type ToolResultPart, type ToolResultStatus } from '../snapshot/index.js';
import { agentDefinitionToFile, defineAgent, type AgentDefinition } from './agent.js';
import type { Application } from './application.js';
import type { NewEvent, RunEvent } from './events.js';
import { messageId, modelCallId, toolCallId } from './messages.js';
import { agrees, beginEffect, EffectAccess, errorMessage, operationIdOf, operatorOutcome, outcomeOfOutput, outcomeOfThrow, settleByOperator, settleEffect, takenOutcome, toJsonResult, toolError, uncertainEffects, undispatchedOutcome, type Begun, type CallOutcome, type Resolution, type UncertainEffect } from './mutations.js';
import type { ModelProvider } from './providers/provider.js';
import { SCRIPTED_PROVIDER } from './providers/scripted.js';
import type { MutationRecord, MutationState, RunCommit, RunHead, RunStore } from './run-store/contract.js';
import { memoryRunStore } from './run-store/memory.js';
import { openSqliteRunStore } from './run-store/sqlite.js';
import { leaseRequired, rootDirectoryIdentity, runIdInvalid, type RebindOutcome, type RunAuthority, type RunLease, type RunRecord } from '../run-authority/index.js';
import { LAYOUT } from '../owners/index.js';
import { effect as effectOwner } from '../owners/index.js';
import { isInteractionRequest, toolArgumentsInvalid, type InteractionRequest, type JsonValue, type Tool, type ToolContext, type ToolPlanLease } from './tools.js';

/** Fault points (tests only) around the durable steps of a mutating call. */
export const FAULT_AFTER_MUTATION_INTENT = 'engine.mutation.after-intent';
export const FAULT_AFTER_EFFECT_SETTLED = 'engine.mutation.after-effect-settled';

const RUN_ID = /^[A-Za-z0-9_-]{1,128}$/;
const EVENT_PAGE = 256;

export interface RunView {
  readonly run_id: string;
  readonly status: RunHead['lifecycle'];
  readonly definition: { readonly id: string; readonly version: string };
  readonly completed_turns: number;
  readonly turn_limit: number;
  readonly last_sequence: number;
  /** What an active run that is not being driven waits for. */
  readonly waiting_for: null | { readonly kind: 'interaction'; readonly interaction_id: string; readonly prompt: string } | { readonly kind: 'resolution'; readonly call_ids: readonly string[]; readonly effects: readonly UncertainEffect[] };
  readonly suspend_requested: boolean;
  readonly failure: RunHead['failure'];
}

export type { Resolution, UncertainEffect };

export interface EngineOptions {
  readonly application: Application;
  /** Runtime root (engine.db and run locks live here). Omit for an in-memory engine. */
  readonly root?: string;
  /** A store to use instead of the root's (tests). */
  readonly store?: RunStore;
  /** An effect journal to use instead of the root's effects.db, opened when first needed (tests). */
  readonly effects?: effectOwner.EffectJournal;
  /**
   * The per-user run authority. With one, run locks are the authority's (shared by every root of
   * the user), every run has a durable authority record, and exports are signed envelopes.
   */
  readonly authority?: RunAuthority;
}

export interface StartOptions {
  readonly input?: string;
  /** Suspend at the boundary after this many completed turns. */
  readonly suspendAfterTurns?: number;
  readonly runId?: string;
}

export interface SignedExport {
  readonly bytes: Uint8Array;
  readonly envelope: SnapshotEnvelope;
  readonly payloadSha256: string;
  readonly state: RunSnapshotState;
}

/** Fault point (tests only): after an import committed the kernel run, before it is ACTIVE. */
export const FAULT_IMPORT_AFTER_KERNEL_COMMIT = 'engine.import.after-kernel-commit';

const runNotFound = (runId: string) => notFound('run_not_found', `No run ${runId} in this root.`, { nextAction: 'list runs: loopx run list' });

const consumed = (runId: string) =>
  conflict('snapshot_consumed', `The snapshot of run ${runId} was already imported; a snapshot is consumed once.`, {
    nextAction: `find the run where it was imported: loopx authority show --run ${runId}`,
  });

/** Running the same import again into the root an IMPORTING record names completes it (never consumes twice). */
const IMPORT_INCOMPLETE_ACTION = 'complete it by importing the same snapshot file into this root again: loopx run import <snapshot-file>';

const importIncomplete = (runId: string) =>
  conflict('run_import_incomplete', `Run ${runId} was imported into this root but the import did not complete.`, { nextAction: IMPORT_INCOMPLETE_ACTION });

/** The kernel head of an imported run: suspended at the snapshot's last sequence, with no events before it here. */
const importedHead = (state: RunSnapshotState): RunHead => ({
  runId: state.runId,
  definition: state.definition,
  model: state.model,
  turnLimit: state.turnLimit,
  completedTurns: state.completedTurns,
  lifecycle: 'suspended',
  planIdentity: state.planIdentity,
  usedInteractionIds: state.usedInteractionIds,
  lastSequence: state.lastSequence,
  messageCount: state.messages.length,
  turnInProgress: false,
  suspendAtTurn: null,
  pendingInteraction: null,
  failure: null,
  importedAtSequence: state.lastSequence,
  createdAt: '',
  updatedAt: '',
});

const hexEqual = (a: string, b: string): boolean => a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

export interface ExportedSnapshot {
  readonly bytes: Uint8Array;
  readonly sha256: string;
  readonly state: RunSnapshotState;
}

interface RunLock {
  /** The authority lease behind this lock, when the engine has an authority. */
  readonly lease?: RunLease;
  release(): void;
}

export class Engine {
  readonly application: Application;
  readonly authority: RunAuthority | undefined;
  readonly #root: string | undefined;
  #store: RunStore | undefined;
  readonly #effects: EffectAccess;
  #rootReady = false;
  readonly #memLocks = new Set<string>();
  #rootId: string | undefined;
  #closed = false;

  /**
   * Opens nothing: the root (its directory, engine.db, locks/) is created or opened on first use,
   * so a command refused before it needs the root — an import whose claim does not verify — leaves
   * the root exactly as it was, or absent.
   */
  constructor(options: EngineOptions) {
    this.application = options.application;
    this.authority = options.authority;
    this.#root = options.root;
    this.#store = options.store;
    this.#effects = new EffectAccess({ ...(options.root !== undefined ? { root: options.root } : {}), ...(options.effects ? { effects: options.effects } : {}) });
  }

  get store(): RunStore {
    if (this.#closed) throw internal('engine_closed', 'The engine is closed.');
    if (!this.#store) {
      this.#openRoot();
      this.#store = this.#root !== undefined ? openSqliteRunStore(join(this.#root, LAYOUT.engineDb)) : memoryRunStore();
    }
    return this.#store;
  }

  /**
   * The operator's explicit binding of this root to its directory (`loopx authority bind-root`):
   * for a root whose runs were recorded before bindings existed, or whose device changed. The
   * authority refuses it while the directory the id is bound to still exists.
   */
  bindRootDirectory(): { readonly root_id: string; readonly binding: RebindOutcome } {
    const authority = this.#requireAuthority();
    if (this.#root === undefined) throw internal('root_required', 'Binding needs a runtime root directory.');
    const id = this.store.rootId();
    const binding = authority.rebindRoot(id, rootDirectoryIdentity(this.#root));
    this.#rootId = id;
    return { root_id: id, binding };
  }

  /** Create (or open) the root and its engine.db now, rather than on first use (`loopx init`). */
  openRoot(): void {
    void this.store;
  }

  /** The root directory (created owner-only, or validated as private), once. */
  #openRoot(): void {
    if (this.#rootReady || this.#root === undefined) return;
    ensurePrivateDir(this.#root);
    this.#rootReady = true;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#store?.close();
    this.#effects.close();
  }

  /**
   * This root's random identity: the owner name in authority records. With an authority, the id
   * counts only from the directory the authority bound it to: a byte copy is `root_is_copy`.
   */
  get rootId(): string {
    if (this.#rootId === undefined) {
      const id = this.store.rootId();
      if (this.authority && this.#root !== undefined) this.authority.bindRoot(id, rootDirectoryIdentity(this.#root));
      this.#rootId = id;
    }
    return this.#rootId;
  }

  // ── reads ────────────────────────────────────────────────────────────────────────────

  list(): RunView[] {
    return this.store.list().map((h) => this.#view(h));
  }

  show(runId: string): RunView {
    return this.#view(this.#head(runId));
  }

  messages(runId: string): Message[] {
    this.#head(runId);
    return this.store.messages(runId);
  }

  mutations(runId: string): MutationRecord[] {
    this.#head(runId);
    return this.store.mutations(runId);
  }

  /**
   * Events after `after`, in sequence order, with no gap or duplicate. With `follow`, waits for
   * new events (a cursor past the head waits too) until `signal` aborts or — for
   * `follow: 'while-active'` — the run is no longer active and every event has been delivered.
   */
  async *events(runId: string, options: { after?: number; follow?: false | 'forever' | 'while-active'; signal?: AbortSignal; pollMs?: number } = {}): AsyncGenerator<RunEvent> {
    const first = this.#head(runId);
    let cursor = options.after ?? 0;
    if (first.importedAtSequence !== undefined && cursor < first.importedAtSequence) {
      // An imported run has no copy of the events before its snapshot: say so, never skip silently.
      throw rejected('cursor_before_snapshot', `Run ${runId} was imported at sequence ${first.importedAtSequence}; events up to it are not in this root.`, {
        nextAction: `subscribe from the snapshot sequence: --after ${first.importedAtSequence}`,
        details: { run_id: runId, recovery_cursor: first.importedAtSequence },
      });
    }
    for (;;) {
      const batch = this.store.readEvents(runId, cursor, EVENT_PAGE);
      for (const e of batch) {
        yield e;
        cursor = e.sequence;
      }
      if (batch.length === EVENT_PAGE) continue;
      if (!options.follow || options.signal?.aborted) return;
      if (options.follow === 'while-active') {
        const head = this.#head(runId);
        if (head.lifecycle !== 'active' && head.lastSequence <= cursor) return;
        if (head.lifecycle === 'active' && !this.#isDriven(runId) && (head.pendingInteraction || this.#uncertainCalls(runId).length > 0) && head.lastSequence <= cursor) return;
      }
      await this.#waitForCommit(runId, options.pollMs ?? 50, options.signal);
    }
  }

  // ── commands ─────────────────────────────────────────────────────────────────────────

  async start(agent: AgentDefinition, options: StartOptions = {}): Promise<RunView> {
    const def = defineAgent(agent);
    // The root's identity before anything is stored: a byte copy (root_is_copy) keeps no definition.
    if (this.authority) void this.rootId;
    const runId = options.runId ?? `run_${randomBytes(10).toString('hex')}`;
    if (!RUN_ID.test(runId)) throw runIdInvalid();
    if (options.suspendAfterTurns !== undefined && !(Number.isInteger(options.suspendAfterTurns) && options.suspendAfterTurns >= 0)) {
      throw rejected('suspend_after_turns_invalid', '--suspend-after-turns must be a whole number ≥ 0.');
    }
    const planIdentity = this.application.planIdentityFor(def);
    const lock = this.#lock(runId);
    try {
      if (this.store.get(runId)) throw conflict('run_exists', `Run ${runId} already exists.`);
      if (this.authority?.readRecord(runId)) {
        throw conflict('run_known', `The run authority already knows run ${runId}; a run id is used once.`, { nextAction: 'start the run under a new id' });
      }
      this.store.putDefinition(def);
      this.#writeRecord(lock, { runId, state: 'ACTIVE', transitionGeneration: 1, ownerRoot: this.rootId, updatedAt: '' });
      const messages: Message[] = [];
      if (def.system) messages.push({ id: messageId(runId, 0, messages.length), role: 'system', parts: [{ type: 'text', text: def.system }] });
      if (options.input !== undefined) messages.push({ id: messageId(runId, 0, messages.length), role: 'user', parts: [{ type: 'text', text: options.input }] });
      const head: RunHead = {
        runId,
        definition: { id: def.id, version: def.version },
        model: def.model,
        turnLimit: def.turnLimit,
        completedTurns: 0,
        lifecycle: 'active',
        planIdentity,
        usedInteractionIds: [],
        lastSequence: 0,
        messageCount: messages.length,
        turnInProgress: false,
        suspendAtTurn: options.suspendAfterTurns ?? null,
        pendingInteraction: null,
        failure: null,
        createdAt: '',
        updatedAt: '',
      };
      this.store.commit({
        head,
        expectedSequence: 0,
        messages: messages.map((message, index) => ({ index, message })),
        events: [{ type: 'RunStarted', data: { definition_id: def.id, definition_version: def.version, model_provider: def.model.provider, model_id: def.model.modelId, turn_limit: def.turnLimit, plan_fingerprint: planIdentity.fingerprint } }],
      });
      await this.#drive(runId);
    } finally {
      this.#release(lock, runId);
    }
    return this.show(runId);
  }

  /** Suspend at the next completed turn boundary — now, if the run is idle at one. */
  async suspend(runId: string): Promise<RunView> {
    const head = this.#head(runId);
    this.#ownedRecord(runId);
    if (head.lifecycle === 'suspended') return this.#view(head);
    if (head.lifecycle !== 'active') throw this.#terminalError(head);
    this.store.requestSuspend(runId);
    const lock = this.#tryLock(runId);
    if (!lock) return this.show(runId); // the driver honours the request at its next boundary
    try {
      // Idle at a boundary: suspend now. Suspending runs no code, so no plan check or lease is needed.
      const idle = this.#head(runId);
      if (idle.lifecycle === 'active' && !idle.turnInProgress && !idle.pendingInteraction) this.#suspendAtBoundary(idle);
    } finally {
      lock.release();
    }
    return this.show(runId);
  }

  /** Resume a suspended run (optionally for `turns` turns), or continue an interrupted active one. */
  async resume(runId: string, options: { turns?: number } = {}): Promise<RunView> {
    if (options.turns !== undefined && !(Number.isInteger(options.turns) && options.turns >= 1)) throw rejected('turns_invalid', '--turns must be a whole number ≥ 1.');
    const lock = this.#lock(runId);
    try {
      if (!this.store.get(runId)) {
        // An import into this root consumed the snapshot and died before its kernel commit.
        const record = this.authority?.readRecord(runId);
        if (record?.state === 'IMPORTING' && record.ownerRoot === this.rootId) throw importIncomplete(runId);
      }
      const head = this.#head(runId);
      if (head.lifecycle === 'suspended') {
        this.#checkPlan(head);
        this.#activateRecord(lock, runId);
        this.#commit(head, {
          head: { ...head, lifecycle: 'active', suspendAtTurn: options.turns !== undefined ? head.completedTurns + options.turns : null },
          events: [{ type: 'Resumed', data: { completed_turns: head.completedTurns } }],
          clearSuspendRequest: true,
        });
      } else if (head.lifecycle !== 'active') {
        throw this.#terminalError(head);
      } else {
        this.#activeRecord(runId);
      }
      await this.#drive(runId);
    } finally {
      this.#release(lock, runId);
    }
    return this.show(runId);
  }

  async answer(runId: string, interactionId: string, text: string): Promise<RunView> {
    const lock = this.#lock(runId);
    try {
      this.#ownedRecord(runId);
      const head = this.#head(runId);
      const pending = head.pendingInteraction;
      if (!pending || pending.interactionId !== interactionId) {
        if (head.usedInteractionIds.includes(interactionId)) {
          throw rejected('interaction_id_reused', `Interaction ${interactionId} was already answered; an interaction id is used once.`);
        }
        throw rejected('interaction_not_pending', `Run ${runId} is not waiting for interaction ${interactionId}.`, {
          nextAction: `see what the run waits for: loopx run show ${runId}`,
        });
      }
      this.#activeRecord(runId);
      this.#checkPlan(head);
      const messages = this.store.messages(runId);
      const index = messages.findIndex((m) => m.role === 'tool' && m.parts.some((p) => p.type === 'tool_result' && p.callId === pending.callId));
      const toolName = (messages[index]!.parts[0] as ToolResultPart).toolName;
      this.#commit(head, {
        head: { ...head, pendingInteraction: null, usedInteractionIds: [...head.usedInteractionIds, interactionId].sort(compareStrings) },
        messages: [{ index, message: toolMessage(messages[index]!.id, pending.callId, toolName, 'ok', { answer: text }) }],
        events: [
          { type: 'InteractionAnswered', data: { interaction_id: interactionId, call_id: pending.callId } },
          { type: 'ToolResulted', data: { call_id: pending.callId, tool_name: toolName, status: 'ok' } },
        ],
      });
      await this.#drive(runId);
    } finally {
      this.#release(lock, runId);
    }
    return this.show(runId);
  }

  /**
   * Settle an uncertain mutating call under its original call id; never re-runs it. The effect
   * owner settles it first, under the call's original operation id and from the exact state it was
   * read in; an outcome it already has (from reconciliation) is taken instead, and a resolution
   * that contradicts it is refused (`effect_already_settled`) once the run has taken it.
   */
  async resolve(runId: string, callId: string, resolution: Resolution): Promise<RunView> {
    const lock = this.#lock(runId);
    try {
      this.#ownedRecord(runId);
      const takenNow = this.#settleOpenCalls(runId);
      const found = this.store.mutations(runId).find((m) => m.callId === callId);
      if (!found) throw notFound('call_not_found', `Run ${runId} has no mutating call ${callId}.`, { nextAction: `list uncertain calls: loopx run show ${runId}` });
      const effect = this.#effects.effectOf(callId);
      if (found.state !== 'uncertain') {
        // The effect owner had settled it (by reconciliation): the run took that outcome just now.
        if (effect && takenNow.has(callId)) return await this.#resolvedByEffectOwner(runId, resolution, effect);
        throw rejected('call_not_uncertain', `Call ${callId} is ${found.state}, not uncertain; only uncertain calls are resolved.`);
      }
      const head = this.#head(runId);
      const { state, status, result } = operatorOutcome(resolution);
      if (head.lifecycle === 'active') this.#checkPlan(head);
      // The effect owner first, under the original operation id (a run from before it has no effect: the engine's row alone).
      if (effect) {
        const settled = settleByOperator(this.#effects.forWrite(), effect.operation_id, resolution, result);
        if (!settled.byOperator) {
          this.#settleOpenCalls(runId);
          return await this.#resolvedByEffectOwner(runId, resolution, settled.effect);
        }
      }
      this.#settleCall(head, found, state, status, result, { resolution: resolution.kind });
      if (head.lifecycle === 'active') await this.#drive(runId);
    } finally {
      this.#release(lock, runId);
    }
    return this.show(runId);
  }

  /** A call the effect owner settled before the operator's resolution: the run has its outcome; a contradicting resolution is refused. */
  async #resolvedByEffectOwner(runId: string, resolution: Resolution, effect: effectOwner.EffectRecord): Promise<RunView> {
    if (!agrees(resolution, effect)) throw effectOwner.alreadySettled(effect.operation_id, effect.outcome);
    if (this.#head(runId).lifecycle === 'active') await this.#drive(runId);
    return this.#view(this.#head(runId));
  }

  async cancel(runId: string): Promise<RunView> {
    const lock = this.#lock(runId);
    try {
      const record = this.#ownedRecord(runId);
      this.#settleOpenCalls(runId);
      const head = this.#head(runId);
      if (head.lifecycle !== 'active' && head.lifecycle !== 'suspended') throw this.#terminalError(head);
      // Tombstone first, kernel second: a crash in between leaves a run that can no longer move
      // or resume (and `cancel` again finishes it) — never a cancelled run whose exported
      // snapshot could still be imported elsewhere.
      if (record && record.state !== 'TERMINAL') {
        this.#writeRecord(lock, { ...record, state: 'TERMINAL', transitionGeneration: record.transitionGeneration + 1 }, 'authority.tombstone');
      }
      this.#terminate(head, 'cancelled', { type: 'Cancelled', data: { completed_turns: head.completedTurns } }, null);
    } finally {
      this.#release(lock, runId);
    }
    return this.show(runId);
  }

  /**
   * The run's v1alpha2 payload. Only while suspended at a completed turn boundary or terminal;
   * the codec refuses anything else (pending interactions, unresolved mutations, …) fail closed.
   */
  exportSnapshot(runId: string): ExportedSnapshot {
    this.#head(runId);
    // Under the run's lock, so the head and the messages are read from one state of the run.
    const lock = this.#lock(runId);
    try {
      return this.#export(runId);
    } finally {
      lock.release();
    }
  }


  /**
   * Export a suspended (or terminal) run as an envelope signed by the run authority.
   * Signing SUSPENDED keeps exclusive ownership: the record binds the exact payload digest and
   * claim; an identical repeat export returns the same bytes; a differing claim for the same
   * transition generation is refused (`claim_conflict`).
   */
  exportEnvelope(runId: string): SignedExport {
    const authority = this.#requireAuthority();
    this.#head(runId);
    const lock = this.#lock(runId);
    try {
      const payload = this.#export(runId);
      const record = this.#ownedRecord(runId)!;
      if (record.state === 'IMPORTING') throw importIncomplete(runId);
      // A claim bound at the current transition generation makes export idempotent (or refuses a differing one).
      const bound = record.claimHmac !== undefined && record.claimGeneration === record.transitionGeneration;
      const keyGeneration = bound ? record.keyGeneration! : authority.currentKeyGeneration();
      const transitionGeneration = bound ? record.claimGeneration! : record.transitionGeneration;
      const envelope = signEnvelope({
        payload: payload.bytes,
        scopeId: authority.scopeId,
        keyGeneration,
        hmacOf: (mac) => authority.claim({ keyGeneration, runId, transitionGeneration, macInput: mac }),
      });
      const claimHex = toHex(envelope.claim.hmac);
      if (bound) {
        if (record.payloadSha256 !== payload.sha256 || !hexEqual(record.claimHmac!, claimHex)) {
          throw conflict('claim_conflict', `A different snapshot of run ${runId} is already signed at this generation.`, {
            nextAction: `resume the run to start a new generation: loopx run resume ${runId}`,
          });
        }
      } else {
        this.#writeRecord(
          lock,
          {
            ...record,
            state: payload.state.lifecycle === 'suspended' ? 'SUSPENDED' : 'TERMINAL',
            payloadSha256: payload.sha256,
            claimHmac: claimHex,
            keyGeneration,
            claimGeneration: transitionGeneration,
            lastSequence: payload.state.lastSequence,
          },
          'authority.export',
        );
      }
      return { bytes: encodeEnvelope(envelope), envelope, payloadSha256: payload.sha256, state: payload.state };
    } finally {
      lock.release();
    }
  }

  /**
   * Import a signed snapshot into this root (RFC 0007). Order: structure and digest → keyed claim
   * verification, before the root is even opened → terminal refusal → static compatibility, before
   * anything is leased → the run's import lock (waiting out a competing importer) → the run's lock
   * (its owner must be dead) and a fresh run id here → lease the recorded tool plan and recompute
   * PlanIdentity → IMPORTING (the consume point, binding the snapshot's digest and claim) → commit
   * the kernel run with its definition → ACTIVE.
   * A failure before the consume point changes nothing; from the moment the consume write is
   * invoked the outcome is uncertain (`import_uncertain`) and is never retried automatically. The
   * same import run again into the root the IMPORTING record names completes it (idempotently);
   * every other root gets `snapshot_consumed`.
   */
  async importSnapshot(bytes: Uint8Array, options: { agent?: AgentDefinition } = {}): Promise<RunView> {
    const authority = this.#requireAuthority();
    const envelope = decodeEnvelope(bytes);
    const state = envelope.state;
    const runId = state.runId;
    const seen = this.#verifiedRecord(envelope);
    // ── the claim verified: only from here on may this root be opened or changed ──
    if (state.lifecycle !== 'suspended') {
      throw rejected('snapshot_terminal', `The snapshot of run ${runId} is ${state.lifecycle}: terminal snapshots are for inspection and are never imported as live.`, {
        nextAction: 'inspect it: loopx run inspect <snapshot-file>',
      });
    }
    if (seen!.state === 'TERMINAL') {
      throw conflict('run_tombstoned', `Run ${runId} has ended; its snapshots are never imported as live.`, { nextAction: `see how it ended: loopx authority show --run ${runId}` });
    }
    if (!this.#importable(seen, seen)) throw consumed(runId);
    const def = this.#definitionForImport(state, options.agent);
    this.#checkStaticCompatibility(state, def);

    // Importers take the import lock before the run's lock, so a competitor that got here first
    // finishes (consumed, or failed before consuming) before this one reads the record again.
    const importLease = await authority.beginImport(runId);
    try {
      const lock = this.#tryLock(runId);
      if (!lock) {
        // No importer holds it (we hold the import lock): the original owner is alive, unless the
        // snapshot was consumed meanwhile and its new owner is completing it.
        if (!this.#importable(authority.readRecord(runId), seen)) throw consumed(runId);
        throw conflict('run_owner_alive', `A live process holds run ${runId}; import needs its original owner to be gone.`, {
          nextAction: 'stop the process that runs it, then import again',
        });
      }
      try {
        const current = authority.readRecord(runId);
        if (!current || !this.#importable(current, seen)) throw consumed(runId);
        const head = this.store.get(runId);
        // Completing an import whose kernel commit landed: the kernel run is exactly the snapshot's, never driven.
        const landed = current.state === 'IMPORTING' && head !== undefined && head.importedAtSequence === state.lastSequence && head.lastSequence === state.lastSequence && head.lifecycle === 'suspended';
        if (head && !landed) throw conflict('run_known', `This root already knows run ${runId}.`, { nextAction: 'import into a root that has never seen this run' });
        const planLease = landed ? undefined : this.application.toolPlans.lease(state.planIdentity.toolPlanId);
        try {
          if (planLease && this.application.planIdentityFromLease(def, planLease).fingerprint !== state.planIdentity.fingerprint) {
            throw rejected('plan_identity_mismatch', `The tool plan ${state.planIdentity.toolPlanId} here differs from the one run ${runId} was made with.`, {
              nextAction: 'import with the application version that exported it',
            });
          }
          let importing = current;
          if (current.state === 'SUSPENDED') {
            importing = { ...current, state: 'IMPORTING', transitionGeneration: current.transitionGeneration + 1, ownerRoot: this.rootId, updatedAt: '' };
            // Once the writer is invoked the rename (or its durability barrier) may have happened.
            this.#uncertain(runId, () => this.#writeRecord(lock, importing, 'authority.import.consume'));
          }
          // ── past the consume point: any failure is uncertain, never retried automatically ──
          this.#uncertain(runId, () => {
            if (!landed) {
              this.store.insertImported(importedHead(state), state.messages, def);
              faultPoint(FAULT_IMPORT_AFTER_KERNEL_COMMIT);
            }
            // The import lock and the run lock are released even when this Activate is uncertain:
            // the committed kernel run is suspended and import never starts a driver for it, so
            // there is no host to stop and join; any later driver must take the run lock and write
            // ACTIVE (#activateRecord, or this completion) before its first turn.
            this.#writeRecord(lock, { ...importing, state: 'ACTIVE' }, 'authority.import.activate');
          });
        } finally {
          planLease?.release();
        }
      } finally {
        lock.release();
      }
    } finally {
      importLease.release();
    }
    return this.show(runId);
  }

  /** Check a signed snapshot's claim against the local authority, without changing anything. */
  verifySnapshot(bytes: Uint8Array): { readonly valid: boolean; readonly record_state: string | null; readonly payload_sha256: string } {
    this.#requireAuthority();
    const envelope = decodeEnvelope(bytes);
    let record: RunRecord | undefined;
    try {
      record = this.#verifiedRecord(envelope);
    } catch (e) {
      if (!hasCode(e, ENVELOPE_ERRORS.claimInvalid)) throw e;
    }
    return { valid: record !== undefined, record_state: record?.state ?? null, payload_sha256: toHex(envelope.payloadSha256) };
  }

  /**
   * The run's record, provided the envelope's claim verifies with the authority's key *and* is the
   * claim (and digest) the record binds; else the one secret-safe `snapshot_claim_invalid`.
   * Reads only the authority: never the root.
   */
  #verifiedRecord(envelope: SnapshotEnvelope): RunRecord {
    const authority = this.#requireAuthority();
    const runId = envelope.state.runId;
    const seen = authority.readRecord(runId);
    verifyEnvelope(envelope, (mac, claim) => {
      const macOk = authority.verifyClaim(claim.scopeId, { keyGeneration: claim.keyGeneration, runId, transitionGeneration: seen?.claimGeneration ?? 0, macInput: mac }, claim.hmac);
      const boundOk = seen?.claimHmac !== undefined && hexEqual(seen.claimHmac, toHex(claim.hmac)) && seen.payloadSha256 === toHex(envelope.payloadSha256);
      return macOk && boundOk;
    });
    return seen!;
  }

  /**
   * Whether `record` still lets the verified snapshot (whose record was `seen`) be imported here:
   * it binds the same claim and digest, and is SUSPENDED, or IMPORTING into this very root (an
   * interrupted import, which running the same import again completes).
   */
  #importable(record: RunRecord | undefined, seen: RunRecord): boolean {
    if (!record || record.claimHmac === undefined || !hexEqual(record.claimHmac, seen.claimHmac!) || record.payloadSha256 !== seen.payloadSha256) return false;
    if (record.state === 'SUSPENDED') return true;
    // A root without engine.db has no id yet, so it cannot be the owner: do not create one to find out.
    return record.state === 'IMPORTING' && this.#hasRootState() && record.ownerRoot === this.rootId;
  }

  #hasRootState(): boolean {
    return this.#store !== undefined || this.#root === undefined || existsSync(join(this.#root, LAYOUT.engineDb));
  }

  /** Run a step at or after the consume point: any failure of it is `import_uncertain`. */
  #uncertain(runId: string, step: () => void): void {
    try {
      step();
    } catch (e) {
      throw internal('import_uncertain', `Importing run ${runId} failed after its snapshot was consumed; it is not retried automatically.`, {
        cause: e,
        nextAction: IMPORT_INCOMPLETE_ACTION,
        details: { run_id: runId },
      });
    }
  }

  #definitionForImport(state: RunSnapshotState, given: AgentDefinition | undefined): AgentDefinition {
    const matches = (d: AgentDefinition) =>
      d.id === state.definition.id && d.version === state.definition.version && d.model.provider === state.model.provider && d.model.modelId === state.model.modelId && d.turnLimit === state.turnLimit && d.toolPlan === state.planIdentity.toolPlanId;
    const mismatch = () =>
      rejected('import_definition_mismatch', `The agent definition does not match the snapshot's (${state.definition.id}@${state.definition.version}).`, {
        nextAction: 'pass the agent file the run was started with',
      });
    // A root with no engine.db yet has stored nothing: reading must not create it (a refused import changes nothing).
    const stored = this.#hasRootState() ? this.store.getDefinition(state.definition) : undefined;
    if (given) {
      const def = defineAgent(given);
      if (!matches(def)) throw mismatch();
      // The kernel commit stores it: a differing stored one must be refused now, before the consume point.
      if (stored && canonicalJson(agentDefinitionToFile(stored)) !== canonicalJson(agentDefinitionToFile(def))) throw mismatch();
      return def;
    }
    const known = stored ?? this.application.agent(state.definition);
    if (known) {
      if (!matches(known)) throw mismatch();
      return known;
    }
    if (state.model.provider === SCRIPTED_PROVIDER) {
      throw rejected('import_definition_unknown', `This root does not know agent ${state.definition.id}@${state.definition.version}, and its scripted model needs the definition's script.`, {
        nextAction: 'pass the agent file: loopx run import <snapshot-file> --agent <agent-file>',
      });
    }
    // Everything a non-scripted definition holds is in the snapshot (the system prompt is in the history).
    return defineAgent({ id: state.definition.id, version: state.definition.version, model: state.model, turnLimit: state.turnLimit, toolPlan: state.planIdentity.toolPlanId });
  }

  /** Static compatibility, from declarations only — before any plan is leased or anything launched. */
  #checkStaticCompatibility(state: RunSnapshotState, def: AgentDefinition): void {
    const recorded = state.planIdentity;
    if (recorded.compatibilityIdentity === '') {
      throw rejected('snapshot_compatibility_empty', 'The snapshot was made by a convenience engine, which sets no compatibility identity: it is for inspection only.', {
        nextAction: 'run the agent under a full application (defineApplication) to move it between engines',
      });
    }
    if (recorded.compatibilityIdentity !== this.application.compatibilityIdentity) {
      throw rejected('snapshot_compatibility_mismatch', `The snapshot needs compatibility ${recorded.compatibilityIdentity}; this engine is ${this.application.compatibilityIdentity || '(empty)'}.`, {
        nextAction: 'import with the application version that exported it',
      });
    }
    const here = this.application.staticComponentsFor(def);
    const key = (c: { kind: string; name: string; module: string; version: string; sourceSha256: string }) => JSON.stringify([c.kind, c.name, c.module, c.version, c.sourceSha256]);
    const hereKeys = new Set(here.map(key));
    const recordedKeys = new Set(recorded.components.map(key));
    const missing = recorded.components.filter((c) => !hereKeys.has(key(c))).map((c) => `${c.kind}:${c.name}`);
    const unexpected = here.filter((c) => !recordedKeys.has(key(c))).map((c) => `${c.kind}:${c.name}`);
    if (missing.length > 0 || unexpected.length > 0) {
      throw rejected('snapshot_component_mismatch', `The components of this engine differ from those the snapshot was made with (${[...missing, ...unexpected].join(', ')}).`, {
        nextAction: 'import with the application version that exported it',
        details: { missing, unexpected },
      });
    }
  }

  #requireAuthority(): RunAuthority {
    if (!this.authority) throw internal('authority_required', 'Signed snapshots need a run authority; this engine has none.');
    return this.authority;
  }

  /** The run's authority record, which must name this root as its owner (undefined without an authority). */
  #ownedRecord(runId: string): RunRecord | undefined {
    if (!this.authority) return undefined;
    const record = this.authority.readRecord(runId);
    if (!record) {
      throw rejected('run_authority_record_missing', `The run authority has no record of run ${runId}.`, { nextAction: 'use the authority directory this root was used with (--authority-dir)' });
    }
    if (record.ownerRoot !== this.rootId) {
      throw conflict('run_moved', `Run ${runId} is owned by another runtime root; this copy will never run again.`, {
        nextAction: 'continue the run in the root that imported it',
      });
    }
    return record;
  }

  /** Ownership for continuing execution: owned, and ACTIVE (an import left IMPORTING here is activated). */
  #activeRecord(runId: string): void {
    const record = this.#ownedRecord(runId);
    if (!record || record.state === 'ACTIVE') return;
    if (record.state === 'TERMINAL') throw this.#tombstonedError(runId);
    throw conflict('run_not_active', `Run ${runId} is ${record.state} in the run authority.`, { nextAction: `resume it: loopx run resume ${runId}` });
  }

  /**
   * Local resume's authority step, while the kernel is still suspended: SUSPENDED → ACTIVE at the
   * next transition generation (the old claim dies, so that snapshot can never be imported);
   * IMPORTING here with the kernel run present → ACTIVE (completes an interrupted import).
   */
  #activateRecord(lock: RunLock, runId: string): void {
    const record = this.#ownedRecord(runId);
    if (!record || record.state === 'ACTIVE') return;
    if (record.state === 'TERMINAL') throw this.#tombstonedError(runId);
    const next: RunRecord =
      record.state === 'SUSPENDED'
        ? { runId, state: 'ACTIVE', transitionGeneration: record.transitionGeneration + 1, ownerRoot: record.ownerRoot, updatedAt: '' }
        : { ...record, state: 'ACTIVE' };
    this.#writeRecord(lock, next, 'authority.resume');
  }

  #writeRecord(lock: RunLock, record: RunRecord, fault?: string): void {
    if (!this.authority) return;
    if (!lock.lease) throw leaseRequired(record.runId);
    this.authority.writeRecord(lock.lease, { ...record, updatedAt: new Date().toISOString() }, fault ? { fault } : {});
  }

  /** Release a run lock; a run that ended while held gets its tombstone first. */
  #release(lock: RunLock, runId: string): void {
    try {
      const head = this.store.get(runId);
      if (this.authority && lock.lease && !lock.lease.released && head && TERMINAL_LIFECYCLES.includes(head.lifecycle)) {
        const record = this.authority.readRecord(runId);
        // The tombstone is a transition: a claim bound earlier stays verifiable (so its snapshot is
        // refused as tombstoned) but no longer counts as this generation's export.
        if (record && record.ownerRoot === this.rootId && record.state !== 'TERMINAL') {
          this.#writeRecord(lock, { ...record, state: 'TERMINAL', transitionGeneration: record.transitionGeneration + 1 }, 'authority.tombstone');
        }
      }
    } finally {
      lock.release();
    }
  }

  #export(runId: string): ExportedSnapshot {
    const head = this.#head(runId);
    if (head.lifecycle === 'active') {
      const waiting = this.#view(head).waiting_for;
      throw rejected('export_run_active', `Run ${runId} is active; only a suspended or finished run can be exported.`, {
        nextAction:
          waiting?.kind === 'interaction'
            ? `answer it, then suspend: loopx run answer ${runId} ${waiting.interaction_id} TEXT`
            : waiting?.kind === 'resolution'
              ? `settle its uncertain call, then suspend: loopx run resolve ${runId} ${waiting.call_ids[0]} (--committed RESULT | --absent | --abandon)`
              : `suspend it first: loopx run suspend ${runId}`,
      });
    }
    const unresolved = this.store.mutations(runId).filter((m) => m.state === 'intent' || m.state === 'uncertain');
    if (unresolved.length > 0) {
      throw rejected('export_unresolved_mutation', `Run ${runId} has ${unresolved.length} mutating call(s) with an unknown outcome.`, {
        nextAction: `settle it: loopx run resolve ${runId} ${unresolved[0]!.callId} (--committed RESULT | --absent | --abandon)`,
        details: { call_ids: unresolved.map((m) => m.callId) },
      });
    }
    const state: RunSnapshotState = {
      runId: head.runId,
      definition: head.definition,
      model: head.model,
      turnLimit: head.turnLimit,
      completedTurns: head.completedTurns,
      messages: this.store.messages(runId),
      planIdentity: head.planIdentity,
      usedInteractionIds: head.usedInteractionIds,
      lastSequence: head.lastSequence,
      lifecycle: head.lifecycle,
    };
    const bytes = encodeSnapshot(state);
    return { bytes, sha256: snapshotDigest(bytes), state };
  }

  // ── the driver ───────────────────────────────────────────────────────────────────────

  /** Drive the run (whose lock the caller holds) until it suspends, finishes, or must wait. */
  async #drive(runId: string): Promise<void> {
    const first = this.#head(runId);
    if (first.lifecycle !== 'active') return;
    const def = this.#checkPlan(first);
    const provider = this.application.providerFor(def);
    const lease = this.application.toolPlans.lease(def.toolPlan);
    try {
      this.#settleOpenCalls(runId);
      for (;;) {
        const head = this.#head(runId);
        if (head.lifecycle !== 'active' || head.pendingInteraction) return;
        if (head.turnInProgress) {
          if ((await this.#continueTurn(head, lease)) === 'waiting') return;
          continue;
        }
        if (this.store.suspendRequested(runId) || (head.suspendAtTurn !== null && head.completedTurns >= head.suspendAtTurn)) {
          this.#suspendAtBoundary(head);
          return;
        }
        if (head.completedTurns >= head.turnLimit) {
          this.#terminate(head, 'failed', { type: 'Failed', data: { code: 'turn_limit_reached', completed_turns: head.completedTurns } }, { code: 'turn_limit_reached', message: `The run used all ${head.turnLimit} turns without a final answer.` });
          return;
        }
        await this.#modelStep(head, def, provider, lease);
      }
    } finally {
      lease.release();
    }
  }

  #suspendAtBoundary(head: RunHead): void {
    this.#commit(head, {
      head: { ...head, lifecycle: 'suspended', suspendAtTurn: null },
      events: [{ type: 'Suspended', data: { completed_turns: head.completedTurns } }],
      clearSuspendRequest: true,
    });
  }

  /**
   * The run's definition, provided this application still has its tool plan and the same
   * PlanIdentity. Commands that continue a run call it before their first commit, so a refusal
   * (`plan_identity_changed`, `tool_plan_missing`) leaves the run exactly as it was.
   */
  #checkPlan(head: RunHead): AgentDefinition {
    const def = this.store.getDefinition(head.definition);
    if (!def) throw internal('definition_missing', `The definition of run ${head.runId} is missing from this root.`);
    const expected = this.application.planIdentityFor(def);
    if (expected.fingerprint !== head.planIdentity.fingerprint) {
      throw rejected('plan_identity_changed', `The tools or components of run ${head.runId} changed since it started; it will not continue under different code.`, {
        nextAction: 'continue it with the same build of loopx that started it (component identities hash the built source)',
      });
    }
    return def;
  }

  async #modelStep(head: RunHead, def: AgentDefinition, provider: ModelProvider, lease: ToolPlanLease): Promise<void> {
    const turn = head.completedTurns + 1;
    const runId = head.runId;
    // A turn whose model call was interrupted is retried under the same ids, without a second TurnStarted.
    const started = head.turnInProgress ? head : this.#commit(head, { head: { ...head, turnInProgress: true }, events: [{ type: 'TurnStarted', data: { turn } }] });
    const callId = modelCallId(runId, turn, 0);
    let response;
    try {
      response = await provider.generate({
        runId,
        turn,
        modelCallId: callId,
        model: def.model,
        messages: this.store.messages(runId),
        tools: lease.plan.tools.map((t) => t.definition),
      });
    } catch (e) {
      const code = isLoopxError(e) ? e.code : 'model_failed';
      this.#terminate(started, 'failed', { type: 'Failed', data: { code, turn } }, { code, message: `The model call failed: ${errorMessage(e)}` });
      return;
    }
    const parts: Array<{ type: 'text'; text: string } | ToolCallPart> = [];
    if (response.text) parts.push({ type: 'text', text: response.text });
    response.toolCalls.forEach((c, i) => {
      let argumentsJson: string;
      try {
        argumentsJson = canonicalJson(c.arguments);
      } catch {
        // Not representable as JSON: recorded as null, which no tool accepts (see #callTool), so
        // nothing executes with arguments the model did not send.
        argumentsJson = 'null';
      }
      parts.push({ type: 'tool_call', callId: toolCallId(runId, turn, i), toolName: c.toolName, argumentsJson });
    });
    const assistant: Message = { id: messageId(runId, turn, 0), role: 'assistant', parts };
    const toolCalls = parts.filter((p): p is ToolCallPart => p.type === 'tool_call');
    const events: NewEvent[] = [{ type: 'ModelResponded', data: { turn, model_call_id: callId, text: response.text, tool_calls: toolCalls.map((c) => ({ call_id: c.callId, tool_name: c.toolName })) } }];
    const next: RunHead = { ...started, messageCount: started.messageCount + 1 };
    if (toolCalls.length === 0) {
      // A final answer completes the turn and the run.
      events.push({ type: 'TurnCompleted', data: { turn } }, { type: 'Completed', data: { completed_turns: turn } });
      this.#commit(started, { head: { ...next, turnInProgress: false, completedTurns: turn, lifecycle: 'completed' }, messages: [{ index: started.messageCount, message: assistant }], events, clearSuspendRequest: true });
      return;
    }
    this.#commit(started, { head: next, messages: [{ index: started.messageCount, message: assistant }], events });
  }

  /** Work through the current turn's tool calls in order; complete the turn when all are settled. */
  async #continueTurn(head: RunHead, lease: ToolPlanLease): Promise<'done' | 'waiting'> {
    const runId = head.runId;
    const turn = head.completedTurns + 1;
    const messages = this.store.messages(runId);
    const assistantIndex = messages.findIndex((m) => m.id === messageId(runId, turn, 0));
    if (assistantIndex < 0) {
      // The driver died between TurnStarted and ModelResponded: nothing of the turn is recorded, so
      // the model call is simply made again under the same ids.
      const def = this.store.getDefinition(head.definition)!;
      await this.#modelStep(head, def, this.application.providerFor(def), lease);
      return 'done';
    }
    const calls = messages[assistantIndex]!.parts.filter((p): p is ToolCallPart => p.type === 'tool_call');
    for (let i = 0; i < calls.length; i++) {
      const call = calls[i]!;
      const index = assistantIndex + 1 + i;
      const existing = messages[index];
      const status = existing ? (existing.parts[0] as ToolResultPart).status : undefined;
      if (status === 'ok' || status === 'error') continue;
      if (status === 'interaction_pending' || status === 'mutation_uncertain') return 'waiting';
      const outcome = await this.#callTool(this.#head(runId), lease, call, i, index, turn);
      if (outcome === 'waiting') return 'waiting';
    }
    const current = this.#head(runId);
    this.#commit(current, {
      head: { ...current, turnInProgress: false, completedTurns: turn },
      events: [{ type: 'TurnCompleted', data: { turn } }],
    });
    return 'done';
  }

  async #callTool(head: RunHead, lease: ToolPlanLease, call: ToolCallPart, callIndex: number, index: number, turn: number): Promise<'done' | 'waiting'> {
    const runId = head.runId;
    const id = messageId(runId, turn, callIndex + 1);
    const settle = (h: RunHead, status: ToolResultStatus, result: JsonValue, extra: NewEvent[] = [], mutation?: MutationRecord): RunHead => {
      const grows = index >= h.messageCount;
      return this.#commit(h, {
        head: { ...h, messageCount: grows ? index + 1 : h.messageCount },
        messages: [{ index, message: toolMessage(id, call.callId, call.toolName, status, result) }],
        ...(mutation ? { mutations: [mutation] } : {}),
        events: [...extra, { type: 'ToolResulted', data: { call_id: call.callId, tool_name: call.toolName, status } }],
      });
    };
    const calledEvent: NewEvent = { type: 'ToolCalled', data: { call_id: call.callId, tool_name: call.toolName } };

    const tool = lease.tool(call.toolName);
    let args: { [k: string]: JsonValue };
    try {
      args = JSON.parse(call.argumentsJson) as { [k: string]: JsonValue };
      lease.validateArguments(call.toolName, args);
      if (typeof args !== 'object' || args === null || Array.isArray(args)) {
        throw toolArgumentsInvalid(call.toolName, 'they are not a JSON object');
      }
    } catch (e) {
      settle(head, 'error', toolError(e), [calledEvent]);
      return 'done';
    }
    if (!tool) {
      settle(head, 'error', { error: 'tool_unknown', message: `No tool named ${call.toolName}.` }, [calledEvent]);
      return 'done';
    }
    const ctx: ToolContext = {
      runId,
      callId: call.callId,
      operationId: operationIdOf(call.callId),
      turn,
      requestInteraction: (interactionId: string, prompt: string): InteractionRequest => ({ kind: 'interaction_request', interactionId, prompt }),
    };

    if (tool.definition.mutating) return this.#callMutating(head, tool, call, args, ctx, settle, calledEvent);

    let output: unknown;
    try {
      output = await tool.execute(args, ctx);
    } catch (e) {
      settle(head, 'error', toolError(e), [calledEvent]);
      return 'done';
    }
    if (isInteractionRequest(output)) {
      const iid = output.interactionId;
      if (head.usedInteractionIds.includes(iid)) {
        settle(head, 'error', { error: 'interaction_id_reused', message: `Interaction id ${iid} was already used in this run; ids are used once.` }, [calledEvent]);
        return 'done';
      }
      const grows = index >= head.messageCount;
      this.#commit(head, {
        head: { ...head, messageCount: grows ? index + 1 : head.messageCount, pendingInteraction: { interactionId: iid, callId: call.callId, prompt: output.prompt } },
        messages: [{ index, message: toolMessage(id, call.callId, call.toolName, 'interaction_pending', { interaction_id: iid, prompt: output.prompt }) }],
        events: [calledEvent, { type: 'InteractionRequested', data: { interaction_id: iid, call_id: call.callId, prompt: output.prompt } }],
      });
      return 'waiting';
    }
    const result = toJsonResult(output);
    settle(head, result.ok ? 'ok' : 'error', result.value, [calledEvent]);
    return 'done';
  }

  async #callMutating(
    head: RunHead,
    tool: Tool,
    call: ToolCallPart,
    args: { [k: string]: JsonValue },
    ctx: ToolContext,
    settle: (h: RunHead, status: ToolResultStatus, result: JsonValue, extra?: NewEvent[], mutation?: MutationRecord) => RunHead,
    calledEvent: NewEvent,
  ): Promise<'done' | 'waiting'> {
    const intent: MutationRecord = { runId: head.runId, callId: call.callId, turn: ctx.turn, toolName: call.toolName, argumentsJson: call.argumentsJson, state: 'intent', resultJson: null };
    const record = (h: RunHead, state: MutationState, status: ToolResultStatus, result: JsonValue, extra: NewEvent[] = []): 'done' | 'waiting' => {
      settle(h, status, result, extra, { ...intent, state, resultJson: canonicalJson(result) });
      return state === 'uncertain' ? 'waiting' : 'done';
    };
    const journal = this.#effects.forWrite();
    let begun: Begun;
    try {
      begun = await beginEffect(journal, tool, args, ctx);
    } catch (e) {
      // Refused before any dispatch (its description, or its intent by the effect owner): a definite failure.
      // Anything else (the journal failed) stops the driver; the next one finds the call as the effect owner has it.
      if (!isLoopxError(e) || e.kind === 'internal') throw e;
      return record(head, 'failed', 'error', toolError(e), [calledEvent]);
    }
    if (begun.kind !== 'dispatch') {
      // Journalled by a driver that died before recording it here: its outcome is taken, or it stays uncertain; never run again.
      const known = takenOutcome(begun.effect) ?? undispatchedOutcome(call.toolName);
      return record(head, known.state, known.status, known.result, [calledEvent]);
    }
    // Durable intent before dispatch — the effect owner's, then the engine's: from here on a crash leaves an intent without an outcome.
    const afterIntent = this.#commit(head, { head, mutations: [intent], events: [calledEvent] });
    faultPoint(FAULT_AFTER_MUTATION_INTENT);
    let outcome: CallOutcome;
    try {
      outcome = outcomeOfOutput(await tool.execute(args, { ...ctx, effect: begun.effect }));
    } catch (e) {
      outcome = outcomeOfThrow(call.toolName, e);
    }
    // The effect owner's outcome first; one settled there meanwhile (a reconciliation) stands.
    const settledElsewhere = settleEffect(journal, ctx.operationId, outcome);
    faultPoint(FAULT_AFTER_EFFECT_SETTLED);
    const taken = settledElsewhere && takenOutcome(settledElsewhere);
    if (taken) return record(afterIntent, taken.state, taken.status, taken.result);
    return record(afterIntent, outcome.state, outcome.status, outcome.result);
  }

  /**
   * Open mutating calls found by a driver holding the lock. One whose effect the effect owner has
   * settled takes that outcome (readback); an intent without one was left by a dead driver and
   * becomes uncertain. Returns the calls whose outcome was taken from the effect owner.
   */
  #settleOpenCalls(runId: string): Set<string> {
    const taken = new Set<string>();
    const open = this.store.mutations(runId).filter((m) => m.state === 'intent' || m.state === 'uncertain');
    if (open.length === 0) return taken;
    let head = this.#head(runId);
    for (const m of open) {
      const effect = this.#effects.effectOf(m.callId);
      const outcome = effect && takenOutcome(effect);
      if (outcome) {
        head = this.#settleCall(head, m, outcome.state, outcome.status, outcome.result, { settled_by: 'effect_owner' });
        taken.add(m.callId);
      } else if (m.state === 'intent') {
        const result = { error: 'mutation_uncertain', message: `The process running ${m.toolName} stopped before its outcome was recorded. It will not be re-run.` };
        head = this.#settleCall(head, m, 'uncertain', 'mutation_uncertain', result);
      }
    }
    return taken;
  }

  /** Commit a mutating call's result: its tool message, its mutation row and `ToolResulted`. */
  #settleCall(head: RunHead, m: MutationRecord, state: MutationState, status: ToolResultStatus, result: JsonValue, data: { [k: string]: JsonValue } = {}): RunHead {
    const runId = head.runId;
    const assistantIndex = this.store.messages(runId).findIndex((msg) => msg.id === messageId(runId, m.turn, 0));
    if (assistantIndex < 0) throw internal('uncertain_call_without_message', `Mutating call ${m.callId} has no model message.`);
    const callIndex = Number(m.callId.slice(m.callId.lastIndexOf('/k') + 2));
    const index = assistantIndex + 1 + callIndex;
    return this.#commit(head, {
      head: { ...head, messageCount: Math.max(head.messageCount, index + 1) },
      messages: [{ index, message: toolMessage(messageId(runId, m.turn, callIndex + 1), m.callId, m.toolName, status, result) }],
      mutations: [{ ...m, state, resultJson: canonicalJson(result) }],
      events: [{ type: 'ToolResulted', data: { call_id: m.callId, tool_name: m.toolName, status, ...data } }],
    });
  }

  /** End a run; open tool calls of an interrupted turn are settled as errors so the history stays matched. */
  #terminate(head: RunHead, lifecycle: 'failed' | 'cancelled', event: NewEvent, failure: RunHead['failure']): void {
    const runId = head.runId;
    const messages = this.store.messages(runId);
    const upserts: Array<{ index: number; message: Message }> = [];
    let messageCount = head.messageCount;
    if (head.turnInProgress) {
      const turn = head.completedTurns + 1;
      const assistantIndex = messages.findIndex((m) => m.id === messageId(runId, turn, 0));
      if (assistantIndex >= 0) {
        const calls = messages[assistantIndex]!.parts.filter((p): p is ToolCallPart => p.type === 'tool_call');
        calls.forEach((call, i) => {
          const index = assistantIndex + 1 + i;
          const status = messages[index] ? (messages[index]!.parts[0] as ToolResultPart).status : undefined;
          if (status === 'ok' || status === 'error' || status === 'mutation_uncertain') return;
          upserts.push({ index, message: toolMessage(messageId(runId, turn, i + 1), call.callId, call.toolName, 'error', { error: `run_${lifecycle}`, message: `The run was ${lifecycle} before this call finished.` }) });
          messageCount = Math.max(messageCount, index + 1);
        });
      }
    }
    this.#commit(head, {
      head: { ...head, lifecycle, failure, pendingInteraction: null, messageCount, turnInProgress: head.turnInProgress },
      messages: upserts,
      events: [event],
      clearSuspendRequest: true,
    });
  }

  // ── plumbing ─────────────────────────────────────────────────────────────────────────

  #commit(head: RunHead, c: Omit<RunCommit, 'expectedSequence'>): RunHead {
    const events = this.store.commit({ ...c, expectedSequence: head.lastSequence });
    return { ...c.head, lastSequence: head.lastSequence + events.length };
  }

  #head(runId: string): RunHead {
    const head = this.store.get(runId);
    if (!head) throw runNotFound(runId);
    return head;
  }

  /**
   * Calls whose outcome is unknown: open here and without an outcome in the effect owner (a run
   * recorded before the effect journal: open here). An intent counts only when no live driver
   * holds the run (else it is in flight); a call the effect owner settled waits only for a driver
   * to take its outcome.
   */
  #uncertainCalls(runId: string): UncertainEffect[] {
    const open = this.store.mutations(runId).filter((m) => m.state === 'intent' || m.state === 'uncertain');
    if (open.length === 0) return [];
    const inFlight = open.some((m) => m.state === 'intent') && this.#isDriven(runId);
    return uncertainEffects(open.filter((m) => m.state === 'uncertain' || !inFlight), this.#effects);
  }

  #view(head: RunHead): RunView {
    const uncertain = this.#uncertainCalls(head.runId);
    return {
      run_id: head.runId,
      status: head.lifecycle,
      definition: { id: head.definition.id, version: head.definition.version },
      completed_turns: head.completedTurns,
      turn_limit: head.turnLimit,
      last_sequence: head.lastSequence,
      waiting_for: head.pendingInteraction
        ? { kind: 'interaction', interaction_id: head.pendingInteraction.interactionId, prompt: head.pendingInteraction.prompt }
        : uncertain.length > 0
          ? { kind: 'resolution', call_ids: uncertain.map((c) => c.call_id), effects: uncertain }
          : null,
      suspend_requested: head.lifecycle === 'active' && this.store.suspendRequested(head.runId),
      failure: head.failure,
    };
  }

  /** The authority tombstoned the run; a kernel not yet terminal means a cancel was interrupted. */
  #tombstonedError(runId: string): LoopxError {
    const head = this.#head(runId);
    if (TERMINAL_LIFECYCLES.includes(head.lifecycle)) return this.#terminalError(head);
    return rejected('run_cancel_incomplete', `Run ${runId} is tombstoned in the run authority but its cancel did not finish here.`, {
      nextAction: `finish it: loopx run cancel ${runId}`,
    });
  }

  #terminalError(head: RunHead): LoopxError {
    return rejected('run_terminal', `Run ${head.runId} is ${head.lifecycle}; a finished run never runs again.`, {
      nextAction: `inspect it: loopx run show ${head.runId}`,
    });
  }

  #tryLock(runId: string): RunLock | undefined {
    if (!RUN_ID.test(runId)) throw runNotFound(runId);
    if (this.authority) {
      const lease = this.authority.acquireRun(runId);
      return lease ? { lease, release: () => lease.release() } : undefined;
    }
    if (this.#root === undefined) {
      if (this.#memLocks.has(runId)) return undefined;
      this.#memLocks.add(runId);
      return { release: () => this.#memLocks.delete(runId) };
    }
    this.#openRoot();
    const lockDir = join(this.#root, 'locks');
    mkdirSync(lockDir, { recursive: true, mode: 0o700 });
    return tryLockExclusive(join(lockDir, `${runId}.lock`));
  }

  #lock(runId: string): RunLock {
    const lock = this.#tryLock(runId);
    if (!lock) {
      // Busy only when it is ours: a run another root owns is run_moved, whoever holds its lock now.
      const record = this.authority?.readRecord(runId);
      if (record && this.store.get(runId) && record.ownerRoot !== this.rootId) this.#ownedRecord(runId);
      throw conflict('run_busy', `Run ${runId} is being driven by another process or call.`, {
        nextAction: `wait for it, or follow it: loopx run events ${runId} --follow`,
      });
    }
    return lock;
  }

  #isDriven(runId: string): boolean {
    const lock = this.#tryLock(runId);
    if (!lock) return true;
    lock.release();
    return false;
  }

  #waitForCommit(runId: string, pollMs: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        off();
        signal?.removeEventListener('abort', done);
        resolve();
      };
      const timer = setTimeout(done, pollMs);
      const off = this.store.onCommit((id) => {
        if (id === runId) done();
      });
      signal?.addEventListener('abort', done, { once: true });
    });
  }
}

function toolMessage(id: string, callId: string, toolName: string, status: ToolResultStatus, result: JsonValue): Message {
  return { id, role: 'tool', parts: [{ type: 'tool_result', callId, toolName, status, resultJson: canonicalJson(result) }] };
}

const compareStrings = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);


export function openEngine(options: EngineOptions): Engine {
  return new Engine(options);
}

/** The short public shape of a run (`loopx run start|resume|… --json`, the daemon's run routes). */
export const runSummary = (v: RunView) => ({
  run_id: v.run_id,
  status: v.status,
  completed_turns: v.completed_turns,
  last_sequence: v.last_sequence,
  waiting_for: v.waiting_for,
  suspend_requested: v.suspend_requested,
  failure: v.failure,
});

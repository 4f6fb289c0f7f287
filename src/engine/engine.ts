/**
 * The run engine of one runtime root: a thin facade that opens the root's run store and effect
 * journal on first use and composes the parts that do the work — the run kernel (kernel.ts: start,
 * suspend, resume, answer, resolve, cancel), its turn driver (turns.ts), the RFC 0007 transfer
 * protocol (transfer.ts: signed export, verify, import), the run's ownership through the per-user
 * run authority (ownership.ts: locks, records, root binding) and the reads (reads.ts: views and
 * events). Those modules state the rules they keep; this one keeps these:
 *
 * - The engine always has a run authority: every run lock is the authority's (shared by every
 *   root of the user), every run has a durable authority record, and exports are signed. The one
 *   engine without one is read-only (`openReadOnlyEngine`): it serves the reads and refuses every
 *   command with `authority_required` before touching anything.
 * - Opening the engine opens nothing: the root (its directory, engine.db) is created or opened on
 *   first use, so a command refused before it needs the root — an import whose claim does not
 *   verify — leaves the root exactly as it was, or absent. `beforeRootOpen` (the runtime's
 *   admission of a writer) runs once, right before that first use: its refusal opens nothing.
 * - It holds no keys (the authority signs and verifies), and it never decides an effect's outcome
 *   by guessing (mutations.ts and the effect owner do).
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ensurePrivateDir, internal } from '../core/index.js';
import type { Message } from '../snapshot/index.js';
import type { AgentDefinition } from './agent.js';
import type { Application } from './application.js';
import type { RunEvent } from './events.js';
import { GoalTurnAccess } from './goal-turns.js';
import { EffectAccess, type CallEvidence, type Resolution, type UncertainEffect } from './mutations.js';
import { RunKernel, type ResolveOptions, type StartOptions } from './kernel.js';
import { RunOwnership, type AuthorityAdoption } from './ownership.js';
import { RunReads, type EventsOptions, type RunView } from './reads.js';
import { engineClosed, openRunStoreOf } from './run-reader.js';
import type { MutationRecord, RunStore } from './run-store/contract.js';
import { RunTransfer, type ExportedSnapshot, type SignedExport, type SnapshotVerification } from './transfer.js';
import { TurnDriver } from './turns.js';
import { LAYOUT, type effect as effectOwner } from '../owners/index.js';
import type { RebindOutcome, RunAuthority } from '../run-authority/index.js';

export { FAULT_AFTER_EFFECT_SETTLED, FAULT_AFTER_MUTATION_INTENT } from './turns.js';
export { FAULT_AFTER_QUOTA_DEBIT, FAULT_BEFORE_TURN_SETTLED, TURN_DEBIT_UNIT, turnTokens } from './goal-turns.js';
export {
  FAULT_IMPORT_AFTER_KERNEL_COMMIT,
  type ExportedSnapshot,
  type SignedExport,
  type SnapshotVerification,
} from './transfer.js';
export type { EventsOptions, RunView } from './reads.js';
export type { ResolveOptions, StartOptions } from './kernel.js';
export type { CallEvidence, Resolution, UncertainEffect };

export interface EngineOptions {
  readonly application: Application;
  /** Runtime root (engine.db lives here). Omit for an in-memory engine. */
  readonly root?: string;
  /** A store to use instead of the root's (tests). */
  readonly store?: RunStore;
  /** An effect journal to use instead of the root's effects.db, opened when first needed (tests). */
  readonly effects?: effectOwner.EffectJournal;
  /**
   * The per-user run authority: its run locks, per-run records and claims. The CLI and the daemon
   * pass the user's local authority; tests pass an in-memory one (or a local one in a temp dir).
   */
  readonly authority: RunAuthority;
  /**
   * Called once, before the engine first opens or creates anything in its root (the run store, the
   * effect journal): the runtime admits the writer here (runtime/admission.ts). A throw refuses the
   * operation with nothing of the root opened.
   */
  readonly beforeRootOpen?: () => void;
}

/** A read-only engine's options: no authority, so no command (`run list|show|events`). */
export type ReadOnlyEngineOptions = Omit<EngineOptions, 'authority'> & {
  /** Whether a live driver (any process) holds a run's lock now — the run authority's probe; without it reads report no live driver. */
  readonly isDriven?: (runId: string) => Promise<boolean>;
};

/** The parts that change runs: present exactly when the engine has an authority. */
interface Writer {
  readonly ownership: RunOwnership;
  readonly kernel: RunKernel;
  readonly transfer: RunTransfer;
}

export class Engine {
  readonly application: Application;
  readonly #root: string | undefined;
  #store: RunStore | undefined;
  readonly #effects: EffectAccess;
  readonly #goalTurns: GoalTurnAccess;
  #rootReady = false;
  readonly #beforeRootOpen: (() => void) | undefined;
  #rootAdmitted = false;
  #closed = false;
  readonly #reads: RunReads;
  readonly #writer: Writer | undefined;

  /** Opens nothing (see the header). `readOnly` is `openReadOnlyEngine`'s: an engine without an authority. */
  constructor(options: EngineOptions | (ReadOnlyEngineOptions & { readonly readOnly: true })) {
    this.application = options.application;
    this.#root = options.root;
    this.#store = options.store;
    this.#beforeRootOpen = options.beforeRootOpen;
    this.#effects = new EffectAccess({
      ...(options.root !== undefined ? { root: options.root } : {}),
      ...(options.effects ? { effects: options.effects } : {}),
      beforeOpen: () => this.#admitRoot(),
    });
    // Goal work turns run after the engine opened (and so admitted) the root.
    this.#goalTurns = new GoalTurnAccess(
      options.root !== undefined
        ? { root: options.root, ...('authority' in options ? { guard: options.authority } : {}) }
        : {},
    );
    const store = () => this.store;
    if ('readOnly' in options) {
      // Without the authority's probe its run locks are invisible here: reads report no live driver.
      this.#reads = new RunReads({ store, effects: this.#effects, isDriven: options.isDriven ?? (async () => false) });
      this.#writer = undefined;
      return;
    }
    const ownership = new RunOwnership({ authority: options.authority, root: options.root, store });
    this.#reads = new RunReads({ store, effects: this.#effects, isDriven: (runId) => ownership.isDriven(runId) });
    const turns = new TurnDriver({
      application: this.application,
      store,
      effects: this.#effects,
      goalTurns: this.#goalTurns,
    });
    this.#writer = {
      ownership,
      kernel: new RunKernel({
        application: this.application,
        store,
        effects: this.#effects,
        reads: this.#reads,
        ownership,
        turns,
      }),
      transfer: new RunTransfer({
        application: this.application,
        store,
        hasRootState: () => this.#hasRootState(),
        reads: this.#reads,
        ownership,
      }),
    };
  }

  /** The run authority (a read-only engine has none: `authority_required`). */
  get authority(): RunAuthority {
    return this.#write().ownership.authority;
  }

  get store(): RunStore {
    if (this.#closed) throw engineClosed();
    if (!this.#store) {
      this.#openRoot();
      this.#store = openRunStoreOf(this.#root);
    }
    return this.#store;
  }

  /**
   * This root's random identity: the owner name in authority records. It counts only from the
   * directory the authority bound it to: a byte copy is `root_is_copy`. A read-only engine reads
   * it without asking the authority (reading a copy stays possible).
   */
  async rootId(): Promise<string> {
    return this.#writer ? this.#writer.ownership.rootId() : this.store.rootId();
  }

  /**
   * The operator's explicit binding of this root to its directory (`loopx authority bind-root`):
   * for a root whose runs were recorded before bindings existed, or whose device changed. The
   * authority refuses it while the directory the id is bound to still exists.
   */
  async bindRootDirectory(): Promise<{ readonly root_id: string; readonly binding: RebindOutcome }> {
    return this.#write().ownership.bindRootDirectory();
  }

  /** `loopx authority bind-root --adopt`: preview, or (with the previewed digest) move this root to this engine's authority. */
  async adoptAuthority(confirm: string | undefined): Promise<AuthorityAdoption> {
    return this.#write().ownership.adoptAuthority(confirm);
  }

  /** Create (or open) the root and its engine.db now, rather than on first use (`loopx init`). */
  openRoot(): void {
    void this.store;
  }

  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#store?.close();
    this.#effects.close();
    this.#goalTurns.close();
  }

  // ── reads ────────────────────────────────────────────────────────────────────────────

  list(): Promise<RunView[]> {
    return this.#reads.list();
  }

  show(runId: string): Promise<RunView> {
    return this.#reads.show(runId);
  }

  /** What the run and the effect owner hold about the named mutating calls (public-safe; see CallEvidence). */
  callEvidence(runId: string, callIds: readonly string[]): Promise<CallEvidence[]> {
    return this.#reads.callEvidence(runId, callIds);
  }

  async messages(runId: string): Promise<Message[]> {
    return this.#reads.messages(runId);
  }

  async mutations(runId: string): Promise<MutationRecord[]> {
    return this.#reads.mutations(runId);
  }

  /** Events after `after`, in sequence order, with no gap or duplicate; see RunReads.events for `follow`. */
  events(runId: string, options: EventsOptions = {}): AsyncGenerator<RunEvent> {
    return this.#reads.events(runId, options);
  }

  // ── the run kernel ───────────────────────────────────────────────────────────────────

  async start(agent: AgentDefinition, options: StartOptions = {}): Promise<RunView> {
    return this.#write().kernel.start(agent, options);
  }

  /** Suspend at the next completed turn boundary — now, if the run is idle at one. */
  async suspend(runId: string): Promise<RunView> {
    return this.#write().kernel.suspend(runId);
  }

  /** Resume a suspended run (optionally for `turns` turns), or continue an interrupted active one. */
  async resume(runId: string, options: { turns?: number } = {}): Promise<RunView> {
    return this.#write().kernel.resume(runId, options);
  }

  async answer(runId: string, interactionId: string, text: string): Promise<RunView> {
    return this.#write().kernel.answer(runId, interactionId, text);
  }

  /** Settle an uncertain mutating call under its original call id, effect owner first; never re-runs it. */
  async resolve(runId: string, callId: string, resolution: Resolution, options: ResolveOptions = {}): Promise<RunView> {
    return this.#write().kernel.resolve(runId, callId, resolution, options);
  }

  async cancel(runId: string): Promise<RunView> {
    return this.#write().kernel.cancel(runId);
  }

  // ── the transfer protocol (RFC 0007) ─────────────────────────────────────────────────

  /** The run's unsigned v1alpha2 payload (suspended or terminal runs only). */
  async exportSnapshot(runId: string): Promise<ExportedSnapshot> {
    return this.#write().transfer.exportSnapshot(runId);
  }

  /** The run as an envelope signed by the run authority (binds SUSPENDED, or TERMINAL). */
  async exportEnvelope(runId: string): Promise<SignedExport> {
    return this.#write().transfer.exportEnvelope(runId);
  }

  /** Import a signed snapshot into this root: consumed once, activated, resumable at last_sequence+1. */
  async importSnapshot(bytes: Uint8Array, options: { agent?: AgentDefinition } = {}): Promise<RunView> {
    return this.#write().transfer.importSnapshot(bytes, options);
  }

  /** Check a signed snapshot's claim against the authority, without changing anything. */
  async verifySnapshot(bytes: Uint8Array): Promise<SnapshotVerification> {
    return this.#write().transfer.verifySnapshot(bytes);
  }

  // ── plumbing ─────────────────────────────────────────────────────────────────────────

  #write(): Writer {
    if (!this.#writer)
      throw internal(
        'authority_required',
        'This engine was opened read-only, without a run authority; changing or moving a run needs one.',
      );
    return this.#writer;
  }

  /** The root directory (created owner-only, or validated as private), once. */
  #openRoot(): void {
    if (this.#rootReady || this.#root === undefined) return;
    this.#admitRoot();
    ensurePrivateDir(this.#root);
    this.#rootReady = true;
  }

  /** `beforeRootOpen`, once: a refusal is thrown again on the next use, before anything opens. */
  #admitRoot(): void {
    if (this.#rootAdmitted || this.#root === undefined) return;
    this.#beforeRootOpen?.();
    this.#rootAdmitted = true;
  }

  /** Whether the root has stored anything: a store is open, it is in memory, or engine.db exists. */
  #hasRootState(): boolean {
    return this.#store !== undefined || this.#root === undefined || existsSync(join(this.#root, LAYOUT.engineDb));
  }
}

export function openEngine(options: EngineOptions): Engine {
  return new Engine(options);
}

/** An engine for reads only (`run list|show|events`, the daemon's read routes): no authority, every command refused. */
export function openReadOnlyEngine(options: ReadOnlyEngineOptions): Engine {
  const { application, root, store, effects, isDriven } = options;
  return new Engine({
    application,
    ...(root !== undefined ? { root } : {}),
    ...(store ? { store } : {}),
    ...(effects ? { effects } : {}),
    ...(isDriven ? { isDriven } : {}),
    readOnly: true,
  });
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
  ...(v.usage ? { usage: v.usage } : {}),
});

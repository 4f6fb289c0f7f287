/**
 * The Turn journal and the quota debit of a Goal work run: every engine turn of a run bound to a
 * session in this root goes through the session owner (a Turn journal) and the quota owner (one
 * debit), in the order their contracts require. The turn loop (turns.ts) calls it at each step.
 *
 * Rules it keeps:
 * - A run is Goal work here when a session of this root is bound to it. A run of the
 *   `loopx.goal-work.v1` plan without one is refused (`goal_work_unbound`); any other run has no
 *   journal and behaves as it always did.
 * - The run is pinned to the execution generation it began its turns under: the generation of its
 *   latest Turn journal, or — before its first turn — the session's current one. A rebind of the
 *   session moves the generation on, so the run's next owner write is the session owner's typed
 *   refusal (`session_generation_stale`): a fenced run never begins, phases or settles a turn.
 * - A session Turn is begun only inside an engine turn (after TurnStarted, before the model call)
 *   and closed at the engine's next boundary, before anything else happens there. So the run has
 *   at most one open Turn, and it belongs to the engine's current turn — or, at a boundary, to the
 *   turn just completed.
 * - Phases are recorded as an ordered prefix of TURN_PHASES: `host_execute` and `typed_result`
 *   once the model's response is durable, `validation` once every tool call has a definite result,
 *   `durable_writeback` once TurnCompleted is committed, `quota_spend` once the ledger holds the
 *   debit. A phase missed by a crash is recorded by the next driver before a later one (each record
 *   is an idempotent readback when present). The scheduler phases are not recorded: a Goal work
 *   turn applies no timer.
 * - The debit and the settlement share one settlement identity, the Turn key. The debit's amount
 *   is the turn's recorded usage — the provider's report committed with the response, else the
 *   estimate of the recorded response (usage.ts `debitTokens`) — so a repeated debit — after a
 *   crash between the debit and the settlement — is the same request: the ledger returns the
 *   original entry and never debits twice; the settlement then lands once.
 *
 * It never writes an owner's files itself, and it never reads a clock for a decision.
 */
import { faultPoint, hasCode, internal, type LoopxError } from '../core/index.js';
import { quota as quotaOwner, rootStores, session as sessionOwner } from '../owners/index.js';
import type { Message } from '../snapshot/index.js';
import type { AgentDefinition } from './agent.js';
import { refuseSupersededLifetime } from './goal-guard.js';
import { GOAL_WORK_TOOL_PLAN, goalWorkUnbound, type LifetimeGuard } from './goal-tools.js';
import { messageId } from './messages.js';
import { debitTokens } from './usage.js';
import type { RunHead } from './run-store/contract.js';

/** Fault point (tests only): the ledger holds the Turn's debit; its `quota_spend` phase and settlement are not recorded yet. */
export const FAULT_AFTER_QUOTA_DEBIT = 'engine.turn.after-quota-debit';
/** Fault point (tests only): the Turn is recorded through `quota_spend`; its settlement is not. */
export const FAULT_BEFORE_TURN_SETTLED = 'engine.turn.before-settle';

/** The ledger unit of a Turn's debit. */
export const TURN_DEBIT_UNIT = 'token';

export { turnTokens } from './usage.js';

/** A refusal of the owners a Turn goes through: it stops the run, it is never retried by the driver. */
export const isTurnRefusal = (e: unknown): e is LoopxError =>
  sessionOwner.isSessionError(e) ||
  quotaOwner.isQuotaError(e) ||
  hasCode(e, 'goal_work_unbound') ||
  hasCode(e, 'goal_lifetime_superseded');

/** The session and quota owners of a root, opened on first use; a root without sessions.db has no Goal work run. */
export class GoalTurnAccess {
  readonly #root: string | undefined;
  #sessions: sessionOwner.SessionStore | undefined;
  #quota: quotaOwner.QuotaLedger | undefined;

  readonly #guard: LifetimeGuard | undefined;

  constructor(options: { readonly root?: string; readonly guard?: LifetimeGuard }) {
    this.#root = options.root;
    this.#guard = options.guard;
  }

  /** The Turn journal of a run, or undefined for a run that is not Goal work here. */
  async forRun(head: RunHead, def: AgentDefinition): Promise<RunTurns | undefined> {
    const sessions = this.#sessionsForRead();
    const bound = sessions && (await sessions.listSessions()).filter((s) => s.run_id === head.runId);
    const session = bound?.find((s) => s.status === 'active') ?? bound?.at(-1);
    if (!session) {
      if (this.#root !== undefined && def.toolPlan === GOAL_WORK_TOOL_PLAN) throw goalWorkUnbound();
      return undefined;
    }
    // A lifetime a recovery superseded takes no turn: its run stops before the model is called.
    if (session.status === 'active')
      await refuseSupersededLifetime(this.#guard, session.goal_id, session.goal_instance_id);
    const ownTurns = (await sessions!.listTurns(session.session_id)).filter((t) => t.run_id === head.runId);
    const generation = ownTurns.at(-1)?.execution_generation ?? session.execution_generation;
    return new RunTurns(sessions!, () => this.#ledger(), session, head.runId, generation, this.#guard);
  }

  close(): void {
    this.#sessions?.close();
    this.#quota?.close();
  }

  #sessionsForRead(): sessionOwner.SessionStore | undefined {
    if (this.#sessions) return this.#sessions;
    if (this.#root === undefined || !rootStores(this.#root).holds('sessions')) return undefined;
    this.#sessions = rootStores(this.#root).sessions();
    return this.#sessions;
  }

  #ledger(): quotaOwner.QuotaLedger {
    this.#quota ??= rootStores(this.#root!).quota();
    return this.#quota;
  }
}

/** The Turns of one Goal work run, under the execution generation the run is pinned to. */
export class RunTurns {
  constructor(
    readonly sessions: sessionOwner.SessionStore,
    readonly ledger: () => quotaOwner.QuotaLedger,
    readonly session: sessionOwner.Session,
    readonly runId: string,
    readonly generation: number,
    /** Asked before each new Turn: a lifetime superseded while the run was live takes no further turn. */
    readonly guard?: LifetimeGuard,
  ) {}

  /** The run's open Turn: the session's latest, while it is this run's and in progress. */
  async open(): Promise<sessionOwner.TurnJournal | undefined> {
    const last = (await this.sessions.listTurns(this.session.session_id)).at(-1);
    return last && last.run_id === this.runId && last.status === 'in_progress' ? last : undefined;
  }

  /** Begin the Turn of the engine's current turn (before its model call); one already begun for it is returned. */
  async begin(): Promise<sessionOwner.TurnJournal> {
    const turns = await this.sessions.listTurns(this.session.session_id);
    const last = turns.at(-1);
    if (last && last.run_id === this.runId && last.status === 'in_progress') return last;
    await refuseSupersededLifetime(this.guard, this.session.goal_id, this.session.goal_instance_id);
    return (await this.sessions.beginTurn(this.session.session_id, last ? last.turn_index + 1 : 0, this.generation))
      .turn;
  }

  /** Record every phase up to and including `phase` that the open Turn lacks, in order. */
  async through(
    phase: sessionOwner.TurnPhase,
    refs: Partial<Record<sessionOwner.TurnPhase, string>> = {},
  ): Promise<sessionOwner.TurnJournal> {
    let turn = (await this.open()) ?? (await this.begin());
    const end = sessionOwner.TURN_PHASES.indexOf(phase);
    for (let i = turn.phases.length; i <= end; i++) {
      const p = sessionOwner.TURN_PHASES[i]!;
      turn = await this.sessions.recordPhase(turn.turn_key, p, this.generation, refs[p] ?? null);
    }
    return turn;
  }

  /**
   * Close the Turn of a completed engine turn: `durable_writeback`, the debit (settlement identity:
   * the Turn key), `quota_spend`, then the settlement under the same identity. Every step is a
   * readback when a crashed driver already made it.
   */
  async settleCompleted(
    turn: sessionOwner.TurnJournal,
    amount: number,
    completion: boolean,
  ): Promise<sessionOwner.SettleTurnResult> {
    const key = turn.turn_key;
    await this.through('durable_writeback');
    await this.ledger().spend({
      effect_id: key,
      goal_id: turn.goal_id,
      goal_instance_id: turn.goal_instance_id,
      amount,
      unit: TURN_DEBIT_UNIT,
    });
    faultPoint(FAULT_AFTER_QUOTA_DEBIT);
    await this.through('quota_spend', { quota_spend: `${key}#quota_spend` });
    faultPoint(FAULT_BEFORE_TURN_SETTLED);
    return this.sessions.settleTurn(key, {
      settlement_id: key,
      status: 'committed',
      result_kind: completion ? 'validated_completion' : 'validated_progress',
      expected_execution_generation: this.generation,
    });
  }

  /** Close the open Turn of an engine turn that did not complete: failed at its first unrecorded phase (a failed run), or stopped (a cancelled one). Nothing is debited. */
  async settleInterrupted(
    turn: sessionOwner.TurnJournal,
    lifecycle: 'failed' | 'cancelled',
  ): Promise<sessionOwner.SettleTurnResult> {
    const failed = lifecycle === 'failed';
    return this.sessions.settleTurn(turn.turn_key, {
      settlement_id: turn.turn_key,
      status: failed ? 'failed' : 'stopped',
      failed_phase: failed ? (sessionOwner.TURN_PHASES[turn.phases.length] ?? null) : null,
      result_kind: failed ? 'host_failure' : null,
      expected_execution_generation: this.generation,
    });
  }

  /**
   * At an engine boundary (or once the run finished): close the run's open Turn, if any. A turn
   * the engine completed is settled committed; one a finished run interrupted, failed or stopped.
   */
  async closeAt(head: RunHead, messages: () => Promise<readonly Message[]>): Promise<void> {
    if (head.turnInProgress && (head.lifecycle === 'active' || head.lifecycle === 'suspended')) return;
    const turn = await this.open();
    if (!turn) return;
    if (head.turnInProgress) {
      await this.settleInterrupted(turn, head.lifecycle === 'cancelled' ? 'cancelled' : 'failed');
      return;
    }
    const assistant = (await messages()).find((m) => m.id === messageId(head.runId, head.completedTurns, 0));
    if (!assistant)
      throw internal(
        'turn_response_missing',
        `Run ${head.runId} has an open Turn but no recorded response for turn ${head.completedTurns}.`,
      );
    await this.settleCompleted(turn, debitTokens(head, assistant), head.lifecycle === 'completed');
  }
}

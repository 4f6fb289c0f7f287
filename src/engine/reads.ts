/**
 * Reading runs: their views (what an active run waits for), messages, mutation rows and the event
 * stream. Reads change nothing — no record, no lock held past the probe, no file — so a read-only
 * engine (`run list|show|events`, the daemon's read routes) is these reads alone.
 *
 * Rules it keeps:
 * - Events are delivered in sequence order with no gap or duplicate. An imported run has no copy
 *   of the events before its snapshot: a cursor before it is `cursor_before_snapshot`, never a
 *   silent skip.
 * - A mutating call's intent counts as uncertain only when no live driver holds the run (else it
 *   is in flight); whether one does is the `isDriven` probe's answer (the authority's run lock).
 *   An engine without the authority cannot see that lock and reports no driver.
 */
import { rejected } from '../core/index.js';
import type { Message } from '../snapshot/index.js';
import type { RunEvent } from './events.js';
import {
  callEvidence,
  uncertainEffects,
  type CallEvidence,
  type EffectAccess,
  type UncertainEffect,
} from './mutations.js';
import type { MutationRecord, RunHead, RunStore } from './run-store/contract.js';
import { headOf } from './runs.js';

const EVENT_PAGE = 256;
const TERMINAL: ReadonlySet<RunHead['lifecycle']> = new Set(['completed', 'failed', 'cancelled']);

export interface RunView {
  readonly run_id: string;
  readonly status: RunHead['lifecycle'];
  readonly definition: { readonly id: string; readonly version: string };
  readonly completed_turns: number;
  readonly turn_limit: number;
  readonly last_sequence: number;
  /** What an active run that is not being driven waits for. */
  readonly waiting_for:
    | null
    | { readonly kind: 'interaction'; readonly interaction_id: string; readonly prompt: string }
    | {
        readonly kind: 'resolution';
        readonly call_ids: readonly string[];
        readonly effects: readonly UncertainEffect[];
      };
  readonly suspend_requested: boolean;
  /** Why a failed run failed, with what the operator can do about it where there is something. */
  readonly failure: { readonly code: string; readonly message: string; readonly next_action?: string } | null;
  /** Model tokens the run has used (absent before its first response); `estimated` when any part was estimated. */
  readonly usage?: { readonly input_tokens: number; readonly output_tokens: number; readonly estimated: boolean };
}

export interface EventsOptions {
  readonly after?: number;
  /**
   * Wait for new events: `forever` (until `signal`), `while-active` (until the run is no longer
   * active or waits for an operator, with no driver), or `until-terminal` (until the run has
   * ended — completed, failed or cancelled — whoever drives it, here or in another process).
   */
  readonly follow?: false | 'forever' | 'while-active' | 'until-terminal';
  readonly signal?: AbortSignal;
  readonly pollMs?: number;
}

export class RunReads {
  readonly #store: () => RunStore;
  readonly #effects: EffectAccess;
  readonly #isDriven: (runId: string) => Promise<boolean>;

  constructor(options: {
    readonly store: () => RunStore;
    readonly effects: EffectAccess;
    readonly isDriven: (runId: string) => Promise<boolean>;
  }) {
    this.#store = options.store;
    this.#effects = options.effects;
    this.#isDriven = options.isDriven;
  }

  head(runId: string): Promise<RunHead> {
    return headOf(this.#store(), runId);
  }

  async list(): Promise<RunView[]> {
    return Promise.all((await this.#store().list()).map((h) => this.view(h)));
  }

  async show(runId: string): Promise<RunView> {
    return this.view(await this.head(runId));
  }

  async messages(runId: string): Promise<Message[]> {
    await this.head(runId);
    return this.#store().messages(runId);
  }

  async mutations(runId: string): Promise<MutationRecord[]> {
    await this.head(runId);
    return this.#store().mutations(runId);
  }

  /**
   * Events after `after`, in sequence order, with no gap or duplicate. With `follow`, waits for
   * new events (a cursor past the head waits too) until `signal` aborts or — for
   * `follow: 'while-active'` — the run is no longer active and every event has been delivered;
   * for `follow: 'until-terminal'`, the run has ended and every event has been delivered.
   */
  async *events(runId: string, options: EventsOptions = {}): AsyncGenerator<RunEvent> {
    const first = await this.head(runId);
    let cursor = options.after ?? 0;
    if (first.importedAtSequence !== undefined && cursor < first.importedAtSequence) {
      throw rejected(
        'cursor_before_snapshot',
        `Run ${runId} was imported at sequence ${first.importedAtSequence}; events up to it are not in this root.`,
        {
          nextAction: `subscribe from the snapshot sequence: --after ${first.importedAtSequence}`,
          details: { run_id: runId, recovery_cursor: first.importedAtSequence },
        },
      );
    }
    for (;;) {
      const batch = await this.#store().readEvents(runId, cursor, EVENT_PAGE);
      for (const e of batch) {
        yield e;
        cursor = e.sequence;
      }
      if (batch.length === EVENT_PAGE) continue;
      if (!options.follow || options.signal?.aborted) return;
      if (options.follow === 'until-terminal') {
        const head = await this.head(runId);
        if (TERMINAL.has(head.lifecycle) && head.lastSequence <= cursor) return;
      }
      if (options.follow === 'while-active') {
        const head = await this.head(runId);
        if (head.lifecycle !== 'active' && head.lastSequence <= cursor) return;
        if (
          head.lifecycle === 'active' &&
          !(await this.#isDriven(runId)) &&
          (head.pendingInteraction || (await this.uncertainCalls(runId)).length > 0) &&
          head.lastSequence <= cursor
        )
          return;
      }
      await this.#waitForCommit(runId, options.pollMs ?? 50, options.signal);
    }
  }

  /**
   * Calls whose outcome is unknown: open here and without an outcome in the effect owner (a run
   * recorded before the effect journal: open here). An intent counts only when no live driver
   * holds the run (else it is in flight); a call the effect owner settled waits only for a driver
   * to take its outcome.
   */
  async uncertainCalls(runId: string): Promise<UncertainEffect[]> {
    const open = (await this.#store().mutations(runId)).filter((m) => m.state === 'intent' || m.state === 'uncertain');
    if (open.length === 0) return [];
    const inFlight = open.some((m) => m.state === 'intent') && (await this.#isDriven(runId));
    return uncertainEffects(
      open.filter((m) => m.state === 'uncertain' || !inFlight),
      this.#effects,
    );
  }

  /** The evidence of the run's mutating calls named (those it has), in the order named. */
  async callEvidence(runId: string, callIds: readonly string[]): Promise<CallEvidence[]> {
    const rows = new Map((await this.mutations(runId)).map((m) => [m.callId, m]));
    const found = callIds.map((id) => rows.get(id)).filter((m): m is MutationRecord => m !== undefined);
    return Promise.all(found.map((m) => callEvidence(m, this.#effects)));
  }

  async view(head: RunHead): Promise<RunView> {
    const uncertain = await this.uncertainCalls(head.runId);
    return {
      run_id: head.runId,
      status: head.lifecycle,
      definition: { id: head.definition.id, version: head.definition.version },
      completed_turns: head.completedTurns,
      turn_limit: head.turnLimit,
      last_sequence: head.lastSequence,
      waiting_for: head.pendingInteraction
        ? {
            kind: 'interaction',
            interaction_id: head.pendingInteraction.interactionId,
            prompt: head.pendingInteraction.prompt,
          }
        : uncertain.length > 0
          ? { kind: 'resolution', call_ids: uncertain.map((c) => c.call_id), effects: uncertain }
          : null,
      suspend_requested: head.lifecycle === 'active' && (await this.#store().suspendRequested(head.runId)),
      failure: head.failure
        ? {
            code: head.failure.code,
            message: head.failure.message,
            ...(head.failure.nextAction ? { next_action: head.failure.nextAction } : {}),
          }
        : null,
      ...(head.usage
        ? {
            usage: {
              input_tokens: head.usage.inputTokens,
              output_tokens: head.usage.outputTokens,
              estimated: head.usage.estimated,
            },
          }
        : {}),
    };
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
      const off = this.#store().onCommit((id) => {
        if (id === runId) done();
      });
      signal?.addEventListener('abort', done, { once: true });
    });
  }
}

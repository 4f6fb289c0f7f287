/**
 * A run event in one sentence, for the run page's timeline: one per type of the run event
 * vocabulary (src/engine/events.ts, docs/schemas/run-event.schema.json). A sentence says only what
 * the event carries — no event carries a call's arguments, so none is shown — and never invents a
 * figure: a field the event lacks is left out of its sentence (the raw event stays one click away).
 */
import { deliveryWords } from './deliveries';
import type { RunEvent } from './types';

type Data = RunEvent['data'];

/** How much of a model's text or a question a sentence quotes. */
const QUOTE_CHARS = 160;

export interface EventWords {
  readonly text: string;
  /** A delivery the receiver already held (see deliveries.ts): drawn apart from a fresh one. */
  readonly deduplicated?: boolean;
  readonly tone?: 'failed' | 'held';
}

/** What a sentence may need from the events before it: the model's last answer (a Completed run's final answer). */
export interface EventContext {
  readonly lastAnswer: string | null;
}

const text = (v: unknown): string | null => (typeof v === 'string' && v !== '' ? v : null);
const count = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;
/** A table's own entry for a key an event carries (never one of Object's). */
const own = <T>(table: Readonly<Record<string, T>>, key: string): T | undefined =>
  Object.hasOwn(table, key) ? table[key] : undefined;

/** Text quoted on one line, trimmed to QUOTE_CHARS. */
export function quoted(v: string): string {
  const line = v.replace(/\s+/g, ' ').trim();
  return `“${line.length > QUOTE_CHARS ? `${line.slice(0, QUOTE_CHARS - 1)}…` : line}”`;
}

/** A call's id within its run: `t1/k0` of `<run>/t1/k0`. */
const callOf = (callId: unknown): string => {
  const id = text(callId) ?? '?';
  const i = id.indexOf('/');
  return i >= 0 ? id.slice(i + 1) : id;
};

/** The effect owner's operation id of a run's call (the engine's operationIdOf: `/` → `:`). */
const operationOf = (callId: unknown): string => (text(callId) ?? '?').replaceAll('/', ':');

const afterTurns = (d: Data): string => {
  const n = count(d.completed_turns);
  return n === null ? '' : ` after ${plural(n, 'completed turn')}`;
};

function modelResponded(d: Data): EventWords {
  const said = text(d.text);
  const tools = Array.isArray(d.tool_calls)
    ? d.tool_calls.map((c) => text((c as { tool_name?: unknown } | null)?.tool_name) ?? '?')
    : [];
  const calls = tools.length > 0 ? `asks to call ${tools.join(', ')}` : '';
  if (said && calls) return { text: `Model answered: ${quoted(said)} — and ${calls}` };
  if (said) return { text: `Model answered: ${quoted(said)}` };
  return { text: calls ? `Model ${calls}` : 'Model answered with no text and no call' };
}

const RESOLVED: Readonly<Record<string, string>> = {
  committed: 'committed: it took effect',
  absent: 'absent: it did not take effect',
  abandon: 'abandoned: the run goes on without knowing',
};

function toolResulted(d: Data): EventWords {
  const tool = text(d.tool_name) ?? 'a tool';
  const webhook = tool === 'webhook.deliver';
  const subject = webhook
    ? `webhook delivery (operation ${operationOf(d.call_id)})`
    : `${tool} (call ${callOf(d.call_id)})`;
  const resolution = text(d.resolution);
  if (resolution) return { text: `Settled by the operator: ${subject} ${own(RESOLVED, resolution) ?? resolution}` };
  const taken = d.settled_by === 'effect_owner' ? ', as the effect owner had settled it' : '';
  const delivery = deliveryWords(d.delivery_result, d.duplicate_of);
  switch (d.status) {
    case 'ok':
      if (delivery?.deduplicated)
        return {
          text: `Webhook delivery (operation ${operationOf(d.call_id)}) — ${delivery.text}${taken}`,
          deduplicated: true,
        };
      if (webhook)
        return {
          text: `Delivered webhook (operation ${operationOf(d.call_id)})${delivery ? `: ${delivery.text}` : ''}${taken}`,
        };
      return { text: `${tool} answered (call ${callOf(d.call_id)})${taken}` };
    case 'error':
      return {
        text: `${webhook ? 'Webhook delivery' : tool} failed or was refused (${webhook ? `operation ${operationOf(d.call_id)}` : `call ${callOf(d.call_id)}`})${taken}`,
        tone: 'failed',
      };
    case 'mutation_uncertain':
      return { text: `Outcome unknown: ${subject} — it is not run again; it waits for you to settle it`, tone: 'held' };
    default:
      return { text: `${subject}: ${text(d.status) ?? 'no status'}` };
  }
}

const FAILURES: Readonly<Record<string, string>> = {
  turn_limit_reached: 'the turn limit was reached',
  token_budget_exhausted: 'the token budget ran out',
};

function failed(d: Data): EventWords {
  const code = text(d.code) ?? 'unknown';
  const turn = count(d.turn);
  const where = turn !== null ? ` in turn ${turn}` : afterTurns(d);
  const words = own(FAILURES, code);
  return { text: `Failed${where}: ${words ? `${words} (${code})` : code}`, tone: 'failed' };
}

const SENTENCES: Readonly<Record<string, (d: Data, ctx: EventContext) => EventWords>> = {
  RunStarted: (d) => {
    const model = [text(d.model_provider), text(d.model_id)].filter((x) => x !== null).join('/');
    const limit = count(d.turn_limit);
    return {
      text: `Started ${text(d.definition_id) ?? '?'}@${text(d.definition_version) ?? '?'}${model ? ` with ${model}` : ''}${limit !== null ? `, at most ${plural(limit, 'turn')}` : ''}`,
    };
  },
  TurnStarted: (d) => ({ text: `Turn ${count(d.turn) ?? '?'} started` }),
  ModelStreamed: (d) => {
    const attempt = count(d.attempt);
    return {
      text: `Model text arriving (turn ${count(d.turn) ?? '?'}${attempt !== null && attempt > 1 ? `, attempt ${attempt}` : ''}): ${quoted(text(d.text) ?? '')}`,
    };
  },
  ModelRetried: (d) => {
    const delay = count(d.delay_ms);
    return {
      text: `Model call failed (${text(d.code) ?? 'unknown'}) on attempt ${count(d.attempt) ?? '?'}; tried again${delay !== null ? ` after ${(delay / 1000).toFixed(1)} s` : ''}`,
      tone: 'held',
    };
  },
  ModelResponded: modelResponded,
  ToolCalled: (d) => ({ text: `Called ${text(d.tool_name) ?? 'a tool'} (call ${callOf(d.call_id)})` }),
  ToolResulted: toolResulted,
  TurnCompleted: (d) => ({ text: `Turn ${count(d.turn) ?? '?'} completed` }),
  InteractionRequested: (d) => ({
    text: `Asked the operator: ${quoted(text(d.prompt) ?? '')} (interaction ${text(d.interaction_id) ?? '?'})`,
    tone: 'held',
  }),
  InteractionAnswered: (d) => ({ text: `The operator answered (interaction ${text(d.interaction_id) ?? '?'})` }),
  Suspended: (d) => ({ text: `Suspended at the turn boundary${afterTurns(d)}`, tone: 'held' }),
  Resumed: (d) => ({ text: `Resumed${afterTurns(d)}` }),
  Completed: (d, ctx) => ({
    text: `Completed${afterTurns(d)}${ctx.lastAnswer !== null ? `: ${quoted(ctx.lastAnswer)}` : ''}`,
  }),
  Failed: failed,
  Cancelled: (d) => ({ text: `Cancelled${afterTurns(d)}`, tone: 'failed' }),
};

/** The sentence of one event; a type this page does not know says so (its raw event says the rest). */
export function eventWords(e: RunEvent, ctx: EventContext): EventWords {
  const sentence = own(SENTENCES, e.type);
  return sentence
    ? sentence(e.data, ctx)
    : { text: `${e.type} (an event this page does not describe; see the raw event)` };
}

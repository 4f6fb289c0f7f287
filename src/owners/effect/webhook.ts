/**
 * HTTP webhook delivery through the effect journal, and the matching reconciliation query.
 *
 * `deliverWebhook` records the intent durably, records the dispatch, POSTs once with the
 * `Idempotency-Key` and `X-Operation-Id` headers, and records the outcome. It never retries:
 * a network error, a timeout, a redirect, 408, 429 or 5xx leaves the effect `unknown`, to be
 * resolved only by `reconcile` under the original operation id. A repeated call for a settled
 * effect returns it without sending. `sendWebhook` is its sending step alone, for a caller that
 * journals the effect itself (the engine, for a mutating tool call): it POSTs the recorded intent
 * of an effect whose dispatch is already recorded and returns the outcome to settle.
 *
 * A delivery of a Goal that can be recovered into a new lifetime carries its writer's fence
 * (`webhookIntent(url, body, {goal_lineage, fence, lifetime})`, sent as `X-Loopx-Goal-Lineage`,
 * `X-Loopx-Fence` and `X-Loopx-Goal-Lifetime`): the triple (lineage, generation, the lifetime that
 * writes at it). The receiver refuses a fence below the newest it has seen for the lineage with
 * `409 {"error":"fence_stale"}`, and another lifetime at the newest fence with
 * `409 {"error":"fence_conflict"}` — definite refusals, settled `rejected` with reason `fence_stale`
 * or `fence_conflict`. The lifetime is optional: an intent recorded without one (by an older
 * version, or a cluster run's epoch) is a bare counter the receiver checks as before, and an intent
 * without a fence is sent without fence headers. A logical operation keeps its idempotency key
 * across lifetimes; the receiver replays a held key even under a new operation id.
 *
 * The query protocol (what the functions below speak, and `src/dev/webhook-sink` serves):
 *   GET <deliveries-url>?operation_id=<id>  →  200 {"found": true, "delivery": {"operation_id", "idempotency_key", …}}
 *                                          |  200 {"found": false}                  (webhookOperationQuery)
 *   GET <deliveries-url>?goal_lineage=<L>   →  200 {"deliveries": [{…, "goal_lineage", "fence", "body_sha256"}]}
 *                                                                                   (webhookGoalQuery)
 *   POST <base>/fences {"goal_lineage", "fence"[, "lifetime"]}
 *                                          →  200 {"status": "advanced"|"already", "newest_fence", "lifetime"}
 *                                          |  409 {"error": "fence_stale", "newest_fence"}
 *                                          |  409 {"error": "fence_conflict", "newest_fence", "lifetime"}  (advanceReceiverFence;
 *      <base>/fences is the deliveries URL with its last segment `deliveries` replaced; idempotent;
 *      `lifetime` in an answer is the one holding the newest fence — asked with a lifetime, a 200
 *      that does not name it back is no confirmation)
 * A query that gets no well-formed answer is `unknown` with a reason code, never a guess.
 * URLs stay in the private intent; targets, receipts and errors carry the host label only.
 */
import { canonicalJson } from '../../core/index.js';
import { sha256Hex } from '../../core/index.js';
import { faultPoint } from '../../core/index.js';
import type { EffectJournal, EffectRecord, JsonValue, ReconcileObservation, ReconcileQuery } from './contract.js';
import { MAX_RECEIPT_BYTES } from './contract.js';
import { dispatchInFlight, invalidInput } from './errors.js';
import { targetRetirement } from './retire.js';
import { GOAL_INSTANCE_ID } from '../registry/index.js';

export const WEBHOOK_KIND = 'webhook.deliver';
/** Fault point (tests only): a webhook's dispatch is recorded, the request not sent yet. */
export const FAULT_BEFORE_WEBHOOK_SEND = 'effect.webhook.before-send';
/** Fault point (tests and the recovery drill): the receiver answered, the outcome is not settled locally. */
export const FAULT_AFTER_WEBHOOK_SEND = 'effect.webhook.after-send';
export const DEFAULT_WEBHOOK_TIMEOUT_MS = 10_000;
/** The largest answer a Goal or fence query reads (a Goal's deliveries carry their bodies). */
const QUERY_ANSWER_LIMIT = 32 * 1024 * 1024;
const GOAL_LINEAGE = /^[A-Za-z0-9_.:-]{1,128}$/;

export interface WebhookDeliveryRequest {
  readonly goal_id: string;
  /** The deliveries endpoint (http or https). Kept only in the private intent. */
  readonly url: string;
  readonly operation_id: string;
  readonly idempotency_key: string;
  readonly body: JsonValue;
}

export interface WebhookOptions {
  readonly timeoutMs?: number;
  /** Injected for tests; defaults to Node's global fetch. */
  readonly fetch?: typeof fetch;
}

export interface WebhookDeliveryResult {
  readonly effect: EffectRecord;
  /** Whether this call sent the request. A replay of a settled effect sends nothing. */
  readonly dispatched: boolean;
}

function parseUrl(url: string): URL {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    throw invalidInput('url must be an absolute http or https URL.', 'url');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:')
    throw invalidInput('url must be an absolute http or https URL.', 'url');
  return u;
}

/** The public-safe target label of a URL: its host (and port) only. */
export const webhookTarget = (url: string): string => `webhook:${parseUrl(url).host}`;

/**
 * A Goal lineage, its writer's fence (the lifetime's generation) and the writer's lifetime: the
 * receiver refuses a fence below the newest it has seen, and another lifetime at the same one.
 * Without `lifetime` the fence is a bare counter (cluster run epochs; intents of older versions).
 */
export type DeliveryFence = { readonly goal_lineage: string; readonly fence: number; readonly lifetime?: string };

/** What a webhook effect's intent holds; `delivery_fence` only for a fenced delivery. */
export type WebhookIntent =
  | { readonly url: string; readonly body: JsonValue }
  | { readonly url: string; readonly body: JsonValue; readonly delivery_fence: DeliveryFence };

const isFence = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
const isLineage = (v: unknown): v is string => typeof v === 'string' && GOAL_LINEAGE.test(v);
const isLifetime = (v: unknown): v is string => typeof v === 'string' && GOAL_INSTANCE_ID.test(v);

function checkFence(fence: {
  readonly goal_lineage: unknown;
  readonly fence: unknown;
  readonly lifetime?: unknown;
}): DeliveryFence {
  if (!isLineage(fence.goal_lineage))
    throw invalidInput('goal_lineage must be 1-128 characters of A-Z a-z 0-9 _ . : -', 'goal_lineage');
  if (!isFence(fence.fence)) throw invalidInput('fence must be a non-negative safe integer.', 'fence');
  if (fence.lifetime === undefined) return { goal_lineage: fence.goal_lineage, fence: fence.fence };
  if (!isLifetime(fence.lifetime))
    throw invalidInput("lifetime must be a Goal lifetime id: 'ginst_' and 32 lowercase hex.", 'lifetime');
  return { goal_lineage: fence.goal_lineage, fence: fence.fence, lifetime: fence.lifetime };
}

/** The effect intent of a delivery: what `sendWebhook` sends and `webhookOperationQuery` asks about. */
export function webhookIntent(url: string, body: JsonValue, fence?: DeliveryFence): WebhookIntent {
  const href = parseUrl(url).href;
  return fence === undefined ? { url: href, body } : { url: href, body, delivery_fence: checkFence(fence) };
}

/** The outcome of one send, to settle the effect with. */
export interface WebhookSendResult {
  readonly outcome: 'committed' | 'unknown' | 'rejected';
  readonly receipt: JsonValue;
}

export async function deliverWebhook(
  journal: EffectJournal,
  request: WebhookDeliveryRequest,
  options: WebhookOptions = {},
): Promise<WebhookDeliveryResult> {
  const { effect } = await journal.recordIntent({
    operation_id: request.operation_id,
    idempotency_key: request.idempotency_key,
    goal_id: request.goal_id,
    kind: WEBHOOK_KIND,
    target: webhookTarget(request.url),
    intent: webhookIntent(request.url, request.body),
  });
  if (effect.outcome !== 'pending') return { effect, dispatched: false };
  if (effect.dispatched_at !== null) throw dispatchInFlight(effect.operation_id);

  const sent = await sendWebhook(await journal.beginDispatch(effect.operation_id), options);
  return { effect: (await journal.settle(effect.operation_id, sent.outcome, sent.receipt)).effect, dispatched: true };
}

/**
 * POST a webhook effect's recorded intent once. The caller has recorded the dispatch; it settles
 * the returned outcome. Anything that may have been applied is `unknown`, never `rejected`.
 */
export async function sendWebhook(effect: EffectRecord, options: WebhookOptions = {}): Promise<WebhookSendResult> {
  if (effect.kind !== WEBHOOK_KIND) throw invalidInput('The effect is not a webhook delivery.', 'kind');
  let url: URL;
  let body: JsonValue;
  let fence: DeliveryFence | undefined;
  try {
    const intent = JSON.parse(effect.intent) as {
      url: string;
      body: JsonValue;
      delivery_fence?: { goal_lineage: unknown; fence: unknown; lifetime?: unknown };
    };
    url = parseUrl(intent.url);
    body = intent.body;
    fence = intent.delivery_fence === undefined ? undefined : checkFence(intent.delivery_fence);
  } catch {
    throw invalidInput('The effect intent is not a webhook delivery.', 'intent');
  }
  faultPoint(FAULT_BEFORE_WEBHOOK_SEND);
  const doFetch = options.fetch ?? fetch;
  const fenceHeaders: Record<string, string> =
    fence === undefined
      ? {}
      : {
          'x-loopx-goal-lineage': fence.goal_lineage,
          'x-loopx-fence': String(fence.fence),
          ...(fence.lifetime === undefined ? {} : { 'x-loopx-goal-lifetime': fence.lifetime }),
        };
  let response: Response;
  try {
    response = await doFetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'idempotency-key': effect.idempotency_key,
        'x-operation-id': effect.operation_id,
        ...fenceHeaders,
      },
      body: canonicalJson(body),
      redirect: 'manual',
      signal: AbortSignal.timeout(options.timeoutMs ?? DEFAULT_WEBHOOK_TIMEOUT_MS),
    });
  } catch (e) {
    return { outcome: 'unknown', receipt: { reason: isTimeout(e) ? 'timeout' : 'network_error' } };
  }
  faultPoint(FAULT_AFTER_WEBHOOK_SEND);
  const status = response.status;
  if (status >= 200 && status < 300)
    return { outcome: 'committed', receipt: { http_status: status, response: await readBounded(response) } };
  if (status === 409) {
    // A fenced receiver refused this writer — stale, or another lifetime at its fence: definite, and the reason is kept.
    const answer = await readBounded(response);
    const fenced =
      isRecord(answer) && (answer.error === 'fence_stale' || answer.error === 'fence_conflict')
        ? answer.error
        : undefined;
    // The receiver's newest fence is kept with a stale refusal: the writer records its own supersession from it.
    const newest =
      fenced === 'fence_stale' && isRecord(answer) && isFence(answer.newest_fence) ? answer.newest_fence : undefined;
    if (fenced === undefined) return { outcome: 'rejected', receipt: { http_status: 409 } };
    return {
      outcome: 'rejected',
      receipt:
        newest === undefined
          ? { http_status: 409, reason: fenced }
          : { http_status: 409, reason: fenced, newest_fence: newest },
    };
  }
  await response.body?.cancel().catch(() => undefined);
  // Only a definite refusal is `rejected`; anything that may have been applied stays unknown.
  const uncertain =
    status < 200 || (status >= 300 && status < 400) || status === 408 || status === 429 || status >= 500;
  return { outcome: uncertain ? 'unknown' : 'rejected', receipt: { http_status: status } };
}

/** A reconcile query for webhook effects: asks the deliveries endpoint by the ORIGINAL operation id. */
export function webhookOperationQuery(options: WebhookOptions = {}): ReconcileQuery {
  const doFetch = options.fetch ?? fetch;
  return async (effect: EffectRecord): Promise<ReconcileObservation> => {
    let url: URL;
    try {
      url = parseUrl((JSON.parse(effect.intent) as { url: string }).url);
    } catch {
      return { status: 'unknown', reason: 'intent_unreadable' };
    }
    url.searchParams.set('operation_id', effect.operation_id);
    let response: Response;
    try {
      response = await doFetch(url, {
        method: 'GET',
        redirect: 'manual',
        signal: AbortSignal.timeout(options.timeoutMs ?? DEFAULT_WEBHOOK_TIMEOUT_MS),
      });
    } catch (e) {
      return { status: 'unknown', reason: isTimeout(e) ? 'query_timeout' : 'query_unreachable' };
    }
    if (response.status !== 200) {
      await response.body?.cancel().catch(() => undefined);
      return { status: 'unknown', reason: 'query_http_error' };
    }
    const raw = await readBounded(response);
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
      return { status: 'unknown', reason: 'query_malformed' };
    const answer = raw as { readonly [key: string]: JsonValue };
    if (typeof answer.found !== 'boolean') return { status: 'unknown', reason: 'query_malformed' };
    if (answer.found === false)
      return { status: 'absent', receipt: { source: 'operation_query', http_status: 200, found: false } };
    const delivery = answer.delivery;
    if (typeof delivery !== 'object' || delivery === null || Array.isArray(delivery))
      return { status: 'unknown', reason: 'query_malformed' };
    const d = delivery as { readonly [k: string]: JsonValue };
    if (d.operation_id !== effect.operation_id || d.idempotency_key !== effect.idempotency_key)
      return { status: 'unknown', reason: 'identity_mismatch' };
    return {
      status: 'committed',
      receipt: { source: 'operation_query', http_status: 200, found: true, delivery: bounded(delivery) },
    };
  };
}

/** A delivery as the receiver reports it for a Goal lineage (its body left out). */
export interface ReceiverDelivery {
  readonly operation_id: string;
  readonly idempotency_key: string;
  readonly goal_lineage: string;
  readonly fence: number;
  readonly body_sha256: string;
  readonly sequence: number;
  readonly received_at: string;
}

export type WebhookGoalQueryResult =
  | { readonly status: 'answered'; readonly deliveries: ReceiverDelivery[] }
  | { readonly status: 'unknown'; readonly reason: string };

export type ReceiverFenceResult =
  | { readonly status: 'advanced' | 'already'; readonly newest_fence: number }
  /** The receiver holds a newer fence for the lineage. */
  | { readonly status: 'refused'; readonly newest_fence: number }
  /** The receiver holds this very fence for another lifetime (`lifetime`, the holder): this one never writes there at it. */
  | { readonly status: 'conflict'; readonly newest_fence: number; readonly lifetime: string }
  | { readonly status: 'unknown'; readonly reason: string };

export interface ReceiverFenceOptions extends WebhookOptions {
  /** The Goal lifetime that raises the fence and writes at it; without one the fence is a bare counter (a cluster run's epoch). */
  readonly lifetime?: string;
}

type Unknown = { readonly status: 'unknown'; readonly reason: string };
type Answer = {
  readonly status: 'answered';
  readonly http_status: number;
  readonly json: { readonly [key: string]: unknown };
};

/** One query exchange: a JSON object answered with one of `accepted`, or `unknown` with the reason. */
async function exchange(
  url: URL,
  init: RequestInit,
  accepted: readonly number[],
  options: WebhookOptions,
): Promise<Answer | Unknown> {
  const doFetch = options.fetch ?? fetch;
  let response: Response;
  try {
    response = await doFetch(url, {
      ...init,
      redirect: 'manual',
      signal: AbortSignal.timeout(options.timeoutMs ?? DEFAULT_WEBHOOK_TIMEOUT_MS),
    });
  } catch (e) {
    return { status: 'unknown', reason: isTimeout(e) ? 'query_timeout' : 'query_unreachable' };
  }
  if (!accepted.includes(response.status)) {
    await response.body?.cancel().catch(() => undefined);
    return { status: 'unknown', reason: 'query_http_error' };
  }
  let bytes: Buffer | null | { readonly over: number };
  try {
    bytes = await readBytes(response, QUERY_ANSWER_LIMIT);
  } catch (e) {
    return { status: 'unknown', reason: isTimeout(e) ? 'query_timeout' : 'query_unreachable' };
  }
  if (bytes !== null && !Buffer.isBuffer(bytes)) return { status: 'unknown', reason: 'query_too_large' };
  let json: unknown;
  try {
    json = JSON.parse((bytes ?? Buffer.alloc(0)).toString('utf8'));
  } catch {
    return { status: 'unknown', reason: 'query_malformed' };
  }
  return isRecord(json)
    ? { status: 'answered', http_status: response.status, json }
    : { status: 'unknown', reason: 'query_malformed' };
}

function receiverDelivery(v: unknown): ReceiverDelivery | undefined {
  if (!isRecord(v)) return undefined;
  const { operation_id, idempotency_key, goal_lineage, fence, body_sha256, sequence, received_at } = v;
  const ok =
    typeof operation_id === 'string' &&
    typeof idempotency_key === 'string' &&
    isLineage(goal_lineage) &&
    isFence(fence) &&
    typeof body_sha256 === 'string' &&
    /^[0-9a-f]{64}$/.test(body_sha256) &&
    typeof sequence === 'number' &&
    Number.isSafeInteger(sequence) &&
    sequence > 0 &&
    typeof received_at === 'string';
  return ok ? { operation_id, idempotency_key, goal_lineage, fence, body_sha256, sequence, received_at } : undefined;
}

/**
 * What the receiver holds for a Goal lineage (`GET <deliveries-url>?goal_lineage=L`), in its
 * arrival order: what a Goal recovered into a new lifetime asks before it sends again. Any answer
 * that is not a well-formed list of that lineage's deliveries is `unknown`.
 */
export async function webhookGoalQuery(
  deliveriesUrl: string,
  goalLineage: string,
  options: WebhookOptions = {},
): Promise<WebhookGoalQueryResult> {
  const url = parseUrl(deliveriesUrl);
  if (!isLineage(goalLineage))
    throw invalidInput('goal_lineage must be 1-128 characters of A-Z a-z 0-9 _ . : -', 'goal_lineage');
  url.searchParams.set('goal_lineage', goalLineage);
  const answer = await exchange(url, { method: 'GET' }, [200], options);
  if (answer.status === 'unknown') return answer;
  const list = answer.json.deliveries;
  if (!Array.isArray(list)) return { status: 'unknown', reason: 'query_malformed' };
  const deliveries: ReceiverDelivery[] = [];
  for (const item of list as unknown[]) {
    const d = receiverDelivery(item);
    if (d === undefined) return { status: 'unknown', reason: 'query_malformed' };
    if (d.goal_lineage !== goalLineage) return { status: 'unknown', reason: 'identity_mismatch' };
    deliveries.push(d);
  }
  return { status: 'answered', deliveries };
}

/** `<base>/fences` beside `<base>/deliveries`. */
function fencesUrl(deliveriesUrl: string): URL {
  const url = parseUrl(deliveriesUrl);
  const segments = url.pathname.split('/');
  if (segments[segments.length - 1] !== 'deliveries')
    throw invalidInput('The deliveries URL must end in /deliveries.', 'url');
  url.pathname = [...segments.slice(0, -1), 'fences'].join('/');
  url.hash = '';
  return url;
}

/**
 * Raise the receiver's newest fence for a Goal lineage (`POST <base>/fences`), so that every
 * writer of an older lifetime is refused there from now on — and, with `options.lifetime`, every
 * other lifetime at this fence too. Idempotent: `already` when the receiver holds this fence (for
 * this lifetime), `refused` when it holds a newer one, `conflict` when it holds this one for
 * another lifetime, `unknown` on no clear answer — a 200 that does not name the asked lifetime back
 * included (`lifetime_unconfirmed`: a receiver that does not keep lifetimes confirms nothing).
 */
export async function advanceReceiverFence(
  deliveriesUrl: string,
  goalLineage: string,
  fence: number,
  options: ReceiverFenceOptions = {},
): Promise<ReceiverFenceResult> {
  const url = fencesUrl(deliveriesUrl);
  const asked = checkFence({ goal_lineage: goalLineage, fence, lifetime: options.lifetime });
  const init = { method: 'POST', headers: { 'content-type': 'application/json' }, body: canonicalJson(asked) };
  const answer = await exchange(url, init, [200, 409], options);
  if (answer.status === 'unknown') return answer;
  const { status, error, newest_fence, lifetime } = answer.json;
  if (answer.http_status === 200 && (status === 'advanced' || status === 'already') && newest_fence === fence) {
    return asked.lifetime === undefined || lifetime === asked.lifetime
      ? { status, newest_fence }
      : { status: 'unknown', reason: 'lifetime_unconfirmed' };
  }
  if (answer.http_status === 409 && error === 'fence_stale' && isFence(newest_fence) && newest_fence > fence)
    return { status: 'refused', newest_fence };
  const conflict =
    answer.http_status === 409 && error === 'fence_conflict' && asked.lifetime !== undefined && newest_fence === fence;
  if (conflict && isLifetime(lifetime) && lifetime !== asked.lifetime)
    return { status: 'conflict', newest_fence, lifetime };
  return { status: 'unknown', reason: 'query_malformed' };
}

/** A receiver's newest fence for a Goal lineage and the lifetime holding it (null: never seen, or none named). */
export type ReceiverNewestFence =
  | { readonly status: 'answered'; readonly newest_fence: number | null; readonly lifetime: string | null }
  | { readonly status: 'unknown'; readonly reason: string };

/**
 * Ask a receiver for a Goal lineage's newest fence (`GET <base>/fences?goal_lineage=L`): what a root
 * asks before it works a Goal or changes its lifecycle, so that a lifetime a later one superseded
 * learns it before it writes anything. Anything but a well-formed answer naming that lineage back is
 * `unknown` (the fence at the receiver still refuses the lifetime's deliveries).
 */
export async function receiverNewestFence(
  deliveriesUrl: string,
  goalLineage: string,
  options: WebhookOptions = {},
): Promise<ReceiverNewestFence> {
  const url = fencesUrl(deliveriesUrl);
  if (!isLineage(goalLineage))
    throw invalidInput('goal_lineage must be 1-128 characters of A-Z a-z 0-9 _ . : -', 'goal_lineage');
  url.searchParams.set('goal_lineage', goalLineage);
  const answer = await exchange(url, { method: 'GET' }, [200], options);
  if (answer.status === 'unknown') return answer;
  const { goal_lineage, newest_fence, lifetime } = answer.json;
  if (goal_lineage !== goalLineage) return { status: 'unknown', reason: 'identity_mismatch' };
  const fenceOk = newest_fence === null || isFence(newest_fence);
  const lifetimeOk = lifetime === undefined || lifetime === null || isLifetime(lifetime);
  if (!fenceOk || !lifetimeOk) return { status: 'unknown', reason: 'query_malformed' };
  return { status: 'answered', newest_fence, lifetime: typeof lifetime === 'string' ? lifetime : null };
}

/**
 * The receivers a Goal delivered to under its lineage, each once: the deliveries URL of every fenced
 * webhook delivery the effect owner journalled for `goalId` under `goalLineage`, less the targets an
 * operator retired for the Goal (they answer no more).
 */
export async function goalReceivers(journal: EffectJournal, goalId: string, goalLineage: string): Promise<string[]> {
  /** Each receiver's deliveries URL, with the public label its retirement is recorded under. */
  const targets = new Map<string, string>();
  for (const e of await journal.list({ goal_id: goalId })) {
    if (e.kind !== WEBHOOK_KIND) continue;
    try {
      const intent = JSON.parse(e.intent) as { url: string; delivery_fence?: { goal_lineage?: unknown } };
      if (intent.delivery_fence?.goal_lineage === goalLineage) targets.set(parseUrl(intent.url).href, e.target);
    } catch {
      // not a webhook delivery this root can read back: nothing to ask
    }
  }
  const live: string[] = [];
  for (const [url, target] of targets)
    if ((await targetRetirement(journal, goalId, target)) === undefined) live.push(url);
  return live;
}

const isRecord = (v: unknown): v is { readonly [key: string]: unknown } =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function isTimeout(e: unknown): boolean {
  const name = (e as { name?: string } | null)?.name;
  return name === 'TimeoutError' || name === 'AbortError';
}

/** A response body of at most `limit` bytes; null without a body; `over` (the rest cancelled) when longer. */
async function readBytes(response: Response, limit: number): Promise<Buffer | null | { readonly over: number }> {
  const reader = response.body?.getReader();
  if (reader === undefined) return null;
  const chunks: Buffer[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return Buffer.concat(chunks);
    size += value.byteLength;
    if (size > limit) {
      await reader.cancel();
      return { over: size };
    }
    chunks.push(Buffer.from(value));
  }
}

/** Reads a response body as JSON when it is small and well-formed; otherwise a digest of its bytes. */
async function readBounded(response: Response): Promise<JsonValue> {
  let bytes: Buffer;
  try {
    const read = await readBytes(response, 4 * MAX_RECEIPT_BYTES);
    if (read === null) return null;
    if (!Buffer.isBuffer(read)) return { truncated: true, bytes_at_least: read.over };
    bytes = read;
  } catch {
    return { unreadable: true };
  }
  try {
    return bounded(JSON.parse(bytes.toString('utf8')) as JsonValue);
  } catch {
    return { sha256: sha256Hex(bytes), bytes: bytes.byteLength };
  }
}

/** A JSON value small enough for a receipt, or its digest. */
function bounded(value: JsonValue): JsonValue {
  const text = canonicalJson(value);
  const size = Buffer.byteLength(text, 'utf8');
  return size <= MAX_RECEIPT_BYTES / 2 ? value : { sha256: sha256Hex(text), bytes: size };
}

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
 * The query protocol (what `webhookOperationQuery` speaks, and `src/dev/webhook-sink` serves):
 *   GET <deliveries-url>?operation_id=<id>  →  200 {"found": true, "delivery": {"operation_id", "idempotency_key", …}}
 *                                          |  200 {"found": false}
 * URLs stay in the private intent; targets, receipts and errors carry the host label only.
 */
import { canonicalJson } from '../../core/index.js';
import { sha256Hex } from '../../core/index.js';
import { faultPoint } from '../../core/index.js';
import type { EffectJournal, EffectRecord, JsonValue, ReconcileObservation, ReconcileQuery } from './contract.js';
import { MAX_RECEIPT_BYTES } from './contract.js';
import { dispatchInFlight, invalidInput } from './errors.js';

export const WEBHOOK_KIND = 'webhook.deliver';
/** Fault point (tests only): a webhook's dispatch is recorded, the request not sent yet. */
export const FAULT_BEFORE_WEBHOOK_SEND = 'effect.webhook.before-send';
export const DEFAULT_WEBHOOK_TIMEOUT_MS = 10_000;

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
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw invalidInput('url must be an absolute http or https URL.', 'url');
  return u;
}

/** The public-safe target label of a URL: its host (and port) only. */
export const webhookTarget = (url: string): string => `webhook:${parseUrl(url).host}`;

/** The effect intent of a delivery: what `sendWebhook` sends and `webhookOperationQuery` asks about. */
export const webhookIntent = (url: string, body: JsonValue): { url: string; body: JsonValue } => ({ url: parseUrl(url).href, body });

/** The outcome of one send, to settle the effect with. */
export interface WebhookSendResult {
  readonly outcome: 'committed' | 'unknown' | 'rejected';
  readonly receipt: JsonValue;
}

export async function deliverWebhook(journal: EffectJournal, request: WebhookDeliveryRequest, options: WebhookOptions = {}): Promise<WebhookDeliveryResult> {
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
  try {
    const intent = JSON.parse(effect.intent) as { url: string; body: JsonValue };
    url = parseUrl(intent.url);
    body = intent.body;
  } catch {
    throw invalidInput('The effect intent is not a webhook delivery.', 'intent');
  }
  faultPoint(FAULT_BEFORE_WEBHOOK_SEND);
  const doFetch = options.fetch ?? fetch;
  let response: Response;
  try {
    response = await doFetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'idempotency-key': effect.idempotency_key, 'x-operation-id': effect.operation_id },
      body: canonicalJson(body),
      redirect: 'manual',
      signal: AbortSignal.timeout(options.timeoutMs ?? DEFAULT_WEBHOOK_TIMEOUT_MS),
    });
  } catch (e) {
    return { outcome: 'unknown', receipt: { reason: isTimeout(e) ? 'timeout' : 'network_error' } };
  }
  const status = response.status;
  if (status >= 200 && status < 300) return { outcome: 'committed', receipt: { http_status: status, response: await readBounded(response) } };
  await response.body?.cancel().catch(() => undefined);
  // Only a definite refusal is `rejected`; anything that may have been applied stays unknown.
  const uncertain = status < 200 || (status >= 300 && status < 400) || status === 408 || status === 429 || status >= 500;
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
      response = await doFetch(url, { method: 'GET', redirect: 'manual', signal: AbortSignal.timeout(options.timeoutMs ?? DEFAULT_WEBHOOK_TIMEOUT_MS) });
    } catch (e) {
      return { status: 'unknown', reason: isTimeout(e) ? 'query_timeout' : 'query_unreachable' };
    }
    if (response.status !== 200) {
      await response.body?.cancel().catch(() => undefined);
      return { status: 'unknown', reason: 'query_http_error' };
    }
    const raw = await readBounded(response);
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) return { status: 'unknown', reason: 'query_malformed' };
    const answer = raw as { readonly [key: string]: JsonValue };
    if (typeof answer.found !== 'boolean') return { status: 'unknown', reason: 'query_malformed' };
    if (answer.found === false) return { status: 'absent', receipt: { source: 'operation_query', http_status: 200, found: false } };
    const delivery = answer.delivery;
    if (typeof delivery !== 'object' || delivery === null || Array.isArray(delivery)) return { status: 'unknown', reason: 'query_malformed' };
    const d = delivery as { readonly [k: string]: JsonValue };
    if (d.operation_id !== effect.operation_id || d.idempotency_key !== effect.idempotency_key) return { status: 'unknown', reason: 'identity_mismatch' };
    return { status: 'committed', receipt: { source: 'operation_query', http_status: 200, found: true, delivery: bounded(delivery) } };
  };
}

function isTimeout(e: unknown): boolean {
  const name = (e as { name?: string } | null)?.name;
  return name === 'TimeoutError' || name === 'AbortError';
}

/** Reads a response body as JSON when it is small and well-formed; otherwise a digest of its bytes. */
async function readBounded(response: Response): Promise<JsonValue> {
  let bytes: Buffer;
  try {
    const chunks: Buffer[] = [];
    let size = 0;
    const reader = response.body?.getReader();
    if (reader === undefined) return null;
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > 4 * MAX_RECEIPT_BYTES) {
        await reader.cancel();
        return { truncated: true, bytes_at_least: size };
      }
      chunks.push(Buffer.from(value));
    }
    bytes = Buffer.concat(chunks);
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

/**
 * What a failed model call means for a run: the typed run failures a provider error maps to, each
 * with its one next action, and whether the call may be made again inside the same turn.
 *
 * Rules it keeps:
 * - Classification reads only what the provider packages expose (`APICallError`'s status code,
 *   response body and headers; a transport error's name) — never the request, so no credential or
 *   prompt can reach a failure's message or details.
 * - Retryable: rate limits (429), a provider that is overloaded or down (5xx, 529), and the network
 *   (a refused connection, a reset, a stream cut mid-response). A retry makes only the model call
 *   again: the turn's response is not recorded yet, so no tool of the turn has run.
 * - Everything else is final for the turn: a refused key (401/403), a prompt over the model's
 *   context window, any other refused request.
 * - A LoopxError thrown by a provider (the scripted provider's `script_exhausted`, the adapter's
 *   refusals of a malformed response) keeps its own code and is never retried.
 * - A failure names the endpoint it was asking by its host (`api.openai.com`, `127.0.0.1:11434`):
 *   the host of the URL the provider package reports, else of the agent's `base_url`, else the
 *   provider's documented default. Never the URL's path or query, never a key.
 */
import type { APICallError } from '@ai-sdk/provider';
import { isLoopxError, rejected, type LoopxError } from '../../core/index.js';

const API_CALL_ERROR = Symbol.for('vercel.ai.error.AI_APICallError');
/**
 * `APICallError.isInstance` without loading the SDK's package: the SDK marks its errors with a
 * registered symbol (`AISDKError.hasMarker` in @ai-sdk/provider), which is what this checks.
 */
const isApiCallError = (e: unknown): e is APICallError =>
  e != null && typeof e === 'object' && (e as Record<symbol, unknown>)[API_CALL_ERROR] === true;

export interface ModelFailure {
  readonly error: LoopxError;
  readonly retryable: boolean;
  /** The provider's own wait (retry-after-ms / retry-after headers), when it sent one. */
  readonly retryAfterMs?: number;
}

/** A stream that closed without its `finish` part: the response is incomplete, as when the connection breaks. */
export class ModelStreamIncomplete extends Error {
  constructor() {
    super('the response stream ended before the response was complete');
    this.name = 'ModelStreamIncomplete';
  }
}

/** An `error` part inside a response stream (the provider's error object, e.g. Anthropic's overload after some text). */
export class ModelStreamError extends Error {
  readonly detail: unknown;
  constructor(detail: unknown) {
    super('the provider reported an error inside the response stream');
    this.name = 'ModelStreamError';
    this.detail = detail;
  }
}

/** An in-stream error by its provider type or code: the response never completed, so anything unknown may be retried. */
function classifyStreamError(
  detail: unknown,
  provider: string,
  keyEnv: string | undefined,
  host: string | undefined,
): ModelFailure {
  if (detail instanceof Error) return classifyModelError(detail, provider, keyEnv, host);
  const inner = (detail as { error?: unknown } | undefined)?.error ?? detail;
  const kind = [(inner as { type?: unknown })?.type, (inner as { code?: unknown })?.code]
    .filter((v) => typeof v === 'string')
    .join(' ');
  if (/rate_limit/.test(kind)) return { error: modelRateLimited(provider, host), retryable: true };
  if (/authentication|permission|invalid_api_key/.test(kind))
    return { error: modelAuthFailed(provider, keyEnv, host), retryable: false };
  if (CONTEXT_TOO_LONG.test(kind) || CONTEXT_TOO_LONG.test(String((inner as { message?: unknown })?.message ?? '')))
    return { error: modelContextTooLong(provider), retryable: false };
  if (/invalid_request/.test(kind)) return { error: modelRequestRefused(provider, 400, host), retryable: false };
  return { error: modelUnavailable(provider, /overloaded/.test(kind) ? 529 : 500, host), retryable: true };
}

const AGAIN = 'then start the run again';

/** "The openai API at api.openai.com": the provider kind, and the endpoint's host when it is known. */
const api = (provider: string, host: string | undefined): string =>
  `The ${provider} API${host === undefined ? '' : ` at ${host}`}`;

export const modelRateLimited = (provider: string, host?: string): LoopxError =>
  rejected('model_rate_limited', `${api(provider, host)} kept refusing the model call with its rate limit.`, {
    nextAction: `wait for the rate limit of your ${provider} account to reset (or raise it), ${AGAIN}`,
  });

export const modelAuthFailed = (provider: string, keyEnv: string | undefined, host?: string): LoopxError =>
  rejected('model_auth_failed', `${api(provider, host)} refused the API key.`, {
    nextAction: keyEnv
      ? `put a valid API key in ${keyEnv} for the process that drives the run, ${AGAIN}`
      : `give the agent an API key with model.api_key_env, ${AGAIN}`,
  });

export const modelContextTooLong = (provider: string): LoopxError =>
  rejected('model_context_too_long', `The run's history no longer fits the ${provider} model's context window.`, {
    nextAction: `use a model with a longer context window or a shorter system prompt and input, ${AGAIN}`,
  });

export const modelNetworkFailed = (provider: string, host?: string): LoopxError =>
  rejected(
    'model_network_failed',
    `${api(provider, host)} could not be reached, or the connection broke during the response.`,
    {
      nextAction:
        host === undefined
          ? `check that this host reaches the agent's model.base_url (or the provider's default endpoint), ${AGAIN}`
          : `check that this host reaches ${host} (the agent's model.base_url, or the provider's default endpoint), ${AGAIN}`,
    },
  );

export const modelUnavailable = (provider: string, status: number, host?: string): LoopxError =>
  rejected('model_unavailable', `${api(provider, host)} kept answering ${status} (unavailable or overloaded).`, {
    nextAction: `wait until the ${provider} API${host === undefined ? '' : ` at ${host}`} is available, ${AGAIN}`,
    details: { status },
  });

export const modelRequestRefused = (provider: string, status: number, host?: string): LoopxError =>
  rejected('model_request_refused', `${api(provider, host)} refused the model call (${status}).`, {
    nextAction: `check the agent's model.model_id and model.base_url against the provider's documentation, ${AGAIN}`,
    details: { status },
  });

/** Any other failure of a provider: not retried, reported with the provider's own message. */
export const modelFailed = (message: string, host?: string): LoopxError =>
  rejected('model_failed', `The model call${host === undefined ? '' : ` to ${host}`} failed: ${message}`);

const CONTEXT_TOO_LONG =
  /context_length_exceeded|maximum context length|prompt is too long|too many tokens|context window/i;

/** The default endpoint of each provider package that has one (its documented base URL's host). */
const DEFAULT_HOSTS: Readonly<Record<string, string>> = { openai: 'api.openai.com', anthropic: 'api.anthropic.com' };

/** `host[:port]` of an http(s) URL; undefined for anything else. Never the path, query or credentials. */
export function hostOf(url: string | undefined): string | undefined {
  if (url === undefined) return undefined;
  try {
    const u = new URL(url);
    return (u.protocol === 'http:' || u.protocol === 'https:') && u.host !== '' ? u.host : undefined;
  } catch {
    return undefined;
  }
}

/** The host a model's calls go to: its `base_url`'s, else the provider's default; undefined for a provider without an endpoint (scripted). */
export const endpointHostOf = (model: { readonly provider: string; readonly baseUrl?: string }): string | undefined =>
  model.baseUrl !== undefined ? hostOf(model.baseUrl) : DEFAULT_HOSTS[model.provider];

/**
 * Classify what a model call threw. `provider` names the provider kind in the message; `keyEnv` the
 * key's variable; `host` the endpoint asked (endpointHostOf), named unless the provider package
 * reports the URL it called.
 */
export function classifyModelError(e: unknown, provider: string, keyEnv?: string, host?: string): ModelFailure {
  if (isLoopxError(e)) return { error: e, retryable: false };
  if (isApiCallError(e)) {
    const at = hostOf(e.url) ?? host;
    const status = e.statusCode ?? 0;
    const retryAfterMs = retryAfterOf(e.responseHeaders);
    const after = retryAfterMs === undefined ? {} : { retryAfterMs };
    if (status === 429) return { error: modelRateLimited(provider, at), retryable: true, ...after };
    if (status === 401 || status === 403) return { error: modelAuthFailed(provider, keyEnv, at), retryable: false };
    if ((status === 400 || status === 413) && CONTEXT_TOO_LONG.test(e.responseBody ?? e.message))
      return { error: modelContextTooLong(provider), retryable: false };
    if (status >= 500 || status === 408 || status === 409)
      return { error: modelUnavailable(provider, status, at), retryable: true, ...after };
    // No status, or the 200 of a stream that broke after its headers ("terminated"): the network.
    if (status === 0 || (status >= 200 && status < 300))
      return { error: modelNetworkFailed(provider, at), retryable: true };
    return { error: modelRequestRefused(provider, status, at), retryable: false };
  }
  if (isNetworkError(e)) return { error: modelNetworkFailed(provider, host), retryable: true };
  if (e instanceof ModelStreamError) return classifyStreamError(e.detail, provider, keyEnv, host);
  return { error: modelFailed(e instanceof Error ? e.message : String(e), host), retryable: false };
}

const NETWORK_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'EPIPE',
  'ENOTFOUND',
  'EAI_AGAIN',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
  'ENETUNREACH',
  'EHOSTUNREACH',
]);

/** fetch's "fetch failed" / "terminated" and the socket errors under them (undici nests the cause). */
function isNetworkError(e: unknown): boolean {
  if (e instanceof ModelStreamIncomplete) return true;
  for (let cur: unknown = e, depth = 0; cur && depth < 5; cur = (cur as { cause?: unknown }).cause, depth++) {
    const err = cur as { name?: string; code?: string; message?: string };
    if (err.code && NETWORK_CODES.has(err.code)) return true;
    if (err.name === 'TypeError' && (err.message === 'fetch failed' || err.message === 'terminated')) return true;
    if (err.name === 'SocketError' || err.message === 'terminated' || err.message === 'other side closed') return true;
  }
  return false;
}

/** The provider's requested wait: `retry-after-ms`, else `retry-after` in seconds or as an HTTP date (never negative). */
export function retryAfterOf(
  headers: Record<string, string> | undefined,
  now: number = Date.now(),
): number | undefined {
  if (!headers) return undefined;
  const get = (name: string) => Object.entries(headers).find(([k]) => k.toLowerCase() === name)?.[1];
  const ms = Number(get('retry-after-ms'));
  if (get('retry-after-ms') !== undefined && Number.isFinite(ms) && ms >= 0) return ms;
  const after = get('retry-after');
  if (after === undefined) return undefined;
  const seconds = Number(after);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(after);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/**
 * The daemon's HTTP API (docs/api.md): the bearer token, typed errors, JSON calls, raw-byte
 * uploads with progress, and downloads. Every /api/ call but POST /api/session carries
 * `Authorization: Bearer <token>`; a 401 forgets the token and returns the app to its sign-in screen.
 */
import type { ErrorBody } from './types';

const TOKEN_KEY = 'loopx.daemon.token';

let memoryToken: string | null = null;

export function getToken(): string | null {
  try {
    return sessionStorage.getItem(TOKEN_KEY) ?? memoryToken;
  } catch {
    return memoryToken;
  }
}

export function setToken(token: string): void {
  memoryToken = token;
  try {
    sessionStorage.setItem(TOKEN_KEY, token);
  } catch {
    // sessionStorage unavailable: the token lives for this page only.
  }
}

export function clearToken(): void {
  memoryToken = null;
  try {
    sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // nothing stored
  }
}

/** A typed error: the daemon's `{error: {code, message, next_action?, details?}}`, or one the UI made for a network failure. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  readonly nextAction: string | undefined;
  readonly details: unknown;

  constructor(status: number, body: ErrorBody) {
    super(body.message);
    this.name = 'ApiError';
    this.status = status;
    this.code = body.code;
    this.nextAction = body.next_action;
    this.details = body.details;
  }
}

type UnauthorizedListener = (error: ApiError) => void;
const unauthorizedListeners = new Set<UnauthorizedListener>();

/** Called with the 401 error whenever the daemon refuses the token. */
export function onUnauthorized(listener: UnauthorizedListener): () => void {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

/**
 * The daemon refused `used` (the token the request carried; null when there was none): forget it
 * and tell the app — unless the tab has signed in again since, with another token, which a late
 * answer to an old request must not undo.
 */
function unauthorized(error: ApiError, used: string | null): ApiError {
  if (used !== null && getToken() !== used) return error;
  clearToken();
  for (const l of unauthorizedListeners) l(error);
  return error;
}

export function isAbort(e: unknown): boolean {
  return e instanceof DOMException && e.name === 'AbortError';
}

const NETWORK_ERROR: ErrorBody = {
  code: 'ui_daemon_unreachable',
  message: 'The loopx daemon did not answer.',
  next_action: 'check that `loopx daemon` is still running, then reload this page',
};

function errorFromBody(status: number, statusText: string, body: unknown): ApiError {
  const e = (body as { error?: Partial<ErrorBody> } | null)?.error;
  if (e && typeof e.code === 'string') {
    return new ApiError(status, {
      code: e.code,
      message: typeof e.message === 'string' ? e.message : '',
      ...(typeof e.next_action === 'string' ? { next_action: e.next_action } : {}),
      details: e.details,
    });
  }
  return new ApiError(status, {
    code: 'ui_unexpected_response',
    message: `The daemon answered ${status}${statusText ? ` ${statusText}` : ''} without a typed error.`,
    next_action: 'reload this page; if it persists, check the daemon log',
  });
}

async function errorFromResponse(res: Response): Promise<ApiError> {
  let body: unknown = null;
  try {
    body = await res.json();
  } catch {
    // not JSON
  }
  return errorFromBody(res.status, res.statusText, body);
}

/** Any value caught from an API call, as a typed error for display. */
export function asApiError(e: unknown): ApiError {
  if (e instanceof ApiError) return e;
  return new ApiError(0, {
    code: 'ui_internal_error',
    message: e instanceof Error ? e.message : String(e),
    next_action: 'reload this page',
  });
}

export interface ApiInit {
  readonly method?: string;
  readonly headers?: Record<string, string>;
  readonly body?: BodyInit | null;
  readonly signal?: AbortSignal | undefined;
  /** false for POST /api/session only. */
  readonly auth?: boolean;
}

/** fetch with the bearer token; resolves to an OK response, or throws the typed error. */
export async function apiFetch(path: string, init: ApiInit = {}): Promise<Response> {
  const headers: Record<string, string> = { ...init.headers };
  let used: string | null = null;
  if (init.auth !== false) {
    used = getToken();
    if (!used)
      throw unauthorized(new ApiError(401, { code: 'daemon_unauthorized', message: 'You are not signed in.' }), null);
    headers.Authorization = `Bearer ${used}`;
  }
  let res: Response;
  try {
    res = await fetch(path, {
      method: init.method ?? 'GET',
      headers,
      body: init.body ?? null,
      signal: init.signal ?? null,
      cache: 'no-store',
      credentials: 'omit',
      referrerPolicy: 'no-referrer',
    });
  } catch (e) {
    if (isAbort(e)) throw e;
    throw new ApiError(0, NETWORK_ERROR);
  }
  if (res.ok) return res;
  const error = await errorFromResponse(res);
  // Aborted while its error body was read (its page went away, say after another request's 401):
  // an abort, not a second, garbled refusal.
  if (init.signal?.aborted) throw new DOMException('The request was aborted.', 'AbortError');
  if (res.status === 401 && init.auth !== false) throw unauthorized(error, used);
  throw error;
}

export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  const res = await apiFetch(path, { signal, headers: { Accept: 'application/json' } });
  return (await res.json()) as T;
}

/** POST; with `body` undefined nothing is sent (no Content-Type), otherwise JSON. */
export async function postJson<T>(path: string, body?: unknown, signal?: AbortSignal): Promise<T> {
  const res = await apiFetch(path, {
    method: 'POST',
    signal,
    headers:
      body === undefined
        ? { Accept: 'application/json' }
        : { Accept: 'application/json', 'Content-Type': 'application/json' },
    body: body === undefined ? null : JSON.stringify(body),
  });
  return (await res.json()) as T;
}

export async function exchangeLoginToken(loginToken: string): Promise<string> {
  const res = await apiFetch('/api/session', {
    method: 'POST',
    auth: false,
    headers: { Accept: 'application/json', 'Content-Type': 'application/json' },
    body: JSON.stringify({ login_token: loginToken }),
  });
  const { token } = (await res.json()) as { token?: unknown };
  if (typeof token !== 'string' || token.length === 0) {
    throw new ApiError(res.status, {
      code: 'ui_unexpected_response',
      message: 'The daemon answered the sign-in without a token.',
    });
  }
  return token;
}

/**
 * PUT raw bytes (`application/octet-stream`) with upload progress. XMLHttpRequest, because fetch
 * reports no upload progress.
 */
export function putBytes<T>(
  path: string,
  body: Blob,
  onProgress: (loaded: number, total: number) => void,
  signal?: AbortSignal,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const token = getToken();
    if (!token) {
      reject(unauthorized(new ApiError(401, { code: 'daemon_unauthorized', message: 'You are not signed in.' }), null));
      return;
    }
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', path);
    xhr.setRequestHeader('Authorization', `Bearer ${token}`);
    xhr.setRequestHeader('Content-Type', 'application/octet-stream');
    xhr.setRequestHeader('Accept', 'application/json');
    xhr.responseType = 'text';
    xhr.upload.onprogress = (ev) => onProgress(ev.loaded, ev.lengthComputable ? ev.total : body.size);
    xhr.onload = () => {
      let parsed: unknown = null;
      try {
        parsed = JSON.parse(xhr.responseText);
      } catch {
        // not JSON
      }
      if (xhr.status >= 200 && xhr.status < 300) {
        onProgress(body.size, body.size);
        resolve(parsed as T);
        return;
      }
      const error = errorFromBody(xhr.status, xhr.statusText, parsed);
      reject(xhr.status === 401 ? unauthorized(error, token) : error);
    };
    xhr.onerror = () => reject(new ApiError(0, NETWORK_ERROR));
    xhr.onabort = () => reject(new DOMException('The upload was aborted.', 'AbortError'));
    if (signal) {
      if (signal.aborted) {
        reject(new DOMException('The upload was aborted.', 'AbortError'));
        return;
      }
      signal.addEventListener('abort', () => xhr.abort(), { once: true });
    }
    xhr.send(body);
  });
}

/** Save bytes as a file through a short-lived blob URL. */
export function saveBlob(blob: Blob, filename: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = filename;
  a.rel = 'noopener';
  a.hidden = true;
  document.body.append(a);
  a.click();
  a.remove();
  window.setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

export const enc = encodeURIComponent;

/**
 * The daemon's request guards (CONVENTIONS "Interfaces": loopback, token and Origin/Host checks in
 * middleware): every request's Host must name the loopback address and port the daemon listens
 * on, and a request that carries an Origin must come from the same place (DNS rebinding). The
 * bearer token is decided where the route was matched, never on the raw request target: every
 * route needs it unless its own definition says `config: { public: true }` (default deny — the
 * not-found handler and the API catch-all included). A public route that is not an API route (the
 * built UI's files) is public only for a target that does not decode to an API path, so no
 * spelling of `/api/` (`%61pi`, `%2561pi`, `//api`, `/./api`, `/API`, `/api;x`, …) is ever
 * served without the token. Tokens are compared in constant time; login tokens are one-time.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { LoopxError } from '../core/index.js';

export const newToken = (): string => randomBytes(32).toString('base64url');

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/** Constant-time equality of two secrets (compared as SHA-256 digests, so lengths never leak). */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}

export const allowedHosts = (port: number): readonly string[] => [`127.0.0.1:${port}`, `localhost:${port}`];
export const allowedOrigins = (port: number): readonly string[] => [
  `http://127.0.0.1:${port}`,
  `http://localhost:${port}`,
];

/** How often a request target is percent-decoded when looking for an API path (`%2561` → `%61` → `a`). */
const DECODE_ROUNDS = 4;

/**
 * Whether a raw request target could name an API route under any decoding, case or
 * normalisation a router or file server might apply. Anything not plainly origin-form (an
 * absolute-form target, `//`, a backslash) or not decodable counts as one: refusing a strange
 * path costs a 401, serving it might cost the token.
 */
export function looksLikeApiPath(rawUrl: string): boolean {
  let path = rawUrl.split('?', 1)[0] ?? '';
  if (!path.startsWith('/') || path.startsWith('//') || path.includes('\\')) return true;
  for (let i = 0; i < DECODE_ROUNDS && path.includes('%'); i++) {
    try {
      path = decodeURIComponent(path);
    } catch {
      return true;
    }
  }
  if (path.includes('%')) return true;
  const segments = path
    .toLowerCase()
    .replaceAll('\\', '/')
    .split('/')
    .map((seg) => seg.replace(/[;\0].*$/s, '').trim())
    .filter((seg) => seg !== '' && seg !== '.' && seg !== '..');
  return segments[0]?.startsWith('api') ?? false;
}

/** Route options the guards read (`config` of each route definition). */
export interface RouteAccess {
  /** Served without the bearer token. Only the login exchange and the built UI's files say so. */
  readonly public?: boolean;
}

/** Whether this matched route, for this raw target, may be served without the token. */
export function isPublicRequest(
  routeUrl: string | undefined,
  config: RouteAccess | undefined,
  rawUrl: string,
): boolean {
  if (config?.public !== true || routeUrl === undefined) return false;
  return routeUrl.startsWith('/api/') || !looksLikeApiPath(rawUrl);
}

export const daemonError = (
  status: number,
  code: string,
  message: string,
  nextAction?: string,
): LoopxError & { statusCode: number } =>
  Object.assign(
    new LoopxError(status >= 500 ? 'internal' : 'rejected', code, message, nextAction ? { nextAction } : {}),
    { statusCode: status },
  );

/** One-time login tokens: issued at start (and on request by the operator), consumed on use. */
export class LoginTokens {
  private readonly live = new Set<string>();

  issue(): string {
    const t = newToken();
    this.live.add(t);
    return t;
  }

  /** True exactly once per issued token. */
  consume(candidate: string): boolean {
    for (const t of this.live) {
      if (sameSecret(t, candidate)) {
        this.live.delete(t);
        return true;
      }
    }
    return false;
  }
}

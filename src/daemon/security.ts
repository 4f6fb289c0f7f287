/**
 * The daemon's request guards (CONVENTIONS "Interfaces": loopback, token and Origin/Host checks in
 * middleware): every request's Host must name the loopback address and port the daemon listens
 * on, and a request that carries an Origin must come from the same place (DNS rebinding); every
 * /api/ route but the login exchange needs the bearer token, compared in constant time. Login
 * tokens are one-time: exchanging one consumes it.
 */
import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import { LoopxError } from '../core/errors.js';

export const newToken = (): string => randomBytes(32).toString('base64url');

const digest = (s: string): Buffer => createHash('sha256').update(s, 'utf8').digest();

/** Constant-time equality of two secrets (compared as SHA-256 digests, so lengths never leak). */
export function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(digest(a), digest(b));
}

export const allowedHosts = (port: number): readonly string[] => [`127.0.0.1:${port}`, `localhost:${port}`];
export const allowedOrigins = (port: number): readonly string[] => [`http://127.0.0.1:${port}`, `http://localhost:${port}`];

export const daemonError = (status: number, code: string, message: string, nextAction?: string): LoopxError & { statusCode: number } =>
  Object.assign(new LoopxError(status >= 500 ? 'internal' : 'rejected', code, message, nextAction ? { nextAction } : {}), { statusCode: status });

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

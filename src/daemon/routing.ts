/**
 * What the daemon's route files share: the route markings the guards and idempotency hooks read
 * (PUBLIC, WRITE), the server-sent events writer, the body-field parser, and the services a route
 * registration is given (Routes).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Engine } from '../runtime/index.js';
import type { AdoptionService } from './adoptions.js';
import type { AppOptions } from './app.js';
import type { BackupService } from './backups.js';
import type { DaemonTimeouts } from './body.js';
import type { WorkRunDrives } from './work-runs.js';
import { fieldInvalid } from './errors.js';
import type { RouteAccess } from './security.js';

/** What a route's definition says about it (`config`): the guards and the idempotency hooks read it. */
export interface RouteConfig extends RouteAccess {
  /** State-changing: takes an `Idempotency-Key` (idempotency.ts). Every such route must say so. */
  readonly idempotent?: boolean;
}
/** The one marking that lets a route be served without the bearer token (security.ts). */
export const PUBLIC: RouteConfig = { public: true };
/** A state-changing route: a retry with the same Idempotency-Key gets the original outcome. */
export const WRITE: RouteConfig = { idempotent: true };
export const READ_METHODS = new Set(['GET', 'HEAD']);

/** Open event streams; the daemon ends them all when it shuts down (drain). */
export const streams = new WeakMap<FastifyInstance, Set<AbortController>>();

/** Server-sent events on a hijacked reply; returns a writer and a signal that fires when the client goes or the daemon stops. */
export function sse(
  req: FastifyRequest,
  reply: FastifyReply,
): { send(event: string, data: unknown, id?: number): void; end(): void; signal: AbortSignal } {
  const abort = new AbortController();
  const open = streams.get(req.server);
  open?.add(abort);
  abort.signal.addEventListener('abort', () => open?.delete(abort), { once: true });
  reply.hijack();
  reply.raw.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-store',
    connection: 'keep-alive',
    'x-content-type-options': 'nosniff',
  });
  req.raw.on('close', () => abort.abort());
  return {
    send(event, data, id) {
      if (!reply.raw.writableEnded)
        reply.raw.write(`${id !== undefined ? `id: ${id}\n` : ''}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    },
    end() {
      open?.delete(abort);
      if (!reply.raw.writableEnded) reply.raw.end();
    },
    signal: abort.signal,
  };
}

/** What the route registrations share. */
export interface Routes {
  readonly app: FastifyInstance;
  readonly o: AppOptions;
  readonly root: string;
  readonly timeouts: DaemonTimeouts;
  readonly backups: BackupService;
  readonly adoptions: AdoptionService;
  readonly drives: WorkRunDrives;
  /** The engine of the daemon's root, or of `at` (a root its recoveries made). */
  readonly withEngine: <T>(fn: (engine: Engine) => Promise<T> | T, readOnly?: boolean, at?: string) => Promise<T>;
}

/** A JSON body's string field: absent (when `optional`), or a non-empty string; anything else is `daemon_field_invalid`. */
export function bodyText(v: unknown, field: string, optional = false): string | undefined {
  if (v === undefined && optional) return undefined;
  if (typeof v !== 'string' || v.length === 0) throw fieldInvalid(`${field} must be a non-empty string.`);
  return v;
}

/** The query a route that serves more than one root takes: `root`, the name of a root one of the daemon's recoveries made. */
export interface PlaceQuery {
  readonly root?: string;
}

/** The root a request addresses: the daemon's own, or with `?root=<name>` a root one of its recoveries made (never a path). */
export async function placeOf(
  r: Pick<Routes, 'root' | 'adoptions'>,
  req: { readonly query: unknown },
): Promise<string> {
  const name = (req.query as PlaceQuery | undefined)?.root;
  return name === undefined || name === '' ? r.root : r.adoptions.recoveredRoot(name);
}

/** The engine of the root a request addresses (placeOf), as `withEngine` opens it. */
export async function engineFor(
  r: Pick<Routes, 'root' | 'adoptions' | 'withEngine'>,
  req: { readonly query: unknown },
): Promise<Routes['withEngine']> {
  const at = await placeOf(r, req);
  return (fn, readOnly) => r.withEngine(fn, readOnly, at);
}

/**
 * Errors map to responses in one place: a LoopxError's kind decides the HTTP status (usage 400,
 * not found 404, conflict 409, a fail-closed refusal 422, internal 500; daemon guards carry their
 * own 401/403/408/413), and the body is always `{"error": {code, message, next_action?, details?}}`.
 * Anything else is an internal error whose message is not shown (it may name paths).
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { internal, isLoopxError, notFound, usageError, type ErrorKind, type LoopxError } from '../core/index.js';
import { goalLifetimeSuperseded } from '../runtime/index.js';
import { daemonError } from './security.js';

/** No route (or no upload part) by that name: Fastify's own 404s answer with it too. */
export const routeNotFound = (): LoopxError => notFound('daemon_route_not_found', 'No such route.');

/** A body over its limit (a snapshot, an upload part, or any body Fastify's limit stops): nothing of it is kept. */
export const bodyTooLarge = (what: string): LoopxError =>
  daemonError(
    413,
    'daemon_upload_too_large',
    `The ${what} is over its limit; nothing of it was kept.`,
    'send one within the limits of docs/api.md',
  );

/** The daemon is draining: nothing new (a verification, a backup) starts. */
export const daemonStopping = (what: string): LoopxError =>
  daemonError(
    503,
    'daemon_stopping',
    `The daemon is stopping; no new ${what} starts.`,
    'start the daemon again: loopx daemon',
  );

/** Anything that is not a LoopxError: its own message is not shown (it may name paths). */
export const daemonInternal = (): LoopxError =>
  internal('daemon_internal', 'The daemon failed to answer; see its log.');

/** A body not in the form its route takes: a streamed route's not application/octet-stream, a JSON route's not JSON. */
export const bodyInvalid = (what: string, form: string): LoopxError =>
  usageError('daemon_body_invalid', `Send the ${what} as ${form}.`);
export const bodyNotOctetStream = (what: string): LoopxError => bodyInvalid(what, 'application/octet-stream');

/** A JSON body field that is missing or not what the route takes. */
export const fieldInvalid = (message: string): LoopxError =>
  usageError('daemon_field_invalid', message, 'send the fields docs/api.md lists for this route');

/**
 * Over HTTP no refusal names a path: a superseded lifetime's refusal names the recovered root as
 * the operator types it in a shell (relative to where the command runs), which means nothing to a
 * browser — it is answered in its form that names none.
 */
function pathFree(e: LoopxError): LoopxError {
  const goalId = (e.details as { goal_id?: unknown } | undefined)?.goal_id;
  if (e.code === 'goal_lifetime_superseded' && typeof goalId === 'string')
    return Object.assign(goalLifetimeSuperseded(goalId), { statusCode: statusOf(e) });
  return e;
}

const STATUS: Record<ErrorKind, number> = { usage: 400, not_found: 404, conflict: 409, rejected: 422, internal: 500 };

export function statusOf(e: unknown): number {
  const explicit = (e as { statusCode?: unknown }).statusCode;
  if (isLoopxError(e)) return typeof explicit === 'number' ? explicit : STATUS[e.kind];
  return typeof explicit === 'number' && explicit >= 400 && explicit < 500 ? explicit : 500;
}

export function errorBody(e: unknown): { error: Record<string, unknown> } {
  if (isLoopxError(e)) return { error: pathFree(e).toJSON() };
  const fe = e as FastifyError;
  const status = statusOf(e);
  if (status === 413) return { error: bodyTooLarge('request body').toJSON() };
  if (status === 404) return { error: routeNotFound().toJSON() };
  if (status < 500)
    return {
      error: {
        code: 'daemon_bad_request',
        message: typeof fe.code === 'string' ? `The request is malformed (${fe.code}).` : 'The request is malformed.',
      },
    };
  return { error: daemonInternal().toJSON() };
}

export function handleError(e: unknown, req: FastifyRequest, reply: FastifyReply): void {
  const status = statusOf(e);
  // A body the daemon stopped reading (it paused too long, or ran over its limit): answered, then the connection closed.
  if (status === 408 || status === 413) void reply.header('connection', 'close');
  if (status >= 500)
    req.log.error({ code: isLoopxError(e) ? e.code : ((e as { code?: string }).code ?? 'unknown') }, 'request failed');
  void reply.code(status).type('application/json').send(errorBody(e));
}

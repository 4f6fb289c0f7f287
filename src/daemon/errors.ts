/**
 * Errors map to responses in one place: a LoopxError's kind decides the HTTP status (usage 400,
 * not found 404, conflict 409, a fail-closed refusal 422, internal 500; daemon guards carry their
 * own 401/403/408/413), and the body is always `{"error": {code, message, next_action?, details?}}`.
 * Anything else is an internal error whose message is not shown (it may name paths).
 */
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { isLoopxError, type ErrorKind } from '../core/index.js';

const STATUS: Record<ErrorKind, number> = { usage: 400, not_found: 404, conflict: 409, rejected: 422, internal: 500 };

export function statusOf(e: unknown): number {
  const explicit = (e as { statusCode?: unknown }).statusCode;
  if (isLoopxError(e)) return typeof explicit === 'number' ? explicit : STATUS[e.kind];
  return typeof explicit === 'number' && explicit >= 400 && explicit < 500 ? explicit : 500;
}

export function errorBody(e: unknown): { error: Record<string, unknown> } {
  if (isLoopxError(e)) return { error: e.toJSON() };
  const fe = e as FastifyError;
  const status = statusOf(e);
  if (status === 413) return { error: { code: 'daemon_upload_too_large', message: 'The request body is over its limit.' } };
  if (status === 404) return { error: { code: 'daemon_route_not_found', message: 'No such route.' } };
  if (status < 500) return { error: { code: 'daemon_bad_request', message: typeof fe.code === 'string' ? `The request is malformed (${fe.code}).` : 'The request is malformed.' } };
  return { error: { code: 'daemon_internal', message: 'The daemon failed to answer; see its log.' } };
}

export function handleError(e: unknown, req: FastifyRequest, reply: FastifyReply): void {
  const status = statusOf(e);
  if (status >= 500) req.log.error({ code: isLoopxError(e) ? e.code : (e as { code?: string }).code ?? 'unknown' }, 'request failed');
  void reply.code(status).type('application/json').send(errorBody(e));
}

/**
 * Request bodies the daemon streams (backup parts, snapshots): a body counts only when it ended
 * normally — every declared byte, or a chunked body's terminating chunk. A body cut short or
 * reset is `daemon_body_incomplete`, one that idles past its limit is `daemon_body_timeout` (the
 * request is destroyed); either way the caller must keep nothing of it, so the same request may be
 * sent again. The server-wide limits (headers, whole request) are the daemon's server options.
 */
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { isLoopxError, usageError } from '../core/index.js';
import { daemonError } from './security.js';

/** Server and body time limits (AppOptions.timeouts); each bounds how long one client can hold a connection. */
export interface DaemonTimeouts {
  /** Until a request's headers have arrived (Node `headersTimeout`). */
  readonly headersMs: number;
  /** Until a whole request, body included, has arrived (Node `requestTimeout`): a trickle is cut too. */
  readonly requestMs: number;
  /** Longest pause between two chunks of a streamed body. */
  readonly bodyIdleMs: number;
}

export const DEFAULT_TIMEOUTS: DaemonTimeouts = { headersMs: 30_000, requestMs: 300_000, bodyIdleMs: 30_000 };

export const bodyIncomplete = () =>
  usageError(
    'daemon_body_incomplete',
    'The request body ended before all of it arrived; nothing of it was kept.',
    'send the same request again with the whole body',
  );

const bodyTimeout = (ms: number) =>
  daemonError(
    408,
    'daemon_body_timeout',
    `The request body paused for more than ${ms} ms; nothing of it was kept.`,
    'send the same request again',
  );

/**
 * The chunks of `body` (the payload of `raw`), refused unless it ends normally with its declared
 * length. A consumer that stops early (a limit) ends the idle timer with it.
 */
export async function* requestBody(raw: IncomingMessage, body: Readable, idleMs: number): AsyncGenerator<Buffer> {
  let timer: NodeJS.Timeout | undefined;
  let timedOut = false;
  const arm = () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      timedOut = true;
      body.destroy();
      raw.destroy();
    }, idleMs);
  };
  let bytes = 0;
  try {
    arm();
    try {
      for await (const chunk of body as AsyncIterable<Buffer>) {
        bytes += chunk.length;
        arm();
        yield chunk;
      }
    } catch (e) {
      if (isLoopxError(e)) throw e;
      throw timedOut ? bodyTimeout(idleMs) : bodyIncomplete();
    }
    if (timedOut) throw bodyTimeout(idleMs);
    const declared = raw.headers['content-length'];
    // `complete` is Node's own word that the message ended as framed (in-process injected requests lack it).
    if (raw.complete === false || (declared !== undefined && Number(declared) !== bytes)) throw bodyIncomplete();
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A JSON body read whole, within `limit` bytes: cut short (the client's end or reset before its
 * declared length or terminating chunk) it is `daemon_body_incomplete`, paused past `idleMs` it is
 * `daemon_body_timeout` — answered (408) while the client still listens, the connection then
 * closed (handleError) — and over the limit `tooLarge`. Unlike `requestBody`, an idle body does
 * not destroy the socket: the answer must still reach the client.
 */
export function readWholeBody(
  raw: IncomingMessage,
  limit: number,
  idleMs: number,
  tooLarge: () => Error,
): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (e: Error | undefined) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      raw.off('data', onData).off('end', onEnd).off('aborted', onCut).off('close', onCut).off('error', onCut);
      if (e === undefined) resolve(Buffer.concat(chunks));
      else {
        raw.pause();
        reject(e);
      }
    };
    const arm = () => {
      clearTimeout(timer);
      timer = setTimeout(() => finish(bodyTimeout(idleMs)), idleMs);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) return finish(tooLarge());
      chunks.push(chunk);
      arm();
    };
    const onEnd = () => {
      const declared = raw.headers['content-length'];
      finish(
        raw.complete === false || (declared !== undefined && Number(declared) !== size) ? bodyIncomplete() : undefined,
      );
    };
    const onCut = () => finish(bodyIncomplete());
    raw.on('data', onData).on('end', onEnd).on('aborted', onCut).on('close', onCut).on('error', onCut);
    arm();
  });
}

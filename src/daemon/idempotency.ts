/**
 * `Idempotency-Key` on the daemon's state-changing routes (those whose definition says
 * `config: { idempotent: true }`): a client that got no answer sends the same request again with
 * the same key and gets the original outcome — status, headers that describe the body, and the
 * body bytes — instead of a second execution. A retry that arrives while the first is still
 * running waits for it. The same key on a different request (method, route, parameters, body) is
 * `daemon_idempotency_key_reused` (422) and nothing runs.
 *
 * Keys live in memory only (a restarted daemon forgets them), bounded in count and age; when the
 * kept answer bodies pass their byte budget the oldest bodies are dropped first and a retry of
 * one of those gets `daemon_idempotency_outcome_dropped` (409) — never a second execution. An
 * outcome is recorded only when the request body arrived whole: a cut-off request did nothing and
 * may run again under its key, and so may a request refused before it began (`discard`: a closed
 * admission gate), whose next action is to send it again. The public login exchange takes no key (a replay would hand its
 * bearer token to whoever sends the same key).
 */
import { createHash, type Hash } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { PassThrough, Transform, type Readable, type TransformCallback } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { conflict, rejected, usageError } from '../core/index.js';
import { requestBody } from './body.js';

export const IDEMPOTENCY_LIMITS = {
  /** Keys remembered at once; the oldest is forgotten first. */
  maxKeys: 1024,
  /** How long a key is remembered. */
  maxAgeMs: 60 * 60 * 1000,
  /** Answer bodies kept in all (an exported snapshot is the largest answer). */
  maxBodyBytes: 64 * 1024 * 1024,
  /** Longest key: printable ASCII, no spaces. */
  maxKeyLength: 128,
} as const;

const KEY = new RegExp(`^[\\x21-\\x7e]{1,${IDEMPOTENCY_LIMITS.maxKeyLength}}$`);
/** Answer headers that describe the body and so are replayed with it. */
const REPLAYED_HEADERS = ['content-type', 'content-disposition', 'x-loopx-sha256', 'etag'] as const;

export interface Outcome {
  readonly status: number;
  readonly headers: Readonly<Record<string, string>>;
  /** null once dropped for the byte budget: the request happened, its answer is gone. */
  body: Buffer | null;
}

interface Entry {
  /** Method, route, parameters and query; the body digest is compared separately (a stream's is known only once read). */
  readonly request: string;
  bodyDigest: string | null;
  readonly at: number;
  outcome: Outcome | null;
  /** Settles when the first request answered (with its outcome) or ended unrecorded (null). */
  readonly settled: Promise<Outcome | null>;
  settle(o: Outcome | null): void;
}

const keyInvalid = () =>
  usageError(
    'daemon_idempotency_key_invalid',
    `An Idempotency-Key is 1–${IDEMPOTENCY_LIMITS.maxKeyLength} printable ASCII characters without spaces.`,
    'send a key such as a random UUID',
  );
const keyReused = () =>
  rejected('daemon_idempotency_key_reused', 'This Idempotency-Key was used for a different request.', {
    nextAction: 'send a new Idempotency-Key for a new request',
  });
const outcomeDropped = () =>
  conflict('daemon_idempotency_outcome_dropped', 'That request was carried out, but its answer is no longer kept.', {
    nextAction: 'read the current state (a GET of the resource) instead of sending it again',
  });

/** Passes a body through unchanged while hashing it; `digest` is set once it ended normally. */
class HashTap extends Transform {
  readonly #hash: Hash = createHash('sha256');
  digest: string | null = null;
  override _transform(chunk: Buffer, _enc: BufferEncoding, cb: TransformCallback): void {
    this.#hash.update(chunk);
    cb(null, chunk);
  }
  override _flush(cb: TransformCallback): void {
    this.digest = this.#hash.digest('hex');
    cb();
  }
}

const isStream = (b: unknown): b is Readable => typeof b === 'object' && b !== null && 'pipe' in b;

/** What one keyed request does on its way: owns the key (records the outcome), or is a replay. */
interface Ticket {
  readonly key: string;
  readonly entry: Entry;
  /** For a streamed body: the tap whose digest says the body arrived whole. */
  readonly tap: HashTap | null;
}

export class IdempotencyKeys {
  readonly #entries = new Map<string, Entry>();
  readonly #tickets = new WeakMap<FastifyRequest, Ticket>();
  #bodyBytes = 0;

  constructor(private readonly now: () => number = Date.now) {}

  /** Keys remembered now (for tests and the docs' bounds). */
  get size(): number {
    return this.#entries.size;
  }

  #prune(): void {
    const now = this.now();
    for (const [key, e] of this.#entries) {
      // Oldest first (insertion order): stop at the first that is neither too old nor over the count.
      const expired = now - e.at >= IDEMPOTENCY_LIMITS.maxAgeMs || this.#entries.size > IDEMPOTENCY_LIMITS.maxKeys;
      if (!expired) break;
      if (e.outcome === null) continue; // a running request keeps its key until it answers; later ones still age out
      this.#forget(key, e);
    }
    for (const e of this.#entries.values()) {
      if (this.#bodyBytes <= IDEMPOTENCY_LIMITS.maxBodyBytes) break;
      if (e.outcome?.body) {
        this.#bodyBytes -= e.outcome.body.length;
        e.outcome.body = null;
      }
    }
  }

  #forget(key: string, e: Entry): void {
    if (this.#entries.get(key) !== e) return;
    this.#entries.delete(key);
    if (e.outcome?.body) this.#bodyBytes -= e.outcome.body.length;
  }

  /**
   * preHandler of an idempotent route: without a key, nothing to do. With one, either this request
   * owns the key (it runs; its answer is recorded in onSend) or the original outcome is sent.
   */
  async preHandler(req: FastifyRequest, reply: FastifyReply, bodyIdleMs: number): Promise<void> {
    const header = req.headers['idempotency-key'];
    if (header === undefined) return;
    if (typeof header !== 'string' || !KEY.test(header)) throw keyInvalid();
    const request = JSON.stringify([req.method, req.routeOptions.url, req.params, req.query]);
    const streamed = isStream(req.body);
    const jsonDigest = streamed
      ? null
      : createHash('sha256')
          .update(JSON.stringify(req.body ?? null))
          .digest('hex');
    this.#prune();
    for (;;) {
      const found = this.#entries.get(header);
      if (found === undefined) break;
      if (found.request !== request || (jsonDigest !== null && found.bodyDigest !== jsonDigest)) {
        if (streamed) (req.body as Readable).resume();
        throw keyReused();
      }
      const outcome = await found.settled;
      if (outcome === null) continue; // the first ended without an answer to keep: this one may run
      if (streamed) {
        // Only a retry of the same bytes gets the original answer: read and compare them first.
        const hash = createHash('sha256');
        for await (const c of requestBody(req.raw as IncomingMessage, req.body as Readable, bodyIdleMs)) hash.update(c);
        if (hash.digest('hex') !== found.bodyDigest) throw keyReused();
      }
      if (outcome.body === null) throw outcomeDropped();
      await reply
        .code(outcome.status)
        .headers({ ...outcome.headers, 'idempotent-replayed': 'true' })
        .send(outcome.body);
      return;
    }
    let settle!: (o: Outcome | null) => void;
    const settled = new Promise<Outcome | null>((r) => (settle = r));
    const entry: Entry = { request, bodyDigest: jsonDigest, at: this.now(), outcome: null, settled, settle };
    this.#entries.set(header, entry);
    let tap: HashTap | null = null;
    if (streamed) {
      tap = new HashTap();
      const source = req.body as Readable;
      // Errors travel on: a source cut off or reset destroys the tap with its error.
      source.on('error', (e) => tap?.destroy(e));
      source.pipe(tap);
      const through = new PassThrough();
      tap.on('error', (e) => through.destroy(e));
      tap.pipe(through);
      // Idle limits and resume() of the route act on the source through this body.
      through.on('close', () => {
        if (!source.readableEnded) source.destroy();
      });
      req.body = through;
    }
    this.#tickets.set(req, { key: header, entry, tap });
  }

  /**
   * The request changed nothing and is to be sent again as it was (refused before it began: the
   * root's admission gate was closed): its outcome is not kept, so a retry under its key runs.
   */
  discard(req: FastifyRequest): void {
    const t = this.#tickets.get(req);
    if (t === undefined) return;
    this.#tickets.delete(req);
    this.#forget(t.key, t.entry);
    t.entry.settle(null);
  }

  /** onSend: the owner of a key records what it answered (when its body arrived whole). */
  onSend(req: FastifyRequest, reply: FastifyReply, payload: unknown): void {
    const t = this.#tickets.get(req);
    if (t === undefined) return;
    this.#tickets.delete(req);
    const whole = t.tap === null || t.tap.digest !== null;
    const body =
      typeof payload === 'string'
        ? Buffer.from(payload)
        : Buffer.isBuffer(payload)
          ? payload
          : payload === undefined || payload === null
            ? Buffer.alloc(0)
            : null;
    if (!whole || body === null) {
      this.#forget(t.key, t.entry);
      t.entry.settle(null);
      return;
    }
    if (t.tap !== null) t.entry.bodyDigest = t.tap.digest;
    const headers: Record<string, string> = {};
    for (const h of REPLAYED_HEADERS) {
      const v = reply.getHeader(h);
      if (v !== undefined) headers[h] = String(v);
    }
    t.entry.outcome = { status: reply.statusCode, headers, body };
    this.#bodyBytes += body.length;
    t.entry.settle(t.entry.outcome);
    this.#prune();
  }
}

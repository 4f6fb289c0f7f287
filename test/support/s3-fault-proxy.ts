/**
 * A loopback HTTP proxy in front of s3rver that makes it behave like S3 where loopx depends on S3,
 * and that breaks it on purpose. Why a proxy: s3rver (the only S3-protocol server we can run in a
 * test) ignores conditional writes and cannot fail, stall or lose a connection; AWS S3 does all of
 * these, and the repository code must be shown to survive each.
 *
 * What it ENFORCES, as AWS S3 documents it (user guide "conditional-writes" and
 * "conditional-deletes", the PutObject / CompleteMultipartUpload / DeleteObject API references):
 * - `If-None-Match: *` on PutObject, CopyObject and CompleteMultipartUpload: 412 PreconditionFailed
 *   when the key exists. Any other If-None-Match value, or both headers at once, is answered 501
 *   NotImplemented (not modelled; versitygw answers the same).
 * - `If-Match: <etag>` (or `*`) on PutObject, CopyObject, CompleteMultipartUpload and DeleteObject:
 *   404 NoSuchKey when the key is missing (what S3 answers, minio#21526 shows it from the AWS CLI),
 *   412 PreconditionFailed when the ETag differs; also 412 on GetObject/HeadObject (s3rver ignores
 *   If-Match on reads).
 * - Atomic objects: every write of one key is serialized with the others and with its reads (a
 *   readers/writer lock per key), write bodies are read whole before anything reaches s3rver, and
 *   reads are answered from a whole copy — s3rver writes in place, so without this two writers
 *   interleave and a reader can see half an object. Two concurrent `If-None-Match: *` puts of one
 *   key therefore give exactly one 200 and one 412 (S3 may answer the loser 409
 *   ConditionalRequestConflict instead; the proxy always answers 412).
 * - `aws-chunked` bodies (the SDK's streamed upload with a trailing checksum) are decoded as S3
 *   decodes them; s3rver would store the chunk framing as the object's bytes.
 * - AbortMultipartUpload (s3rver: 405) is answered 204, and the upload then answers NoSuchUpload.
 *
 * What it INJECTS, through the returned object only (never over HTTP): failures (500 InternalError,
 * 503 SlowDown), a connection cut after K request-body bytes (nothing of that request reaches
 * s3rver: S3 never shows part of a PUT), a lost answer (the request is executed, its answer never
 * arrives), a delay or a hold (a latch the test releases), and stale listings (ListObjects answered
 * from a copy of the bucket taken at `freezeListings()`). Every request is logged in `requests`.
 * Signatures are forwarded untouched and the Host header kept, though s3rver does not check SigV4.
 *
 * Not modelled (s3rver's behaviour shows through): SigV4 and checksum verification, DeleteObjects'
 * per-object ETags, locks on a CopyObject source or on listings, NoSuchUpload for an unknown or
 * completed upload id (s3rver answers 500), ListParts and ListMultipartUploads (405/501).
 */
import {
  Agent,
  createServer,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type OutgoingHttpHeaders,
  type ServerResponse,
} from 'node:http';
import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import {
  KeyLocks,
  S3_ERRORS,
  classify,
  decodeAwsChunked,
  decodedHeaders,
  isAwsChunked,
  sameEtag,
  type Answer,
  type S3Operation,
  type S3Target,
} from './s3-wire.js';

export type { S3Operation } from './s3-wire.js';

/** Which requests a fault applies to: all given criteria must hold. */
export interface RequestMatch {
  readonly operation?: S3Operation | readonly S3Operation[];
  /** HTTP method, any case. */
  readonly method?: string;
  /** A substring of the object key, or a pattern it matches (requests without a key never match). */
  readonly key?: string | RegExp;
}

/** One request as the proxy saw and answered it. */
export interface ProxiedRequest {
  readonly seq: number;
  readonly method: string;
  readonly operation: S3Operation;
  readonly bucket: string | undefined;
  readonly key: string | undefined;
  readonly uploadId: string | undefined;
  readonly ifNoneMatch: string | undefined;
  readonly ifMatch: string | undefined;
  /** The status the client received; undefined while in flight, or when no answer was sent. */
  readonly status: number | undefined;
  /** The S3 error code of an answer the proxy made itself (PreconditionFailed, SlowDown, …). */
  readonly errorCode: string | undefined;
  /** 'nobody' when the connection was cut or the answer dropped. */
  readonly answeredBy: 'upstream' | 'proxy' | 'frozen-listing' | 'nobody' | undefined;
  readonly fault: 'error' | 'cut' | 'drop-answer' | undefined;
  readonly delayed: boolean;
}

/** A delay in force: a latch for tests that must know a request is being held. */
export interface Hold {
  /** Resolves once `count` (default 1) matching requests have reached the delay. */
  held(count?: number): Promise<void>;
  /** Lets every held request go on and ends the delay. */
  release(): void;
}

/** A read-only copy of the upstream bucket, for stale listings. */
export interface ListingSnapshot {
  readonly endpoint: string;
  close(): Promise<void>;
}

export interface S3FaultProxyOptions {
  /** The s3rver endpoint, `http://127.0.0.1:<port>`. */
  readonly upstream: string;
  /** The address to listen on: 127.0.0.1 (default), or a test-made private link's address that other network namespaces reach. */
  readonly listenAddress?: string;
  /** Takes a copy of the upstream store now (needed by `freezeListings`). */
  readonly snapshotListings?: () => Promise<ListingSnapshot>;
}

export interface S3FaultProxy {
  readonly endpoint: string;
  /** Every request since start (or the last reset), in arrival order. */
  readonly requests: readonly ProxiedRequest[];
  /** Answer the next `times` (default 1, Infinity allowed) matches with 500 InternalError or 503 SlowDown. */
  failNext(match: RequestMatch, fault: { readonly status: 500 | 503; readonly times?: number }): void;
  /** Accept `afterBytes` of the request body, then reset the connection; nothing reaches upstream. */
  cutUpload(match: RequestMatch, fault: { readonly afterBytes: number; readonly times?: number }): void;
  /** Forward the request whole (upstream executes it), then reset the connection instead of answering. */
  dropAnswer(match: RequestMatch, fault?: { readonly times?: number }): void;
  /** Hold matching requests before they are executed: for `ms`, or until `release()`. */
  delay(match: RequestMatch, fault?: { readonly ms?: number; readonly times?: number }): Hold;
  /** From now on answer ListObjects(V2) from a copy of the bucket as it is now, until thawed. */
  freezeListings(): Promise<void>;
  thawListings(): Promise<void>;
  /** Clear every fault, release held requests, thaw listings and empty `requests`. */
  reset(): Promise<void>;
  close(): Promise<void>;
}

type Entry = { -readonly [K in keyof ProxiedRequest]: ProxiedRequest[K] };

interface Gate {
  arrived: number;
  open: boolean;
  readonly waiting: Set<() => void>;
  readonly watchers: Set<() => void>;
}

type Rule = { readonly match: RequestMatch; remaining: number } & (
  | { readonly kind: 'error'; readonly status: 500 | 503 }
  | { readonly kind: 'cut'; readonly afterBytes: number }
  | { readonly kind: 'drop' }
  | { readonly kind: 'delay'; readonly ms: number | undefined; readonly gate: Gate }
);
type RuleOf<K extends Rule['kind']> = Extract<Rule, { kind: K }>;

interface Ctx {
  readonly upstream: URL;
  readonly agent: Agent;
  readonly locks: KeyLocks;
  readonly log: Entry[];
  readonly gates: Set<Gate>;
  readonly aborted: Set<string>;
  rules: Rule[];
  seq: number;
  frozen: { readonly snapshot: ListingSnapshot; readonly url: URL } | undefined;
}

/** Operations that create or replace an object (If-None-Match applies). */
const CREATES = new Set<S3Operation>(['PutObject', 'CopyObject', 'CompleteMultipartUpload']);
const WRITES = new Set<S3Operation>([...CREATES, 'DeleteObject']);
const READS = new Set<S3Operation>(['GetObject', 'HeadObject']);
const LISTINGS = new Set<S3Operation>(['ListObjectsV2', 'ListObjects']);
const UPLOAD_STEPS = new Set<S3Operation>(['UploadPart', 'UploadPartCopy', 'CompleteMultipartUpload', 'ListParts']);
const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection'];

const header = (headers: IncomingHttpHeaders, name: string): string | undefined => {
  const value = headers[name];
  return Array.isArray(value) ? value.join(', ') : value;
};

function forwardable(headers: IncomingHttpHeaders): OutgoingHttpHeaders {
  const out: OutgoingHttpHeaders = { ...headers };
  for (const name of HOP_BY_HOP) delete out[name];
  return out;
}

function matches(match: RequestMatch, entry: Entry): boolean {
  const ops = match.operation === undefined ? undefined : ([] as S3Operation[]).concat(match.operation);
  if (ops !== undefined && !ops.includes(entry.operation)) return false;
  if (match.method !== undefined && match.method.toUpperCase() !== entry.method) return false;
  if (match.key === undefined) return true;
  if (entry.key === undefined) return false;
  return typeof match.key === 'string' ? entry.key.includes(match.key) : match.key.test(entry.key);
}

function take<K extends Rule['kind']>(ctx: Ctx, kind: K, entry: Entry): RuleOf<K> | undefined {
  const rule = ctx.rules.find((r): r is RuleOf<K> => r.kind === kind && r.remaining > 0 && matches(r.match, entry));
  if (rule === undefined) return undefined;
  rule.remaining -= 1;
  if (rule.remaining <= 0) ctx.rules = ctx.rules.filter((r) => r !== rule);
  return rule;
}

function record(ctx: Ctx, method: string, target: S3Target, headers: IncomingHttpHeaders): Entry {
  ctx.seq += 1;
  const entry: Entry = {
    seq: ctx.seq,
    method,
    operation: target.operation,
    bucket: target.bucket,
    key: target.key,
    uploadId: target.uploadId,
    ifNoneMatch: header(headers, 'if-none-match'),
    ifMatch: header(headers, 'if-match'),
    status: undefined,
    errorCode: undefined,
    answeredBy: undefined,
    fault: undefined,
    delayed: false,
  };
  ctx.log.push(entry);
  return entry;
}

async function waitAtGate(rule: RuleOf<'delay'>): Promise<void> {
  const gate = rule.gate;
  gate.arrived += 1;
  for (const watch of gate.watchers) watch();
  if (rule.ms !== undefined) await sleep(rule.ms);
  else if (!gate.open) await new Promise<void>((resolve) => gate.waiting.add(resolve));
}

function openGate(gate: Gate): void {
  gate.open = true;
  for (const resolve of gate.waiting) resolve();
  gate.waiting.clear();
}

function send(res: ServerResponse, entry: Entry, by: Entry['answeredBy'], answer: Answer): void {
  entry.status = answer.status;
  entry.answeredBy = by;
  entry.errorCode = by === 'proxy' ? answer.code : undefined;
  const headers: OutgoingHttpHeaders = { ...answer.headers };
  for (const name of HOP_BY_HOP) delete headers[name];
  const empty = answer.status === 204 || answer.status === 304;
  // A HEAD answer keeps upstream's Content-Length (the object's size); 204 and 304 carry none.
  if (empty) delete headers['content-length'];
  else if (entry.method !== 'HEAD' || headers['content-length'] === undefined) {
    headers['content-length'] = answer.body.length;
  }
  delete headers['transfer-encoding'];
  res.writeHead(answer.status, headers);
  res.end(empty || entry.method === 'HEAD' ? undefined : answer.body);
}

/** Reset the client's connection without an answer. */
function cutNow(req: IncomingMessage, entry: Entry): void {
  entry.status = undefined;
  entry.answeredBy = 'nobody';
  req.socket.destroy();
}

function cutAfter(req: IncomingMessage, afterBytes: number, entry: Entry): void {
  entry.answeredBy = 'nobody';
  if (afterBytes <= 0) return cutNow(req, entry);
  let seen = 0;
  req.on('data', (chunk: Buffer) => {
    seen += chunk.length;
    if (seen >= afterBytes) cutNow(req, entry);
  });
  req.on('end', () => cutNow(req, entry));
}

function readAll(stream: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('end', () => resolve(Buffer.concat(chunks)));
    stream.on('error', reject);
    stream.on('close', () => {
      if (!stream.complete) reject(new Error('the connection closed before the body was complete'));
    });
  });
}

/** Throw away the rest of a request body, so the client reads our answer rather than a broken pipe. */
function drain(req: IncomingMessage): Promise<void> {
  return new Promise((resolve) => {
    req.on('end', resolve);
    req.on('close', resolve);
    req.resume();
  });
}

/** One exchange with upstream, its answer read whole (unsigned for the proxy's own HEADs). */
function exchange(ctx: Ctx, base: URL, method: string, path: string, headers: OutgoingHttpHeaders, body?: Buffer) {
  return new Promise<Answer>((resolve, reject) => {
    const up = httpRequest({ host: base.hostname, port: base.port, method, path, headers, agent: ctx.agent });
    up.on('error', reject);
    up.on('response', (answer) => {
      readAll(answer).then(
        (bytes) => resolve({ status: answer.statusCode ?? 502, headers: forwardable(answer.headers), body: bytes }),
        reject,
      );
    });
    up.end(body);
  });
}

/** Stream a request to `base` and its answer back (operations that touch no object atomically). */
function forwardStreaming(
  ctx: Ctx,
  req: IncomingMessage,
  res: ServerResponse,
  entry: Entry,
  via: { readonly base: URL; readonly by: Entry['answeredBy']; readonly drop: boolean },
): void {
  const { base, by, drop } = via;
  const up = httpRequest({
    host: base.hostname,
    port: base.port,
    method: entry.method,
    path: req.url,
    headers: forwardable(req.headers),
    agent: ctx.agent,
  });
  up.on('response', (answer) => {
    if (drop) {
      answer.on('end', () => cutNow(req, entry));
      answer.resume();
      return;
    }
    entry.status = answer.statusCode;
    entry.answeredBy = by;
    res.writeHead(answer.statusCode ?? 502, forwardable(answer.headers));
    answer.pipe(res);
  });
  up.on('error', () => cutNow(req, entry));
  res.on('close', () => {
    if (!res.writableFinished) up.destroy();
  });
  req.pipe(up);
}

/** Answers the proxy gives without asking upstream: emulated aborts and unsupported conditions. */
function answerLocally(ctx: Ctx, target: S3Target, headers: IncomingHttpHeaders): Answer | undefined {
  const { operation, uploadId } = target;
  if (operation === 'AbortMultipartUpload' && uploadId !== undefined) {
    ctx.aborted.add(uploadId);
    return { status: 204, headers: {}, body: Buffer.alloc(0) };
  }
  if (uploadId !== undefined && ctx.aborted.has(uploadId) && UPLOAD_STEPS.has(operation)) {
    return S3_ERRORS.noSuchUpload(uploadId);
  }
  const ifNoneMatch = header(headers, 'if-none-match');
  if (CREATES.has(operation) && ifNoneMatch !== undefined) {
    if (ifNoneMatch !== '*' || header(headers, 'if-match') !== undefined)
      return S3_ERRORS.notImplemented('If-None-Match');
  }
  return undefined;
}

/** The request body as S3 would store it (aws-chunked decoded), or the 400 S3 answers to a broken one. */
async function storedBody(req: IncomingMessage): Promise<{ body: Buffer; headers: IncomingHttpHeaders } | Answer> {
  const raw = await readAll(req);
  if (!isAwsChunked(req.headers)) return { body: raw, headers: req.headers };
  const body = decodeAwsChunked(raw);
  const declared = header(req.headers, 'x-amz-decoded-content-length');
  if (body === undefined || (declared !== undefined && Number(declared) !== body.length)) {
    return S3_ERRORS.incompleteBody();
  }
  return { body, headers: decodedHeaders(req.headers, body.length) };
}

/** S3's preconditions on the current object; undefined when the request may proceed. */
async function refusal(ctx: Ctx, target: S3Target, headers: IncomingHttpHeaders): Promise<Answer | undefined> {
  const ifNoneMatch = CREATES.has(target.operation) ? header(headers, 'if-none-match') : undefined;
  const ifMatch = WRITES.has(target.operation) || READS.has(target.operation) ? header(headers, 'if-match') : undefined;
  if (ifNoneMatch === undefined && ifMatch === undefined) return undefined;
  const current = await exchange(ctx, ctx.upstream, 'HEAD', target.path, {});
  if (current.status !== 200 && current.status !== 404) {
    throw new Error(`upstream answered HEAD ${target.path} with ${current.status}`);
  }
  const etag = current.status === 200 ? String(current.headers['etag'] ?? '') : undefined;
  const etagMatches = (wanted: string) => etag !== undefined && (wanted === '*' || sameEtag(wanted, etag));
  if (ifNoneMatch === '*' && etag !== undefined) return S3_ERRORS.preconditionFailed('If-None-Match');
  if (ifMatch === undefined || etagMatches(ifMatch)) return undefined;
  // A read of a missing object is answered by upstream (404); a conditional write of one is S3's NoSuchKey.
  if (etag === undefined) return READS.has(target.operation) ? undefined : S3_ERRORS.noSuchKey(target.key ?? '');
  return S3_ERRORS.preconditionFailed('If-Match');
}

/** Execute an object read or write atomically: under the key's lock, body in hand, answer read whole. */
async function atomically(ctx: Ctx, req: IncomingMessage, target: S3Target): Promise<[Answer, Entry['answeredBy']]> {
  const write = WRITES.has(target.operation);
  const stored = write ? await storedBody(req) : { body: undefined, headers: req.headers };
  if ('status' in stored) return [stored, 'proxy'];
  const release = await ctx.locks.acquire(`${target.bucket ?? ''}/${target.key ?? ''}`, write ? 'write' : 'read');
  try {
    const refused = await refusal(ctx, target, stored.headers);
    if (refused !== undefined) return [refused, 'proxy'];
    const headers = forwardable(stored.headers);
    return [await exchange(ctx, ctx.upstream, req.method ?? 'GET', req.url ?? '/', headers, stored.body), 'upstream'];
  } finally {
    release();
  }
}

/** The request's way through the faults, then to upstream (or the frozen copy). */
async function handle(ctx: Ctx, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const target = classify(req.method ?? 'GET', req.url ?? '/', req.headers);
  const entry = record(ctx, req.method ?? 'GET', target, req.headers);
  const delay = take(ctx, 'delay', entry);
  if (delay !== undefined) {
    entry.delayed = true;
    await waitAtGate(delay);
  }
  const failure = take(ctx, 'error', entry);
  if (failure !== undefined) {
    entry.fault = 'error';
    await drain(req);
    return send(res, entry, 'proxy', failure.status === 503 ? S3_ERRORS.slowDown() : S3_ERRORS.internalError());
  }
  const cut = take(ctx, 'cut', entry);
  if (cut !== undefined) {
    entry.fault = 'cut';
    return cutAfter(req, cut.afterBytes, entry);
  }
  const local = answerLocally(ctx, target, req.headers);
  if (local !== undefined) {
    await drain(req);
    return send(res, entry, 'proxy', local);
  }
  const drop = take(ctx, 'drop', entry) !== undefined;
  if (drop) entry.fault = 'drop-answer';
  if (LISTINGS.has(target.operation) && ctx.frozen !== undefined) {
    return forwardStreaming(ctx, req, res, entry, { base: ctx.frozen.url, by: 'frozen-listing', drop });
  }
  if (WRITES.has(target.operation) || READS.has(target.operation)) {
    const [answer, by] = await atomically(ctx, req, target);
    return drop ? cutNow(req, entry) : send(res, entry, by, answer);
  }
  if (isAwsChunked(req.headers)) {
    const stored = await storedBody(req);
    if ('status' in stored) return send(res, entry, 'proxy', stored);
    const answer = await exchange(
      ctx,
      ctx.upstream,
      entry.method,
      req.url ?? '/',
      forwardable(stored.headers),
      stored.body,
    );
    return drop ? cutNow(req, entry) : send(res, entry, 'upstream', answer);
  }
  return forwardStreaming(ctx, req, res, entry, { base: ctx.upstream, by: 'upstream', drop });
}

function newGate(): Gate {
  return { arrived: 0, open: false, waiting: new Set(), watchers: new Set() };
}

function holdOf(ctx: Ctx, gate: Gate): Hold {
  ctx.gates.add(gate);
  return {
    held: (count = 1) =>
      new Promise<void>((resolve) => {
        const watch = () => {
          if (gate.arrived < count) return;
          gate.watchers.delete(watch);
          resolve();
        };
        gate.watchers.add(watch);
        watch();
      }),
    release: () => {
      ctx.rules = ctx.rules.filter((r) => r.kind !== 'delay' || r.gate !== gate);
      openGate(gate);
    },
  };
}

/** The typed control surface over a running proxy. */
function controls(ctx: Ctx, options: S3FaultProxyOptions): Omit<S3FaultProxy, 'endpoint' | 'close'> {
  const thawListings = async () => {
    const frozen = ctx.frozen;
    ctx.frozen = undefined;
    await frozen?.snapshot.close();
  };
  return {
    get requests() {
      return ctx.log;
    },
    failNext: (match, { status, times = 1 }) => void ctx.rules.push({ kind: 'error', match, status, remaining: times }),
    cutUpload: (match, { afterBytes, times = 1 }) =>
      void ctx.rules.push({ kind: 'cut', match, afterBytes, remaining: times }),
    dropAnswer: (match, { times = 1 } = {}) => void ctx.rules.push({ kind: 'drop', match, remaining: times }),
    delay: (match, { ms, times = Infinity } = {}) => {
      const gate = newGate();
      ctx.rules.push({ kind: 'delay', match, ms, gate, remaining: times });
      return holdOf(ctx, gate);
    },
    freezeListings: async () => {
      if (options.snapshotListings === undefined) throw new Error('freezeListings needs options.snapshotListings');
      await thawListings();
      const snapshot = await options.snapshotListings();
      ctx.frozen = { snapshot, url: new URL(snapshot.endpoint) };
    },
    thawListings,
    reset: async () => {
      ctx.rules = [];
      for (const gate of ctx.gates) openGate(gate);
      ctx.gates.clear();
      ctx.log.length = 0;
      await thawListings();
    },
  };
}

/** Start the proxy on 127.0.0.1 or `listenAddress` (port chosen by the system) in front of `options.upstream`. */
export async function startS3FaultProxy(options: S3FaultProxyOptions): Promise<S3FaultProxy> {
  const ctx: Ctx = {
    upstream: new URL(options.upstream),
    // One connection per exchange: a reused idle socket can meet s3rver closing it (ECONNRESET).
    agent: new Agent({ keepAlive: false }),
    locks: new KeyLocks(),
    log: [],
    gates: new Set(),
    aborted: new Set(),
    rules: [],
    seq: 0,
    frozen: undefined,
  };
  const sockets = new Set<Socket>();
  const server = createServer((req, res) => {
    handle(ctx, req, res).catch((error: unknown) => {
      // A failure of the proxy itself is answered loudly, never passed off as an S3 answer.
      if (res.headersSent) return void res.destroy();
      res.writeHead(500, { 'content-type': 'text/plain', 'x-loopx-proxy-failure': '1' });
      res.end(`s3 fault proxy failure: ${error instanceof Error ? error.stack : String(error)}`);
    });
  });
  server.on('connection', (socket: Socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  const address = options.listenAddress ?? '127.0.0.1';
  await new Promise<void>((resolve) => server.listen(0, address, resolve));
  const { port } = server.address() as { port: number };
  const control = controls(ctx, options);
  let closing: Promise<void> | undefined;
  return Object.assign(control, {
    endpoint: `http://${address}:${port}`,
    close: () =>
      (closing ??= (async () => {
        await control.reset();
        for (const socket of sockets) socket.destroy();
        await new Promise<void>((resolve) => server.close(() => resolve()));
        ctx.agent.destroy();
      })()),
  });
}

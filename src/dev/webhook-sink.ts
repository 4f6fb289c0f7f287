/**
 * A loopback "webhook sink": a development/test stand-in for an external system that receives
 * effects. It is not part of any owner and holds no loopx authority.
 *
 * It behaves like a well-behaved idempotent receiver that also fences old writers, so tests and
 * the demo can exercise effect reconciliation and the recovery of a Goal into a new lifetime:
 *   POST /deliveries   headers Idempotency-Key, X-Operation-Id; optionally X-Loopx-Goal-Lineage with
 *                      X-Loopx-Fence (both or neither: else 400 fence_headers_incomplete; the fence
 *                      a non-negative safe integer in decimal without leading zeros, else 400
 *                      fence_invalid; a bad lineage is 400 goal_lineage_invalid) and, with them,
 *                      optionally X-Loopx-Goal-Lifetime (the writer's Goal lifetime; alone it is 400
 *                      fence_headers_incomplete, a bad one 400 goal_lifetime_invalid); a JSON body (≤ 1 MiB).
 *                      The fence rule (webhook-sink-journal.ts `fenceStanding`), per lineage the
 *                      newest fence and the lifetime holding it:
 *                      409 {error:"fence_stale", newest_fence} — the fence is below the newest one
 *                          seen for the lineage: nothing stored (an old writer is fenced HERE);
 *                      409 {error:"fence_conflict", newest_fence, lifetime} — the newest fence, held
 *                          by another named lifetime than the one the writer names: nothing stored
 *                          and nothing raised (one generation of a lineage belongs to one lifetime);
 *                      otherwise a higher fence becomes the newest, held by the writer's lifetime
 *                          (or none), and a lifetime naming the newest fence no lifetime holds claims it;
 *                      201 {replayed:false, delivery} — stored once, by idempotency key;
 *                      200 {replayed:true, delivery}  — the key again with the same body (canonical
 *                          JSON sha256), even under another operation id: a logical operation keeps
 *                          its key across lifetimes, not its operation id. Never stored twice;
 *                      409 {error:"idempotency_key_reused"} — the key with another body;
 *                      409 {error:"operation_id_reused"}    — the operation id is stored under another key.
 *   GET  /                           → {service:"loopx-webhook-sink", deliveries}: what answers here
 *   GET  /deliveries?operation_id=X  → {found, delivery}  (the query reconciliation uses)
 *   GET  /deliveries?goal_lineage=X  → {deliveries} of that lineage, in arrival order
 *   GET  /deliveries                 → {deliveries}
 *   POST /fences {goal_lineage, fence[, lifetime]}
 *                                    → 200 {status:"advanced"|"already", newest_fence, lifetime}
 *                                      | 409 {error:"fence_stale", newest_fence}
 *                                      | 409 {error:"fence_conflict", newest_fence, lifetime}  (idempotent;
 *                                        the same rule; `lifetime` in an answer is the holder's, null: none)
 *   GET  /fences?goal_lineage=X      → {goal_lineage, newest_fence, lifetime}  (null: never seen / none named)
 *   GET  /attempts[?goal_lineage=X]  → {attempts, counts}: every POST /deliveries that got past its
 *        headers and body, with its result — stored, duplicate (a re-send of a held key, counted
 *        though not stored twice), refused_stale_fence, refused_fence_conflict, conflict (a 409
 *        reuse), dropped.
 *   POST /control {mode}             → arms a failure for the next POST /deliveries (tests):
 *        drop_response_after_store  — commit, then drop the connection (the response is lost)
 *        drop_before_store          — drop the connection without storing (attempt: dropped)
 *        respond_500_after_store    — commit, then answer 500
 *        hold_until_released        — read the delivery, then wait until released; then as usual
 *        none                       — disarm
 *   POST /control {mode:"release"}   → 200 {released}: every held delivery goes on
 *   GET  /control                    → {mode, held}: the armed mode and how many deliveries wait
 * It binds 127.0.0.1 only and answers only Host 127.0.0.1:<port> or localhost:<port>.
 * Deliveries, newest fences and attempts live in memory and, with `journalPath`, in an owner-only
 * JSONL file (./webhook-sink-journal.ts) that is fsynced before anything is acknowledged and
 * reloaded on start; a journal written before fences loads as deliveries without them, and one
 * written before lifetimes as fences, deliveries and attempts that name none.
 */
import { closeSync, existsSync, openSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { canonicalJson, usageError } from '../core/index.js';
import {
  GOAL_LINEAGE,
  HEADER_VALUE,
  SINK_ATTEMPT_RESULTS,
  appendJournal,
  fenceStanding,
  isFence,
  isLifetime,
  loadJournal,
  sha,
  type HeldFence,
  type JournalLine,
  type SinkAttempt,
  type SinkAttemptResult,
  type StoredDelivery,
} from './webhook-sink-journal.js';

export {
  SINK_ATTEMPT_RESULTS,
  type SinkAttempt,
  type SinkAttemptResult,
  type StoredDelivery,
} from './webhook-sink-journal.js';

export const SINK_BODY_LIMIT = 1024 * 1024;
/** What `GET /` names: how a second process tells a loopx sink already on a port from anything else. */
export const SINK_SERVICE = 'loopx-webhook-sink';
const SINK_DRAIN_LIMIT = 8 * SINK_BODY_LIMIT;
export const SINK_FAIL_MODES = [
  'drop_response_after_store',
  'drop_before_store',
  'respond_500_after_store',
  'hold_until_released',
  'none',
] as const;
export type SinkFailMode = (typeof SINK_FAIL_MODES)[number];

export interface WebhookSinkOptions {
  /** 0 picks a free port. */
  readonly port: number;
  readonly host?: '127.0.0.1';
  /**
   * In-process only (tests of daemons on other network namespaces): bind this local IPv4 address
   * of a private link the test made, instead of 127.0.0.1. The CLI never passes it.
   */
  readonly linkAddress?: string;
  /** Append-only JSONL file of deliveries, fences and attempts (created 0600, reloaded on start). */
  readonly journalPath?: string;
  /** Serve POST /control (default true). */
  readonly control?: boolean;
}

/** The attempts ledger (all of it, or one lineage's) with a count per result. */
export interface SinkAttempts {
  readonly attempts: SinkAttempt[];
  readonly counts: Record<SinkAttemptResult, number>;
}

export interface WebhookSink {
  /** Base URL, e.g. http://127.0.0.1:43121 */
  readonly url: string;
  /** `${url}/deliveries` */
  readonly deliveriesUrl: string;
  readonly port: number;
  /** Arm a failure for the next POST /deliveries (the in-process twin of POST /control). */
  failNext(mode: SinkFailMode): void;
  /** Deliveries held by `hold_until_released`, waiting (the in-process twin of GET /control). */
  held(): number;
  /** Let every held delivery go on (judged and stored as usual, answered if its sender still listens). */
  release(): void;
  /** What the sink has stored, in arrival order. */
  deliveries(): StoredDelivery[];
  /** Every POST /deliveries attempt and the counts per result (the in-process twin of GET /attempts). */
  attempts(goalLineage?: string): SinkAttempts;
  close(): Promise<void>;
}

class HttpRefusal extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly extra: Record<string, unknown> = {},
  ) {
    super(error);
  }
}

/** A running sink's deliveries, fences, attempts, indexes, journal and armed failure. */
interface SinkState {
  readonly byKey: Map<string, StoredDelivery>;
  readonly byOperation: Map<string, StoredDelivery>;
  readonly ordered: StoredDelivery[];
  /** The newest fence seen per Goal lineage, and the lifetime holding it. */
  readonly fences: Map<string, HeldFence>;
  readonly attempts: SinkAttempt[];
  readonly journalFd: number | undefined;
  readonly control: boolean;
  armed: SinkFailMode;
  /** The address it listens on (127.0.0.1 unless a test's link address). */
  address: string;
  /** Resolvers of the deliveries `hold_until_released` holds. */
  readonly holds: Array<() => void>;
  port: number;
}

interface WriterFence {
  readonly goal_lineage: string;
  readonly fence: number;
  /** The writer's Goal lifetime; null when it names none (a bare counter: cluster epochs, older writers). */
  readonly lifetime: string | null;
}

/** What one POST /deliveries asked for. */
interface Asked {
  readonly idempotency_key: string;
  readonly operation_id: string;
  readonly writer: WriterFence | null;
  readonly body: unknown;
}

type Verdict =
  | { readonly result: 'refused_stale_fence'; readonly newest: number }
  | { readonly result: 'refused_fence_conflict'; readonly held: HeldFence }
  | { readonly result: 'conflict'; readonly error: 'idempotency_key_reused' | 'operation_id_reused' }
  | { readonly result: 'duplicate' | 'stored'; readonly delivery: StoredDelivery }
  | { readonly result: 'dropped' };

function remember(s: SinkState, d: StoredDelivery): void {
  s.byKey.set(d.idempotency_key, d);
  s.byOperation.set(d.operation_id, d);
  s.ordered.push(d);
}

const withoutType = <T extends { type: string }>(line: T): Omit<T, 'type'> => {
  const { type: _type, ...fact } = line;
  return fact;
};

/** Journals (fsynced) then applies: memory never holds a fact the journal lacks. */
function commit(s: SinkState, lines: JournalLine[]): void {
  if (s.journalFd !== undefined) appendJournal(s.journalFd, lines);
  for (const line of lines) {
    if (line.type === 'fence') s.fences.set(line.goal_lineage, { fence: line.fence, lifetime: line.lifetime });
    else if (line.type === 'delivery') remember(s, withoutType(line));
    else s.attempts.push(withoutType(line));
  }
}

/** How the writer's fence stands at its lineage; undefined for a writer without one. */
const standingOf = (s: SinkState, w: WriterFence | null) =>
  w === null ? undefined : fenceStanding(s.fences.get(w.goal_lineage), w.fence, w.lifetime);

/** The fence rule first (an old writer, or another lifetime at the same fence, is refused whatever it sends), then dedup by key, then operation id. */
function judge(s: SinkState, a: Asked): Verdict {
  const standing = standingOf(s, a.writer);
  const held = a.writer === null ? undefined : s.fences.get(a.writer.goal_lineage);
  if (standing === 'stale') return { result: 'refused_stale_fence', newest: held!.fence };
  if (standing === 'conflict') return { result: 'refused_fence_conflict', held: held! };
  const digest = sha(a.body);
  const previous = s.byKey.get(a.idempotency_key);
  const holder = s.byOperation.get(a.operation_id);
  if (previous !== undefined && previous.body_sha256 !== digest)
    return { result: 'conflict', error: 'idempotency_key_reused' };
  if (holder !== undefined && holder !== previous) return { result: 'conflict', error: 'operation_id_reused' };
  if (previous !== undefined) return { result: 'duplicate', delivery: previous };
  const delivery: StoredDelivery = {
    sequence: s.ordered.length + 1,
    idempotency_key: a.idempotency_key,
    operation_id: a.operation_id,
    goal_lineage: a.writer?.goal_lineage ?? null,
    fence: a.writer?.fence ?? null,
    lifetime: a.writer?.lifetime ?? null,
    body: a.body,
    body_sha256: digest,
    received_at: new Date().toISOString(),
  };
  return { result: 'stored', delivery };
}

/** Records the attempt (and what it stored, and the fence it raised) durably, in one fsync. */
function record(s: SinkState, a: Asked, v: Verdict): void {
  const lines: JournalLine[] = [];
  const w = a.writer;
  const standing = standingOf(s, w);
  const raises =
    w !== null &&
    (v.result === 'stored' || v.result === 'duplicate' || v.result === 'conflict') &&
    (standing === 'rises' || standing === 'claims');
  if (raises) lines.push({ type: 'fence', goal_lineage: w.goal_lineage, fence: w.fence, lifetime: w.lifetime });
  if (v.result === 'stored') lines.push({ type: 'delivery', ...v.delivery });
  const attempt: SinkAttempt = {
    sequence: s.attempts.length + 1,
    at: new Date().toISOString(),
    idempotency_key: a.idempotency_key,
    operation_id: a.operation_id,
    goal_lineage: w?.goal_lineage ?? null,
    fence: w?.fence ?? null,
    lifetime: w?.lifetime ?? null,
    result: v.result,
  };
  lines.push({ type: 'attempt', ...attempt });
  commit(s, lines);
}

/** POST /deliveries: fenced by lineage, stored once by idempotency key, a repeat replayed, a reuse refused; every attempt recorded. */
async function deliver(s: SinkState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const idempotency_key = header(req, 'idempotency-key');
  const operation_id = header(req, 'x-operation-id');
  const writer = writerFence(req);
  const asked: Asked = { idempotency_key, operation_id, writer, body: parseJson(await readBody(req)) };
  const mode = s.armed;
  s.armed = 'none';
  // Held with its body read: the sender has dispatched and waits, as it would on a slow receiver.
  if (mode === 'hold_until_released') await new Promise<void>((r) => s.holds.push(r));
  const verdict: Verdict = mode === 'drop_before_store' ? { result: 'dropped' } : judge(s, asked);
  record(s, asked, verdict);
  switch (verdict.result) {
    case 'dropped':
      return void req.socket.destroy();
    case 'refused_stale_fence':
      return send(res, 409, { error: 'fence_stale', newest_fence: verdict.newest });
    case 'refused_fence_conflict':
      return send(res, 409, {
        error: 'fence_conflict',
        newest_fence: verdict.held.fence,
        lifetime: verdict.held.lifetime,
      });
    case 'conflict':
      return send(res, 409, { error: verdict.error });
    case 'duplicate':
      return send(res, 200, { replayed: true, delivery: verdict.delivery });
  }
  if (mode === 'drop_response_after_store') return void req.socket.destroy();
  if (mode === 'respond_500_after_store') return send(res, 500, { error: 'simulated_failure' });
  return send(res, 201, { replayed: false, delivery: verdict.delivery });
}

/** X-Loopx-Goal-Lineage and X-Loopx-Fence: both or neither; X-Loopx-Goal-Lifetime only with them. */
function writerFence(req: IncomingMessage): WriterFence | null {
  const lineage = req.headers['x-loopx-goal-lineage'];
  const fence = req.headers['x-loopx-fence'];
  const lifetime = req.headers['x-loopx-goal-lifetime'];
  if (lineage === undefined && fence === undefined && lifetime === undefined) return null;
  if (lineage === undefined || fence === undefined) throw new HttpRefusal(400, 'fence_headers_incomplete');
  if (typeof lineage !== 'string' || !GOAL_LINEAGE.test(lineage)) throw new HttpRefusal(400, 'goal_lineage_invalid');
  if (typeof fence !== 'string' || !/^(0|[1-9][0-9]{0,15})$/.test(fence) || !isFence(Number(fence)))
    throw new HttpRefusal(400, 'fence_invalid');
  if (lifetime !== undefined && !isLifetime(lifetime)) throw new HttpRefusal(400, 'goal_lifetime_invalid');
  return { goal_lineage: lineage, fence: Number(fence), lifetime: lifetime ?? null };
}

/**
 * POST /fences: raise a lineage's newest fence so that older writers are refused from now on — and,
 * with a lifetime, every other lifetime at this fence too. Nothing changes on a refusal.
 */
async function advanceFence(s: SinkState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = parseJson(await readBody(req)) as { goal_lineage?: unknown; fence?: unknown; lifetime?: unknown } | null;
  const lineage = body?.goal_lineage;
  const fence = body?.fence;
  const lifetime = body?.lifetime ?? null;
  if (
    typeof lineage !== 'string' ||
    !GOAL_LINEAGE.test(lineage) ||
    !isFence(fence) ||
    (lifetime !== null && !isLifetime(lifetime))
  )
    throw new HttpRefusal(400, 'fence_request_invalid');
  const held = s.fences.get(lineage);
  switch (fenceStanding(held, fence, lifetime)) {
    case 'stale':
      throw new HttpRefusal(409, 'fence_stale', { newest_fence: held!.fence });
    case 'conflict':
      throw new HttpRefusal(409, 'fence_conflict', { newest_fence: held!.fence, lifetime: held!.lifetime });
    case 'holds':
      return send(res, 200, { status: 'already', newest_fence: held!.fence, lifetime: held!.lifetime });
    default:
      commit(s, [{ type: 'fence', goal_lineage: lineage, fence, lifetime }]);
      return send(res, 200, { status: 'advanced', newest_fence: fence, lifetime });
  }
}

function lineageParam(url: URL): string | null {
  const lineage = url.searchParams.get('goal_lineage');
  if (lineage !== null && !GOAL_LINEAGE.test(lineage)) throw new HttpRefusal(400, 'goal_lineage_invalid');
  return lineage;
}

function attemptsOf(s: SinkState, lineage: string | null | undefined): SinkAttempts {
  const attempts = lineage == null ? s.attempts : s.attempts.filter((a) => a.goal_lineage === lineage);
  const counts = Object.fromEntries(SINK_ATTEMPT_RESULTS.map((r) => [r, 0])) as Record<SinkAttemptResult, number>;
  for (const a of attempts) counts[a.result] += 1;
  return { attempts, counts };
}

function queryDeliveries(s: SinkState, url: URL, res: ServerResponse): void {
  const operationId = url.searchParams.get('operation_id');
  const lineage = lineageParam(url);
  if (operationId !== null && lineage !== null) throw new HttpRefusal(400, 'query_ambiguous');
  if (lineage !== null) return send(res, 200, { deliveries: s.ordered.filter((d) => d.goal_lineage === lineage) });
  if (operationId === null) return send(res, 200, { deliveries: s.ordered });
  const d = s.byOperation.get(operationId);
  return send(res, 200, { found: d !== undefined, delivery: d ?? null });
}

const releaseHolds = (s: SinkState): void => {
  for (const r of s.holds.splice(0)) r();
};

async function arm(s: SinkState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const body = parseJson(await readBody(req)) as { mode?: unknown } | null;
  const mode = body?.mode;
  if (mode === 'release') {
    const released = s.holds.length;
    releaseHolds(s);
    return send(res, 200, { released });
  }
  if (!(SINK_FAIL_MODES as readonly unknown[]).includes(mode)) throw new HttpRefusal(400, 'unknown_mode');
  s.armed = mode as SinkFailMode;
  return send(res, 200, { mode: s.armed });
}

async function handle(s: SinkState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const hostHeader = req.headers.host ?? '';
  if (hostHeader !== `${s.address}:${s.port}` && hostHeader !== `localhost:${s.port}`)
    throw new HttpRefusal(421, 'host_not_allowed');
  const url = new URL(req.url ?? '/', `http://${s.address}:${s.port}`);
  const route = `${req.method ?? ''} ${url.pathname}`;

  if (route === 'GET /') return send(res, 200, { service: SINK_SERVICE, deliveries: s.ordered.length });
  if (route === 'GET /deliveries') return queryDeliveries(s, url, res);
  if (route === 'POST /deliveries') return deliver(s, req, res);
  if (route === 'POST /fences') return advanceFence(s, req, res);
  if (route === 'GET /fences') {
    const lineage = lineageParam(url);
    if (lineage === null) throw new HttpRefusal(400, 'goal_lineage_invalid');
    const held = s.fences.get(lineage);
    return send(res, 200, {
      goal_lineage: lineage,
      newest_fence: held?.fence ?? null,
      lifetime: held?.lifetime ?? null,
    });
  }
  if (route === 'GET /attempts') return send(res, 200, attemptsOf(s, lineageParam(url)));
  if (route === 'POST /control' && s.control) return arm(s, req, res);
  if (route === 'GET /control' && s.control) return send(res, 200, { mode: s.armed, held: s.holds.length });

  const known = ['/deliveries', '/fences', '/attempts', ...(s.control ? ['/control'] : [])];
  if (known.includes(url.pathname)) throw new HttpRefusal(405, 'method_not_allowed');
  throw new HttpRefusal(404, 'not_found');
}

function listen(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
}

function openState(options: WebhookSinkOptions): SinkState {
  const loaded =
    options.journalPath !== undefined && existsSync(options.journalPath) ? loadJournal(options.journalPath) : undefined;
  const journalFd = options.journalPath === undefined ? undefined : openSync(options.journalPath, 'a', 0o600);
  const s: SinkState = {
    byKey: new Map(),
    byOperation: new Map(),
    ordered: [],
    fences: new Map(loaded?.fences ?? []),
    attempts: [...(loaded?.attempts ?? [])],
    journalFd,
    control: options.control !== false,
    armed: 'none',
    address: '127.0.0.1',
    holds: [],
    port: 0,
  };
  for (const d of loaded?.deliveries ?? []) remember(s, d);
  return s;
}

export async function startWebhookSink(options: WebhookSinkOptions): Promise<WebhookSink> {
  const host = options.host ?? '127.0.0.1';
  const linkOk = options.linkAddress === undefined || /^(\d{1,3}\.){3}\d{1,3}$/.test(options.linkAddress);
  if (host !== '127.0.0.1' || !linkOk) {
    throw usageError(
      'webhook_sink_host_not_loopback',
      'The webhook sink binds 127.0.0.1 only.',
      'omit --host or pass 127.0.0.1',
    );
  }
  if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65535) {
    throw usageError(
      'webhook_sink_port_invalid',
      'The port must be an integer from 0 to 65535.',
      'pass a valid --port',
    );
  }
  const s = openState(options);
  const journalFd = s.journalFd;
  const address = options.linkAddress ?? host;
  s.address = address;

  const server = createServer((req, res) => {
    handle(s, req, res).catch((e: unknown) => {
      if (res.headersSent || req.socket.destroyed) return;
      if (e instanceof HttpRefusal) {
        if (e.status === 413) res.setHeader('connection', 'close');
        send(res, e.status, { error: e.error, ...e.extra });
      } else {
        send(res, 500, { error: 'internal' });
      }
    });
  });
  server.requestTimeout = 30_000;

  try {
    await listen(server, options.port, address);
  } catch (e) {
    if (journalFd !== undefined) closeSync(journalFd);
    throw e;
  }
  s.port = (server.address() as AddressInfo).port;
  const url = `http://${address}:${s.port}`;

  return {
    url,
    deliveriesUrl: `${url}/deliveries`,
    port: s.port,
    failNext(mode) {
      if (!(SINK_FAIL_MODES as readonly string[]).includes(mode))
        throw usageError(
          'webhook_sink_mode_invalid',
          'Unknown failure mode.',
          `use one of ${SINK_FAIL_MODES.join(', ')}`,
        );
      s.armed = mode;
    },
    held: () => s.holds.length,
    release: () => releaseHolds(s),
    deliveries: () => structuredClone(s.ordered),
    attempts: (goalLineage) => structuredClone(attemptsOf(s, goalLineage)),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => {
          if (journalFd !== undefined) closeSync(journalFd);
          if (err) reject(err);
          else resolve();
        });
        releaseHolds(s);
        server.closeAllConnections();
      }),
  };
}

function send(res: ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
  });
  res.end(text);
}

function header(req: IncomingMessage, name: string): string {
  const v = req.headers[name];
  if (typeof v !== 'string' || !HEADER_VALUE.test(v)) throw new HttpRefusal(400, `missing_${name.replace(/-/g, '_')}`);
  return v;
}

function parseJson(bytes: Buffer): unknown {
  try {
    const value: unknown = JSON.parse(bytes.toString('utf8'));
    canonicalJson(value);
    return value;
  } catch {
    throw new HttpRefusal(400, 'invalid_json');
  }
}

/**
 * Reads a body of at most SINK_BODY_LIMIT bytes. A larger one is drained (so the client reads the
 * 413) up to SINK_DRAIN_LIMIT; beyond that the connection is cut.
 */
function readBody(req: IncomingMessage): Promise<Buffer> {
  if (Number(req.headers['content-length'] ?? 0) > SINK_DRAIN_LIMIT)
    return Promise.reject(new HttpRefusal(413, 'body_too_large'));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > SINK_DRAIN_LIMIT) req.socket.destroy();
      else if (size <= SINK_BODY_LIMIT) chunks.push(chunk);
    });
    req.on('end', () =>
      size > SINK_BODY_LIMIT ? reject(new HttpRefusal(413, 'body_too_large')) : resolve(Buffer.concat(chunks)),
    );
    req.on('error', reject);
    req.on('close', () => reject(new HttpRefusal(400, 'request_aborted'))); // no-op once settled
  });
}

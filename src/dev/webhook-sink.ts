/**
 * A loopback "webhook sink": a development/test stand-in for an external system that receives
 * effects. It is not part of any owner and holds no loopx authority.
 *
 * It behaves like a well-behaved idempotent receiver, so tests and the demo can exercise effect
 * reconciliation end to end:
 *   POST /deliveries   headers Idempotency-Key, X-Operation-Id; a JSON body (at most 1 MiB).
 *                      201 {replayed:false, delivery} — stored once, by idempotency key;
 *                      200 {replayed:true, delivery}  — a repeat returns the original, never stores twice;
 *                      409 when the key (or operation id) was used with a different request.
 *   GET  /deliveries?operation_id=X  → {found, delivery}  (the query reconciliation uses)
 *   GET  /deliveries                 → {deliveries}
 *   POST /control {mode}             → arms a failure for the next POST /deliveries (tests):
 *        drop_response_after_store  — commit, then drop the connection (the response is lost)
 *        drop_before_store          — drop the connection without storing
 *        respond_500_after_store    — commit, then answer 500
 *        none                       — disarm
 * It binds 127.0.0.1 only and answers only Host 127.0.0.1:<port> or localhost:<port>.
 * Deliveries live in memory and, with `journalPath`, in an owner-only JSONL file that is fsynced
 * before a delivery is acknowledged and reloaded on start.
 */
import { createHash } from 'node:crypto';
import { closeSync, existsSync, fsyncSync, openSync, readFileSync, writeSync } from 'node:fs';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { canonicalJson, rejected, usageError } from '../core/index.js';

export const SINK_BODY_LIMIT = 1024 * 1024;
const SINK_DRAIN_LIMIT = 8 * SINK_BODY_LIMIT;
export const SINK_FAIL_MODES = ['drop_response_after_store', 'drop_before_store', 'respond_500_after_store', 'none'] as const;
export type SinkFailMode = (typeof SINK_FAIL_MODES)[number];

export interface WebhookSinkOptions {
  /** 0 picks a free port. */
  readonly port: number;
  readonly host?: '127.0.0.1';
  /** Append-only JSONL file of stored deliveries (created 0600, reloaded on start). */
  readonly journalPath?: string;
  /** Serve POST /control (default true). */
  readonly control?: boolean;
}

export interface StoredDelivery {
  readonly sequence: number;
  readonly idempotency_key: string;
  readonly operation_id: string;
  readonly body: unknown;
  /** sha256 hex of the body's canonical JSON. */
  readonly body_sha256: string;
  readonly received_at: string;
}

export interface WebhookSink {
  /** Base URL, e.g. http://127.0.0.1:43121 */
  readonly url: string;
  /** `${url}/deliveries` */
  readonly deliveriesUrl: string;
  readonly port: number;
  /** Arm a failure for the next POST /deliveries (the in-process twin of POST /control). */
  failNext(mode: SinkFailMode): void;
  /** What the sink has stored, in arrival order. */
  deliveries(): StoredDelivery[];
  close(): Promise<void>;
}

const HEADER_VALUE = /^[\x21-\x7e]{1,255}$/;

class HttpRefusal extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
  ) {
    super(error);
  }
}

/** A running sink's deliveries, indexes, journal and armed failure. */
interface SinkState {
  readonly byKey: Map<string, StoredDelivery>;
  readonly byOperation: Map<string, StoredDelivery>;
  readonly ordered: StoredDelivery[];
  readonly journalFd: number | undefined;
  readonly control: boolean;
  armed: SinkFailMode;
  port: number;
}

function remember(s: SinkState, d: StoredDelivery): void {
  s.byKey.set(d.idempotency_key, d);
  s.byOperation.set(d.operation_id, d);
  s.ordered.push(d);
}

/** Store a delivery once: journalled and fsynced before it is acknowledged. */
function store(s: SinkState, idempotencyKey: string, operationId: string, body: unknown): StoredDelivery {
  const d: StoredDelivery = {
    sequence: s.ordered.length + 1,
    idempotency_key: idempotencyKey,
    operation_id: operationId,
    body,
    body_sha256: createHash('sha256').update(canonicalJson(body)).digest('hex'),
    received_at: new Date().toISOString(),
  };
  if (s.journalFd !== undefined) {
    const line = Buffer.from(`${JSON.stringify(d)}\n`);
    let off = 0;
    while (off < line.byteLength) off += writeSync(s.journalFd, line, off, line.byteLength - off);
    fsyncSync(s.journalFd);
  }
  remember(s, d);
  return d;
}

/** POST /deliveries: stored once by idempotency key, a repeat replayed, a reuse refused; an armed failure strikes here. */
async function deliver(s: SinkState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const idempotencyKey = header(req, 'idempotency-key');
  const operationId = header(req, 'x-operation-id');
  const body = parseJson(await readBody(req));
  const mode = s.armed;
  s.armed = 'none';
  if (mode === 'drop_before_store') return void req.socket.destroy();

  const previous = s.byKey.get(idempotencyKey);
  if (previous !== undefined) {
    if (previous.operation_id !== operationId || previous.body_sha256 !== sha(body)) throw new HttpRefusal(409, 'idempotency_key_reused');
    return send(res, 200, { replayed: true, delivery: previous });
  }
  if (s.byOperation.has(operationId)) throw new HttpRefusal(409, 'operation_id_reused');
  const delivery = store(s, idempotencyKey, operationId, body);
  if (mode === 'drop_response_after_store') return void req.socket.destroy();
  if (mode === 'respond_500_after_store') return send(res, 500, { error: 'simulated_failure' });
  return send(res, 201, { replayed: false, delivery });
}

async function handle(s: SinkState, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const hostHeader = req.headers.host ?? '';
  if (hostHeader !== `127.0.0.1:${s.port}` && hostHeader !== `localhost:${s.port}`) throw new HttpRefusal(421, 'host_not_allowed');
  const url = new URL(req.url ?? '/', `http://127.0.0.1:${s.port}`);

  if (url.pathname === '/deliveries' && req.method === 'GET') {
    const operationId = url.searchParams.get('operation_id');
    if (operationId === null) return send(res, 200, { deliveries: s.ordered });
    const d = s.byOperation.get(operationId);
    return send(res, 200, { found: d !== undefined, delivery: d ?? null });
  }

  if (url.pathname === '/deliveries' && req.method === 'POST') return deliver(s, req, res);

  if (url.pathname === '/control' && req.method === 'POST' && s.control) {
    const body = parseJson(await readBody(req)) as { mode?: unknown } | null;
    const mode = body?.mode;
    if (!(SINK_FAIL_MODES as readonly unknown[]).includes(mode)) throw new HttpRefusal(400, 'unknown_mode');
    s.armed = mode as SinkFailMode;
    return send(res, 200, { mode: s.armed });
  }

  if (url.pathname === '/deliveries' || (url.pathname === '/control' && s.control)) throw new HttpRefusal(405, 'method_not_allowed');
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

export async function startWebhookSink(options: WebhookSinkOptions): Promise<WebhookSink> {
  const host = options.host ?? '127.0.0.1';
  if (host !== '127.0.0.1') {
    throw usageError('webhook_sink_host_not_loopback', 'The webhook sink binds 127.0.0.1 only.', 'omit --host or pass 127.0.0.1');
  }
  if (!Number.isInteger(options.port) || options.port < 0 || options.port > 65535) {
    throw usageError('webhook_sink_port_invalid', 'The port must be an integer from 0 to 65535.', 'pass a valid --port');
  }
  const loaded = options.journalPath !== undefined && existsSync(options.journalPath) ? loadJournal(options.journalPath) : [];
  const journalFd = options.journalPath === undefined ? undefined : openSync(options.journalPath, 'a', 0o600);
  const s: SinkState = { byKey: new Map(), byOperation: new Map(), ordered: [], journalFd, control: options.control !== false, armed: 'none', port: 0 };
  for (const d of loaded) remember(s, d);

  const server = createServer((req, res) => {
    handle(s, req, res).catch((e: unknown) => {
      if (res.headersSent || req.socket.destroyed) return;
      if (e instanceof HttpRefusal) {
        if (e.status === 413) res.setHeader('connection', 'close');
        send(res, e.status, { error: e.error });
      } else {
        send(res, 500, { error: 'internal' });
      }
    });
  });
  server.requestTimeout = 30_000;

  await listen(server, options.port, host);
  s.port = (server.address() as AddressInfo).port;
  const url = `http://127.0.0.1:${s.port}`;

  return {
    url,
    deliveriesUrl: `${url}/deliveries`,
    port: s.port,
    failNext(mode) {
      if (!(SINK_FAIL_MODES as readonly string[]).includes(mode))
        throw usageError('webhook_sink_mode_invalid', 'Unknown failure mode.', `use one of ${SINK_FAIL_MODES.join(', ')}`);
      s.armed = mode;
    },
    deliveries: () => structuredClone(s.ordered),
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => {
          if (journalFd !== undefined) closeSync(journalFd);
          if (err) reject(err);
          else resolve();
        });
        server.closeAllConnections();
      }),
  };
}

function send(res: ServerResponse, status: number, value: unknown): void {
  const text = JSON.stringify(value);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), 'cache-control': 'no-store' });
  res.end(text);
}

function header(req: IncomingMessage, name: string): string {
  const v = req.headers[name];
  if (typeof v !== 'string' || !HEADER_VALUE.test(v)) throw new HttpRefusal(400, `missing_${name.replace(/-/g, '_')}`);
  return v;
}

const sha = (body: unknown): string => createHash('sha256').update(canonicalJson(body)).digest('hex');

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
  if (Number(req.headers['content-length'] ?? 0) > SINK_DRAIN_LIMIT) return Promise.reject(new HttpRefusal(413, 'body_too_large'));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.byteLength;
      if (size > SINK_DRAIN_LIMIT) req.socket.destroy();
      else if (size <= SINK_BODY_LIMIT) chunks.push(chunk);
    });
    req.on('end', () => (size > SINK_BODY_LIMIT ? reject(new HttpRefusal(413, 'body_too_large')) : resolve(Buffer.concat(chunks))));
    req.on('error', reject);
    req.on('close', () => reject(new HttpRefusal(400, 'request_aborted'))); // no-op once settled
  });
}

function loadJournal(path: string): StoredDelivery[] {
  const invalid = (line: number) =>
    rejected('webhook_sink_journal_invalid', `The sink journal is malformed at line ${line}.`, { nextAction: 'start the sink with a new journal file' });
  const out: StoredDelivery[] = [];
  const keys = new Set<string>();
  const operations = new Set<string>();
  const lines = readFileSync(path, 'utf8').split('\n');
  lines.forEach((text, i) => {
    if (text === '' && i === lines.length - 1) return;
    let d: StoredDelivery;
    try {
      d = JSON.parse(text) as StoredDelivery;
    } catch {
      throw invalid(i + 1);
    }
    const ok =
      typeof d === 'object' &&
      d !== null &&
      d.sequence === out.length + 1 &&
      typeof d.idempotency_key === 'string' &&
      HEADER_VALUE.test(d.idempotency_key) &&
      !keys.has(d.idempotency_key) &&
      typeof d.operation_id === 'string' &&
      HEADER_VALUE.test(d.operation_id) &&
      !operations.has(d.operation_id) &&
      typeof d.received_at === 'string' &&
      d.body_sha256 === sha(d.body);
    if (!ok) throw invalid(i + 1);
    keys.add(d.idempotency_key);
    operations.add(d.operation_id);
    out.push(d);
  });
  return out;
}

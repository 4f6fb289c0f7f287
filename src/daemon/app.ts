/**
 * The daemon's HTTP app — a value you can test in-process (`app.inject`, no port). It owns routing
 * and the translation of requests into calls of the same library functions the CLI uses (engine,
 * owners, recovery); it decides nothing itself. Guards run first on every request, after routing
 * (Host, Origin, bearer token — security.ts): every route needs the token unless its definition
 * carries `config: PUBLIC` (the login exchange; the built UI's files, which hold no data and whose
 * every API call needs the token). Errors become responses in one place (errors.ts).
 */
import fastifyStatic from '@fastify/static';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { existsSync } from 'node:fs';
import { createServer } from 'node:http';
import { join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { sha256Hex, isLoopxError, usageError, type LoopxError, LOOPX_VERSION } from '../core/index.js';
import {
  addTodo,
  ENVELOPE_MAX_BYTES,
  goalDetail,
  operatorOperationId,
  TODO_STATUSES,
  todoView,
  transitionGoal,
  updateTodo,
  withGoalWriter,
  isAdmissionClosed,
  LAYOUT,
  listWorkspace,
  ownerDescriptions,
  runSummary,
  showWorkspaceGoal,
  withRootEngine,
  withRootOwners,
  type Engine,
} from '../runtime/index.js';
import { DEFAULT_TIMEOUTS, requestBody, type DaemonTimeouts } from './body.js';
import { IdempotencyKeys } from './idempotency.js';
import { AdoptionService } from './adoptions.js';
import { BackupService, type Job, type UploadPart } from './backups.js';
import { bodyNotOctetStream, bodyTooLarge, daemonInternal, fieldInvalid, handleError, routeNotFound } from './errors.js';
import { LoginTokens, allowedHosts, allowedOrigins, daemonError, isPublicRequest, sameSecret, type RouteAccess } from './security.js';

export interface AppOptions {
  /** The runtime root (absolute). */
  readonly root: string;
  /** The per-user run authority directory (default: its usual place). */
  readonly authorityDir?: string;
  /** The bearer token every /api/ route needs. */
  readonly token: string;
  readonly loginTokens: LoginTokens;
  /** The port the daemon listens on (Host and Origin must name it). */
  readonly port: () => number;
  /** The built UI (index.html and assets); not served when absent. */
  readonly uiDir?: string;
  /** pino options, or false for no logging (tests). */
  readonly logger?: boolean | Record<string, unknown>;
  /** The clock idempotency keys age by (tests). */
  readonly now?: () => number;
  /** Time limits on headers, whole requests and body pauses (default DEFAULT_TIMEOUTS). */
  readonly timeouts?: Partial<DaemonTimeouts>;
}

export interface DaemonApp {
  readonly app: FastifyInstance;
  readonly backups: BackupService;
  readonly adoptions: AdoptionService;
}

/** What a route's definition says about it (`config`): the guards and the idempotency hooks read it. */
interface RouteConfig extends RouteAccess {
  /** State-changing: takes an `Idempotency-Key` (idempotency.ts). Every such route must say so. */
  readonly idempotent?: boolean;
}
/** The one marking that lets a route be served without the bearer token (security.ts). */
const PUBLIC: RouteConfig = { public: true };
/** A state-changing route: a retry with the same Idempotency-Key gets the original outcome. */
const WRITE: RouteConfig = { idempotent: true };
const READ_METHODS = new Set(['GET', 'HEAD']);

const goalView = (g: { goal_id: string; goal_instance_id: string; title: string; lifecycle: string; docs: readonly { name: string; sha256: string; bytes: number }[] }) => ({
  goal_id: g.goal_id,
  goal_instance_id: g.goal_instance_id,
  title: g.title,
  lifecycle: g.lifecycle,
  docs: g.docs.map((d) => ({ name: d.name, sha256: d.sha256, bytes: d.bytes })),
});

/** Open event streams; the daemon ends them all when it shuts down (drain). */
const streams = new WeakMap<FastifyInstance, Set<AbortController>>();

/** Server-sent events on a hijacked reply; returns a writer and a signal that fires when the client goes or the daemon stops. */
function sse(req: FastifyRequest, reply: FastifyReply): { send(event: string, data: unknown, id?: number): void; end(): void; signal: AbortSignal } {
  const abort = new AbortController();
  const open = streams.get(req.server);
  open?.add(abort);
  abort.signal.addEventListener('abort', () => open?.delete(abort), { once: true });
  reply.hijack();
  reply.raw.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive', 'x-content-type-options': 'nosniff' });
  req.raw.on('close', () => abort.abort());
  return {
    send(event, data, id) {
      if (!reply.raw.writableEnded) reply.raw.write(`${id !== undefined ? `id: ${id}\n` : ''}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
    },
    end() {
      open?.delete(abort);
      if (!reply.raw.writableEnded) reply.raw.end();
    },
    signal: abort.signal,
  };
}

/** The Fastify instance: logging that never carries a token, body, query value or path, and Node's own time limits. */
function createFastify(o: AppOptions, timeouts: DaemonTimeouts): FastifyInstance {
  return Fastify({
    logger:
      o.logger === false
        ? false
        : {
            level: 'info',
            // Never a token, body, query value or path: method, route pattern, status and time only.
            serializers: {
              req: (r: { method: string; routeOptions?: { url?: string } }) => ({ method: r.method, route: r.routeOptions?.url ?? 'unmatched' }),
              res: (r: { statusCode: number }) => ({ status: r.statusCode }),
            },
            ...(typeof o.logger === 'object' ? o.logger : {}),
          },
    bodyLimit: 1024 * 1024,
    trustProxy: false,
    // Node's own limits, so a client that sends headers or a body too slowly is cut off (408 and
    // close) instead of holding a connection; checked often enough for the shortest of them.
    serverFactory: (handler) =>
      createServer(
        {
          headersTimeout: timeouts.headersMs,
          requestTimeout: timeouts.requestMs,
          connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.floor(Math.min(timeouts.headersMs, timeouts.requestMs) / 4))),
        },
        handler,
      ),
  });
}

/** Idempotency keys on every WRITE route; a state-changing route that is not marked is refused when it is defined. */
function installIdempotency(app: FastifyInstance, o: AppOptions, timeouts: DaemonTimeouts): IdempotencyKeys {
  const keys = new IdempotencyKeys(o.now);
  // Every state-changing API route declares itself WRITE (or PUBLIC): one that does not is a bug, refused at build time.
  app.addHook('onRoute', (r) => {
    const c = (r.config ?? {}) as RouteConfig;
    const methods = Array.isArray(r.method) ? r.method : [r.method];
    if (r.url.startsWith('/api/') && r.url !== '/api/*' && methods.some((m) => !READ_METHODS.has(m)) && c.idempotent !== true && c.public !== true) {
      throw new Error(`daemon route ${String(r.method)} ${r.url} changes state but is not marked WRITE`);
    }
  });
  app.addHook('preHandler', async (req, reply) => {
    if ((req.routeOptions.config as RouteConfig | undefined)?.idempotent !== true) return;
    await keys.preHandler(req, reply, timeouts.bodyIdleMs);
    if (reply.sent) return reply;
  });
  app.addHook('onSend', async (req, reply, payload) => {
    keys.onSend(req, reply, payload);
    return payload;
  });
  return keys;
}

/** Security headers on every response, and the Host, Origin and bearer-token guards on every request. */
function installGuards(app: FastifyInstance, o: AppOptions): void {
  app.addHook('onSend', async (_req, reply, payload) => {
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
    reply.header('x-frame-options', 'DENY');
    reply.header('content-security-policy', "default-src 'self'; connect-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'");
    return payload;
  });
  app.addHook('onRequest', async (req) => {
    const port = o.port();
    // Runs after routing: the matched route's own definition says whether it is public.
    const route = req.routeOptions.url;
    const refuse = (e: LoopxError & { statusCode: number }) => {
      // Method, route pattern, status and code only: never the target, a query value or a header.
      req.log.warn({ method: req.method, route: route ?? 'unmatched', status: e.statusCode, code: e.code }, 'request refused');
      return e;
    };
    if (!allowedHosts(port).includes(req.headers.host ?? '')) throw refuse(daemonError(403, 'daemon_forbidden_host', 'The request is not addressed to this loopback daemon.'));
    const origin = req.headers.origin;
    if (origin !== undefined && !allowedOrigins(port).includes(origin)) throw refuse(daemonError(403, 'daemon_forbidden_origin', 'Cross-origin requests are refused.'));
    if (isPublicRequest(route, req.routeOptions.config as RouteAccess | undefined, req.raw.url ?? '')) return;
    const auth = req.headers.authorization ?? '';
    const token = auth.startsWith('Bearer ') ? auth.slice(7) : '';
    if (token === '' || !sameSecret(token, o.token)) {
      throw refuse(
        daemonError(401, 'daemon_unauthorized', 'A valid bearer token is required.', 'open the address `loopx daemon` printed, or send the token from <root>/daemon/token'),
      );
    }
  });
}

/** Every hook of the app, in the order they must run: stream drain, idempotency, errors in one place, raw bodies, guards. */
function installHooks(app: FastifyInstance, o: AppOptions, timeouts: DaemonTimeouts): void {
  streams.set(app, new Set());
  app.addHook('preClose', async () => {
    for (const a of streams.get(app) ?? []) a.abort();
  });
  const keys = installIdempotency(app, o, timeouts);
  app.setErrorHandler((e, req, reply) => {
    // Refused before it began (a backup holds the root closed to writers): the same request, under
    // the same Idempotency-Key, is to run once the backup is done — not to replay this refusal.
    if (isAdmissionClosed(e)) keys.discard(req);
    handleError(e, req, reply);
  });
  app.setNotFoundHandler((req, reply) => handleError(Object.assign(new Error('not found'), { statusCode: 404 }), req, reply));
  // Raw bodies (backup parts, snapshots) reach their handlers as streams, never buffered here.
  app.addContentTypeParser('application/octet-stream', (_req, payload, done) => done(null, payload));
  installGuards(app, o);
}

/** What the route registrations share. */
interface Routes {
  readonly app: FastifyInstance;
  readonly o: AppOptions;
  readonly root: string;
  readonly timeouts: DaemonTimeouts;
  readonly backups: BackupService;
  readonly adoptions: AdoptionService;
  readonly withEngine: <T>(fn: (engine: Engine) => Promise<T> | T, readOnly?: boolean) => Promise<T>;
}

/** The login exchange, another login address, health and the owner legend. */
function registerSessionRoutes({ app, o, root, withEngine }: Routes): void {
  app.post<{ Body: { login_token?: unknown } }>('/api/session', { config: PUBLIC }, async (req) => {
    const t = req.body?.login_token;
    if (typeof t !== 'string' || !o.loginTokens.consume(t))
      throw daemonError(401, 'daemon_login_invalid', 'That login token is unknown or was already used.', 'print a new login address: loopx daemon login-url');
    return { token: o.token };
  });
  // Another one-time login address (Bearer only: what `loopx daemon login-url` calls).
  app.post('/api/session/login-urls', { config: WRITE }, async (_req, reply) =>
    reply.code(201).send({ login_url: `http://127.0.0.1:${o.port()}/#login=${o.loginTokens.issue()}` }),
  );
  app.get('/api/health', async () => withEngine((e) => ({ ok: true, version: LOOPX_VERSION, root_id: existsSync(join(root, LAYOUT.engineDb)) ? e.rootId : null }), true));

  // The owners of a root, as the OWNERS table describes them (the UI's owner legend).
  app.get('/api/owners', async () => ({ owners: ownerDescriptions() }));
}

/** Runs: list, show, follow events, suspend, resume, export and import a snapshot. */
function registerRunRoutes({ app, timeouts, withEngine }: Routes): void {
  app.get('/api/runs', async () => {
    const runs = await withEngine((e) => e.list(), true);
    return { runs: runs.map((r) => ({ ...runSummary(r), definition: r.definition, turn_limit: r.turn_limit })) };
  });
  app.get<{ Params: { id: string } }>('/api/runs/:id', async (req) => withEngine((e) => e.show(req.params.id), true));
  app.get<{ Params: { id: string }; Querystring: { after?: string } }>('/api/runs/:id/events', async (req, reply) => {
    const header = req.headers['last-event-id'];
    const raw = typeof header === 'string' ? header : (req.query.after ?? '0');
    if (!/^\d{1,15}$/.test(raw)) throw usageError('daemon_cursor_invalid', 'The event cursor must be a sequence number.');
    await withEngine((e) => e.show(req.params.id), true); // 404 before the stream opens
    const out = sse(req, reply);
    try {
      await withEngine(async (engine) => {
        for await (const ev of engine.events(req.params.id, { after: Number(raw), follow: 'while-active', signal: out.signal })) {
          out.send(ev.type, { run_id: ev.runId, sequence: ev.sequence, type: ev.type, at: ev.at, data: ev.data }, ev.sequence);
        }
      }, true);
    } catch (e) {
      // The typed refusal as the error body carries it (code, message, next action, details).
      if (!out.signal.aborted) out.send('error', (isLoopxError(e) ? e : daemonInternal()).toJSON());
    } finally {
      out.end();
    }
  });
  app.post<{ Params: { id: string } }>('/api/runs/:id/suspend', { config: WRITE }, async (req) => runSummary(await withEngine((e) => e.suspend(req.params.id))));
  app.post<{ Params: { id: string }; Body: { turns?: unknown } | undefined }>('/api/runs/:id/resume', { config: WRITE }, async (req) => {
    const turns = req.body?.turns;
    if (turns !== undefined && (typeof turns !== 'number' || !Number.isSafeInteger(turns) || turns < 1))
      throw usageError('daemon_turns_invalid', 'turns must be a positive integer.');
    return runSummary(await withEngine((e) => e.resume(req.params.id, turns !== undefined ? { turns } : {})));
  });
  app.post<{ Params: { id: string } }>('/api/runs/:id/export', { config: WRITE }, async (req, reply) => {
    const signed = await withEngine((e) => e.exportEnvelope(req.params.id));
    return reply
      .type('application/octet-stream')
      .header('x-loopx-sha256', sha256Hex(signed.bytes))
      .header('content-disposition', `attachment; filename="${signed.state.runId.replace(/[^A-Za-z0-9._-]/g, '_')}.snapshot"`)
      .send(Buffer.from(signed.bytes));
  });
  app.post('/api/runs/import', { config: WRITE }, async (req) => {
    const max = ENVELOPE_MAX_BYTES;
    const parts: Buffer[] = [];
    let size = 0;
    if (typeof req.body !== 'object' || req.body === null || !('pipe' in req.body)) throw bodyNotOctetStream('snapshot');
    for await (const c of requestBody(req.raw, req.body as Readable, timeouts.bodyIdleMs)) {
      size += c.length;
      if (size > max) throw bodyTooLarge('snapshot');
      parts.push(c);
    }
    const view = await withEngine((e) => e.importSnapshot(new Uint8Array(Buffer.concat(parts))));
    return runSummary(view);
  });
}

/** A JSON body's string field: absent (when `optional`), or a non-empty string; anything else is `daemon_field_invalid`. */
function bodyText(v: unknown, field: string, optional = false): string | undefined {
  if (v === undefined && optional) return undefined;
  if (typeof v !== 'string' || v.length === 0) throw fieldInvalid(`${field} must be a non-empty string.`);
  return v;
}

/** Goals and Todos: read, and the operator's writes through the same runtime calls as `loopx todo` and `loopx goal`. */
function registerGoalRoutes({ app, root, o }: Routes): void {
  const access = { root, ...(o.authorityDir !== undefined ? { authorityDir: o.authorityDir } : {}) };
  const opId = (req: FastifyRequest) => {
    const key = req.headers['idempotency-key'];
    return typeof key === 'string' && key.length > 0 ? `ui:${sha256Hex(key).slice(0, 32)}` : operatorOperationId('ui');
  };
  app.post<{ Params: { id: string }; Body: { title?: unknown; text?: unknown } | undefined }>('/api/goals/:id/todos', { config: WRITE }, async (req, reply) => {
    const input = { operation_id: opId(req), title: bodyText(req.body?.title, 'title')!, ...(req.body?.text !== undefined ? { text: bodyText(req.body.text, 'text')! } : {}) };
    const r = await withGoalWriter(access, (guard) => addTodo(root, req.params.id, input, guard));
    return reply.code(201).send({ result: r.result, cursor: r.cursor, todo: todoView(r.receipt.todo!) });
  });
  app.post<{ Params: { id: string; todo: string }; Body: { status?: unknown; note?: unknown } | undefined }>('/api/goals/:id/todos/:todo', { config: WRITE }, async (req) => {
    const status = bodyText(req.body?.status, 'status', true);
    const note = bodyText(req.body?.note, 'note', true);
    if (status !== undefined && !(TODO_STATUSES as readonly string[]).includes(status)) throw fieldInvalid(`status is one of ${TODO_STATUSES.join(', ')}.`);
    if (status === undefined && note === undefined) throw fieldInvalid('send status and/or note.');
    const input = {
      operation_id: opId(req),
      todo_id: req.params.todo,
      lease_owner: 'operator:ui',
      ...(status !== undefined ? { status: status as (typeof TODO_STATUSES)[number] } : {}),
      ...(note !== undefined ? { note } : {}),
    };
    const r = await withGoalWriter(access, (guard) => updateTodo(root, req.params.id, input, guard));
    return { result: r.result, cursor: r.cursor, todo: todoView(r.receipt.todo!) };
  });
  for (const verb of ['pause', 'resume', 'retire'] as const) {
    app.post<{ Params: { id: string } }>(`/api/goals/:id/${verb}`, { config: WRITE }, async (req) =>
      goalView(await withGoalWriter(access, () => transitionGoal(root, req.params.id, verb))),
    );
  }
  app.get('/api/goals', async () => ({ goals: (await withRootOwners(root, (ow) => ow.goals.list())).map(goalView) }));
  app.get<{ Params: { id: string } }>('/api/goals/:id', async (req) =>
    withRootOwners(root, async (ow) => {
      const d = await goalDetail(ow, root, req.params.id, { todos: true });
      return {
        ...goalView(d.record),
        // A lifetime a recovery minted: the lineage it continues and the lifetime it superseded (null: the lineage's first).
        lineage: d.record.lineage ?? null,
        counts: d.counts,
        committed_transactions: d.committed_transactions,
        handoff_mode: d.handoff_mode,
        todos: d.todos,
      };
    }),
  );
}

/** A backup job's progress and result as server-sent events, until it ends or the client goes. */
async function streamJob(req: FastifyRequest<{ Params: { id: string } }>, reply: FastifyReply, backups: BackupService): Promise<void> {
  const { job, events } = backups.job(req.params.id);
  const out = sse(req, reply);
  if (job.progress) out.send('progress', job.progress);
  if (job.state !== 'running') {
    out.send('result', job);
    out.end();
    return;
  }
  await new Promise<void>((resolveDone) => {
    const progress = (p: unknown) => out.send('progress', p);
    const result = (j: Job) => {
      out.send('result', j);
      finish();
    };
    const finish = () => {
      events.off('progress', progress);
      events.off('result', result);
      out.end();
      resolveDone();
    };
    events.on('progress', progress);
    events.once('result', result);
    out.signal.addEventListener('abort', finish, { once: true });
  });
}

/** Backups: the root's backups, uploads, verify jobs and their events. */
function registerBackupRoutes({ app, timeouts, backups }: Routes): void {
  app.get('/api/backups', async () => ({ backups: backups.listRootBackups() }));
  app.post<{ Params: { id: string } }>('/api/backups/:id/verify', { config: WRITE }, async (req, reply) =>
    reply.code(202).send({ job_id: backups.startRootBackupVerify(req.params.id).job_id }),
  );
  app.post('/api/backups/uploads', { config: WRITE }, async (_req, reply) => reply.code(201).send({ upload_id: backups.createUpload() }));
  app.get('/api/backups/uploads', async () => ({ uploads: backups.listUploads() }));
  app.delete<{ Params: { id: string } }>('/api/backups/uploads/:id', { config: WRITE }, async (req, reply) => {
    backups.discardUpload(req.params.id);
    return reply.code(204).send();
  });
  app.put<{ Params: { id: string; part: string } }>('/api/backups/uploads/:id/:part', { config: WRITE }, async (req) => {
    const part = req.params.part;
    if (part !== 'archive' && part !== 'manifest') throw routeNotFound();
    if (typeof req.body !== 'object' || req.body === null || !('pipe' in req.body)) throw bodyNotOctetStream(part);
    const declared = req.headers['content-length'] !== undefined ? Number(req.headers['content-length']) : undefined;
    const body = req.body as Readable;
    return backups.receive(req.params.id, part as UploadPart, body, requestBody(req.raw, body, timeouts.bodyIdleMs), Number.isFinite(declared) ? declared : undefined);
  });
  app.post<{ Params: { id: string } }>('/api/backups/uploads/:id/verify', { config: WRITE }, async (req, reply) =>
    reply.code(202).send({ job_id: backups.startVerify(req.params.id).job_id }),
  );
  app.get<{ Params: { id: string } }>('/api/backups/jobs/:id', async (req) => backups.job(req.params.id).job);
  app.get<{ Params: { id: string } }>('/api/backups/jobs/:id/events', async (req, reply) => streamJob(req, reply, backups));
}

/** Audits and their recovery workspaces. */
function registerAuditRoutes({ app, backups }: Routes): void {
  app.get('/api/audits', async () => ({ audits: backups.listAudits() }));
  app.get<{ Params: { id: string } }>('/api/audits/:id', async (req) => backups.summary(req.params.id));
  app.get<{ Params: { id: string } }>('/api/audits/:id/raw', async (req, reply) => {
    const { bytes } = backups.audit(req.params.id);
    const digest = sha256Hex(bytes);
    return reply.type('application/json').header('x-loopx-sha256', digest).header('etag', `"${digest}"`).send(bytes);
  });
  // An audit's recovery workspace read back through the owners' historical readers: read only, inert.
  app.get<{ Params: { id: string } }>('/api/audits/:id/workspace', async (req) => listWorkspace(backups.destination(req.params.id)));
  app.get<{ Params: { id: string; goal: string } }>('/api/audits/:id/workspace/goals/:goal', async (req) => {
    // Over HTTP the listing is a route, never the destination's path.
    return showWorkspaceGoal(backups.destination(req.params.id), req.params.goal, { listAction: `GET /api/audits/${req.params.id}/workspace` });
  });
}

/** Recoveries: one Goal of an audit recovered into a new root beside this one (adoptions.ts). */
function registerRecoveryRoutes({ app, adoptions, backups }: Routes): void {
  const text = (v: unknown, field: string) => bodyText(v, field, true);
  app.get('/api/recoveries', async () => ({ recoveries: await adoptions.list() }));
  app.get<{ Params: { id: string }; Querystring: { goal?: string } }>('/api/audits/:id/recoveries/proposal', async (req) => ({
    destination_name: adoptions.proposeName(text(req.query.goal, 'goal') ?? 'goal'),
  }));
  app.post<{ Params: { id: string }; Body: { goal_id?: unknown; destination_name?: unknown } | undefined }>('/api/audits/:id/recoveries', { config: WRITE }, async (req, reply) => {
    const goal = text(req.body?.goal_id, 'goal_id');
    if (goal === undefined) throw fieldInvalid('goal_id must be a non-empty string.');
    return reply.code(201).send(adoptions.plan(req.params.id, goal, text(req.body?.destination_name, 'destination_name')));
  });
  app.get<{ Params: { id: string } }>('/api/recoveries/:id', async (req) => adoptions.show(req.params.id));
  app.delete<{ Params: { id: string }; Body: { confirm?: unknown } | undefined }>('/api/audits/:id', { config: WRITE }, async (req, reply) => {
    const confirm = text(req.body?.confirm, 'confirm');
    if (confirm === undefined) throw fieldInvalid('confirm must be the audit’s recovery id.');
    backups.deleteAudit(req.params.id, confirm, await adoptions.usesAudit(req.params.id));
    return reply.code(204).send();
  });
  app.post<{ Params: { id: string }; Body: { confirm?: unknown } | undefined }>('/api/recoveries/:id/apply', { config: WRITE }, async (req, reply) => {
    const confirm = text(req.body?.confirm, 'confirm');
    if (confirm === undefined) throw fieldInvalid('confirm must be the plan digest.');
    return reply.code(202).send(await adoptions.apply(req.params.id, confirm));
  });
  app.post<{ Params: { id: string; hold: string }; Body: { outcome?: unknown } | undefined }>('/api/recoveries/:id/holds/:hold/resolve', { config: WRITE }, async (req) => {
    const outcome = text(req.body?.outcome, 'outcome');
    if (outcome !== undefined && outcome !== 'committed' && outcome !== 'absent') throw fieldInvalid('outcome is committed or absent.');
    return adoptions.resolve(req.params.id, req.params.hold, outcome);
  });
  app.post<{ Params: { id: string } }>('/api/recoveries/:id/abort', { config: WRITE }, async (req) => adoptions.abort(req.params.id));
}

/** The built UI's files, when it was built. */
async function serveUi(app: FastifyInstance, uiDir: string | undefined): Promise<void> {
  if (uiDir === undefined || !existsSync(join(uiDir, 'index.html'))) return;
  await app.register(async (ui) => {
    // The built UI's files are public (they hold no data); marked here, where its routes are made.
    ui.addHook('onRoute', (r) => {
      r.config = { ...(r.config ?? {}), ...PUBLIC };
    });
    await ui.register(fastifyStatic, { root: uiDir, prefix: '/', index: ['index.html'], wildcard: true, serveDotFiles: false });
  });
}

export async function buildApp(o: AppOptions): Promise<DaemonApp> {
  const root = resolve(o.root);
  const timeouts: DaemonTimeouts = { ...DEFAULT_TIMEOUTS, ...o.timeouts };
  const app = createFastify(o, timeouts);
  const backups = new BackupService(root);
  installHooks(app, o, timeouts);

  const access = { root, ...(o.authorityDir !== undefined ? { authorityDir: o.authorityDir } : {}) };
  const withEngine = <T>(fn: (engine: Engine) => Promise<T> | T, readOnly = false): Promise<T> => withRootEngine(access, fn, { readOnly });
  const adoptions = new AdoptionService(root, o.authorityDir, backups);
  const routes: Routes = { app, o, root, timeouts, backups, adoptions, withEngine };
  registerSessionRoutes(routes);
  registerRunRoutes(routes);
  registerGoalRoutes(routes);
  registerBackupRoutes(routes);
  registerAuditRoutes(routes);
  registerRecoveryRoutes(routes);
  app.all('/api/*', async () => {
    throw routeNotFound();
  });

  await serveUi(app, o.uiDir);
  return { app, backups, adoptions };
}

/**
 * The daemon's HTTP app — a value you can test in-process (`app.inject`, no port). It owns routing
 * and the translation of requests into calls of the same library functions the CLI uses (engine,
 * owners, recovery); it decides nothing itself. Guards run first on every request, after routing
 * (Host, Origin, bearer token — security.ts): every route needs the token unless its definition
 * carries `config: PUBLIC` (the login exchange; the built UI's files, which hold no data and whose
 * every API call needs the token). Errors become responses in one place (errors.ts).
 */
import fastifyStatic from '@fastify/static';
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify';
import { existsSync } from 'node:fs';
import { createServer, STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import { join, resolve } from 'node:path';
import { type LoopxError, LOOPX_VERSION, PACKAGE_ROOT } from '../core/index.js';
import { isAdmissionClosed, LAYOUT, ownerDescriptions, withRootEngine, type Engine } from '../runtime/index.js';
import { bodyIncomplete, DEFAULT_TIMEOUTS, readWholeBody, type DaemonTimeouts } from './body.js';
import { IdempotencyKeys } from './idempotency.js';
import { AdoptionService } from './adoptions.js';
import { BackupService } from './backups.js';
import { bodyInvalid, bodyTooLarge, errorBody, handleError, routeNotFound, statusOf } from './errors.js';
import { WorkRunDrives } from './work-runs.js';
import { registerAuditRoutes, registerBackupRoutes, registerRecoveryRoutes } from './routes/backups.js';
import { registerDrillRoutes } from './routes/drills.js';
import { registerRepositoryRoutes } from './routes/repositories.js';
import { registerGoalRoutes } from './routes/goals.js';
import { registerRunRoutes } from './routes/runs.js';
import { PUBLIC, READ_METHODS, streams, WRITE, type RouteConfig, type Routes } from './routing.js';
import {
  LoginTokens,
  allowedHosts,
  allowedOrigins,
  daemonError,
  isPublicRequest,
  sameSecret,
  type RouteAccess,
} from './security.js';

/** The largest JSON body a route takes. */
const JSON_BODY_LIMIT = 1024 * 1024;

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
  /** The directory of the Goal work agents the UI offers (default: the package's examples/agents). */
  readonly agentsDir?: string;
  /** Where "Back up now" publishes by default and whose backups are listed (default: `$XDG_DATA_HOME/loopx/backups`). */
  readonly userBackupsDir?: string;
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
  readonly drives: WorkRunDrives;
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
              req: (r: { method: string; routeOptions?: { url?: string } }) => ({
                method: r.method,
                route: r.routeOptions?.url ?? 'unmatched',
              }),
              res: (r: { statusCode: number }) => ({ status: r.statusCode }),
            },
            ...(typeof o.logger === 'object' ? o.logger : {}),
          },
    bodyLimit: JSON_BODY_LIMIT,
    trustProxy: false,
    // Node's own limits, so a client that sends headers or a body too slowly is cut off (408 and
    // close) instead of holding a connection; checked often enough for the shortest of them.
    serverFactory: (handler) => {
      const server = createServer(
        {
          headersTimeout: timeouts.headersMs,
          requestTimeout: timeouts.requestMs,
          connectionsCheckingInterval: Math.max(
            50,
            Math.min(30_000, Math.floor(Math.min(timeouts.headersMs, timeouts.requestMs) / 4)),
          ),
        },
        handler,
      );
      server.on('clientError', answerClientError);
      return server;
    },
  });
}

/**
 * What Node's HTTP parser refuses before (or while) a route reads the request — a body cut short,
 * a request past its time limit, bytes that are no HTTP — answered in the daemon's one error shape
 * where the client still listens, never Node's bare status line, and the connection closed.
 */
function answerClientError(err: NodeJS.ErrnoException, socket: Duplex): void {
  const pending = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
  if (!socket.writable || pending?.headersSent === true) {
    socket.destroy();
    return;
  }
  const e =
    err.code === 'HPE_INVALID_EOF_STATE'
      ? Object.assign(bodyIncomplete(), { statusCode: 400 })
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? daemonError(
            408,
            'daemon_request_timeout',
            'The request did not arrive within its time limit; nothing of it was kept.',
            'send the same request again',
          )
        : Object.assign(Object.assign(new Error('malformed'), { code: err.code ?? 'HPE_INVALID' }), {
            statusCode: 400,
          });
  const body = JSON.stringify(errorBody(e));
  const status = statusOf(e);
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/** Idempotency keys on every WRITE route; a state-changing route that is not marked is refused when it is defined. */
function installIdempotency(app: FastifyInstance, o: AppOptions, timeouts: DaemonTimeouts): IdempotencyKeys {
  const keys = new IdempotencyKeys(o.now);
  // Every state-changing API route declares itself WRITE (or PUBLIC): one that does not is a bug, refused at build time.
  app.addHook('onRoute', (r) => {
    const c = (r.config ?? {}) as RouteConfig;
    const methods = Array.isArray(r.method) ? r.method : [r.method];
    if (
      r.url.startsWith('/api/') &&
      r.url !== '/api/*' &&
      methods.some((m) => !READ_METHODS.has(m)) &&
      c.idempotent !== true &&
      c.public !== true
    ) {
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

const hostHeaders = (raw: readonly string[]): number =>
  raw.filter((name, i) => i % 2 === 0 && name.toLowerCase() === 'host').length;

/** Security headers on every response, and the Host, Origin and bearer-token guards on every request. */
function installGuards(app: FastifyInstance, o: AppOptions): void {
  app.addHook('onSend', async (_req, reply, payload) => {
    reply.header('x-content-type-options', 'nosniff');
    reply.header('referrer-policy', 'no-referrer');
    reply.header('x-frame-options', 'DENY');
    reply.header(
      'content-security-policy',
      "default-src 'self'; connect-src 'self'; img-src 'self' data: blob:; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
    );
    return payload;
  });
  app.addHook('onRequest', async (req) => {
    const port = o.port();
    // Runs after routing: the matched route's own definition says whether it is public.
    const route = req.routeOptions.url;
    const refuse = (e: LoopxError & { statusCode: number }) => {
      // Method, route pattern, status and code only: never the target, a query value or a header.
      req.log.warn(
        { method: req.method, route: route ?? 'unmatched', status: e.statusCode, code: e.code },
        'request refused',
      );
      return e;
    };
    // Node keeps the first of several Host headers: a request naming more than one is refused, never read as the first.
    if (hostHeaders(req.raw.rawHeaders) > 1)
      throw refuse(
        daemonError(
          400,
          'daemon_host_invalid',
          'The request names more than one Host.',
          'send the request with one Host header',
        ),
      );
    if (!allowedHosts(port).includes(req.headers.host ?? ''))
      throw refuse(daemonError(403, 'daemon_forbidden_host', 'The request is not addressed to this loopback daemon.'));
    const origin = req.headers.origin;
    if (origin !== undefined && !allowedOrigins(port).includes(origin))
      throw refuse(daemonError(403, 'daemon_forbidden_origin', 'Cross-origin requests are refused.'));
    if (isPublicRequest(route, req.routeOptions.config as RouteAccess | undefined, req.raw.url ?? '')) return;
    const auth = req.headers.authorization ?? '';
    const token = auth.startsWith('Bearer ') ? auth.slice(7) : '';
    if (token === '' || !sameSecret(token, o.token)) {
      throw refuse(
        daemonError(
          401,
          'daemon_unauthorized',
          'A valid bearer token is required.',
          'open the address `loopx daemon` printed, or send the token from <root>/daemon/token',
        ),
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
  app.setNotFoundHandler((req, reply) =>
    handleError(Object.assign(new Error('not found'), { statusCode: 404 }), req, reply),
  );
  // Raw bodies (backup parts, snapshots) reach their handlers as streams, never buffered here.
  app.addContentTypeParser('application/octet-stream', (_req, payload, done) => done(null, payload));
  // JSON bodies read like every other body: one cut short is daemon_body_incomplete, one that
  // pauses past the idle limit daemon_body_timeout (408), one over the limit 413 — never a generic 400.
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', async (req: FastifyRequest) => {
    const text = (
      await readWholeBody(req.raw, JSON_BODY_LIMIT, timeouts.bodyIdleMs, () => bodyTooLarge('request body'))
    ).toString('utf8');
    if (text.trim() === '') return undefined;
    try {
      return JSON.parse(text) as unknown;
    } catch {
      throw bodyInvalid('request body', 'JSON');
    }
  });
  installGuards(app, o);
}

/** The login exchange, another login address, health and the owner legend. */
function registerSessionRoutes({ app, o, root, withEngine }: Routes): void {
  app.post<{ Body: { login_token?: unknown } }>('/api/session', { config: PUBLIC }, async (req) => {
    const t = req.body?.login_token;
    if (typeof t !== 'string' || !o.loginTokens.consume(t))
      throw daemonError(
        401,
        'daemon_login_invalid',
        'That login token is unknown or was already used.',
        'print a new login address: loopx daemon login-url',
      );
    return { token: o.token };
  });
  // Another one-time login address (Bearer only: what `loopx daemon login-url` calls).
  app.post('/api/session/login-urls', { config: WRITE }, async (_req, reply) =>
    reply.code(201).send({ login_url: `http://127.0.0.1:${o.port()}/#login=${o.loginTokens.issue()}` }),
  );
  app.get('/api/health', async () =>
    withEngine(
      async (e) => ({
        ok: true,
        version: LOOPX_VERSION,
        root_id: existsSync(join(root, LAYOUT.engineDb)) ? await e.rootId() : null,
      }),
      true,
    ),
  );

  // The owners of a root, as the OWNERS table describes them (the UI's owner legend).
  app.get('/api/owners', async () => ({ owners: ownerDescriptions() }));
}

/** The built UI's files, when it was built. */
async function serveUi(app: FastifyInstance, uiDir: string | undefined): Promise<void> {
  if (uiDir === undefined || !existsSync(join(uiDir, 'index.html'))) return;
  await app.register(async (ui) => {
    // The built UI's files are public (they hold no data); marked here, where its routes are made.
    ui.addHook('onRoute', (r) => {
      r.config = { ...(r.config ?? {}), ...PUBLIC };
    });
    await ui.register(fastifyStatic, {
      root: uiDir,
      prefix: '/',
      index: ['index.html'],
      wildcard: true,
      serveDotFiles: false,
    });
  });
}

export async function buildApp(o: AppOptions): Promise<DaemonApp> {
  const root = resolve(o.root);
  const timeouts: DaemonTimeouts = { ...DEFAULT_TIMEOUTS, ...o.timeouts };
  const app = createFastify(o, timeouts);
  const backups = new BackupService(root, o.userBackupsDir);
  installHooks(app, o, timeouts);

  const access = { root, ...(o.authorityDir !== undefined ? { authorityDir: o.authorityDir } : {}) };
  const withEngine = <T>(fn: (engine: Engine) => Promise<T> | T, readOnly = false, at = root): Promise<T> =>
    withRootEngine({ ...access, root: at }, fn, { readOnly });
  const adoptions = new AdoptionService(root, o.authorityDir, backups);
  const drives = new WorkRunDrives(o.agentsDir ?? join(PACKAGE_ROOT ?? '.', 'examples', 'agents'), (msg, fields) =>
    app.log.warn(fields, msg),
  );
  const routes: Routes = { app, o, root, timeouts, backups, adoptions, drives, withEngine };
  registerSessionRoutes(routes);
  registerRunRoutes(routes);
  registerGoalRoutes(routes);
  registerBackupRoutes(routes);
  registerAuditRoutes(routes);
  registerRecoveryRoutes(routes);
  registerRepositoryRoutes(routes);
  registerDrillRoutes(routes);
  app.all('/api/*', async () => {
    throw routeNotFound();
  });

  await serveUi(app, o.uiDir);
  return { app, backups, adoptions, drives };
}

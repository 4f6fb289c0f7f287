/**
 * Who may call what: the bearer token is decided where the route was matched, with default deny.
 * No spelling of an API path reaches a handler without the token — in-process (`inject`) and over
 * a real socket (raw requests: `inject` and `fetch` normalise `//api`, `/./api` and absolute-form
 * targets) — while the login exchange and the built UI's files stay public, and every refused
 * request is logged by method, route and status without the token or a query value.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildApp, LoginTokens, type DaemonApp } from '../../src/daemon/index.js';
import { looksLikeApiPath } from '../../src/daemon/security.js';
import { loopxAsync, tempRoot } from '../support/cli.js';
import { rawRequest } from './raw-http.js';

const TOKEN = 'auth-test-token-0123456789';
const UI_SECRET = 'ui-file-named-like-an-api-route';

/** Counts the login addresses issued, so a refused `login-urls` is seen not to have run. */
class CountingLoginTokens extends LoginTokens {
  issued = 0;
  override issue(): string {
    this.issued++;
    return super.issue();
  }
}

let root: string;
let d: DaemonApp;
let login: CountingLoginTokens;
let port = 0;
let logged = '';

beforeAll(async () => {
  root = tempRoot('loopx-daemon-auth-');
  expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
  // A built UI whose files include ones named like API routes: serving them would show the wildcard ran.
  const uiDir = join(dirname(root), 'ui');
  mkdirSync(join(uiDir, 'api', 'session'), { recursive: true });
  mkdirSync(join(uiDir, 'assets'), { recursive: true });
  writeFileSync(join(uiDir, 'index.html'), '<!doctype html><title>loopx</title>');
  writeFileSync(join(uiDir, 'assets', 'app.js'), 'console.log(1)');
  writeFileSync(join(uiDir, 'api', 'runs'), UI_SECRET);
  writeFileSync(join(uiDir, 'api', 'session', 'login-urls'), UI_SECRET);
  const stream = new Writable({
    write(chunk: Buffer, _e, cb) {
      logged += chunk.toString('utf8');
      cb();
    },
  });
  login = new CountingLoginTokens();
  d = await buildApp({
    root,
    token: TOKEN,
    loginTokens: login,
    port: () => port,
    uiDir,
    logger: { level: 'info', stream },
  });
  await d.app.listen({ host: '127.0.0.1', port: 0 });
  port = (d.app.server.address() as { port: number }).port;
}, 60_000);

afterAll(async () => {
  await d?.backups.close();
  await d?.app.close();
});

/** Spellings of `/api/runs` (GET) and `/api/session/login-urls` (POST) a router, a file server or a proxy might read as the API. */
const variants = (path: string): string[] => {
  const rest = path.slice('/api'.length);
  return [
    `/%61pi${rest}`,
    `/%2561pi${rest}`,
    `//api${rest}`,
    `/./api${rest}`,
    `/API${rest}`,
    `/api;x${rest}`,
    `/%2e/api${rest}`,
    `/api${rest.replaceAll('/', '%2F')}`,
    `/api${rest}%00`,
    `/%2F/api${rest}`,
    `/..%2Fapi${rest}`,
  ];
};
const TARGETS: [method: 'GET' | 'POST', target: string][] = [
  ...variants('/api/runs').map((t) => ['GET', t] as ['GET', string]),
  ...variants('/api/session/login-urls').map((t) => ['POST', t] as ['POST', string]),
];

describe('the bearer token is decided on the matched route, default deny', () => {
  it('every encoded, doubled, dotted, cased or parameterised spelling of an API route is 401 without the token (in-process)', async () => {
    const before = login.issued;
    for (const [method, url] of TARGETS) {
      const r = await d.app.inject({ method, url, headers: { host: `127.0.0.1:${port}` } });
      expect(r.statusCode, `${method} ${url}`).toBe(401);
      expect(r.json().error.code, `${method} ${url}`).toBe('daemon_unauthorized');
      expect(r.body, `${method} ${url}`).not.toContain(UI_SECRET);
    }
    expect(login.issued, 'no refused login-urls request issued an address').toBe(before);
  });

  it('the same spellings and an absolute-form target are 401 over a real socket, and never reach a handler', async () => {
    const before = login.issued;
    const targets: [string, string][] = [
      ...TARGETS,
      ['GET', `http://127.0.0.1:${port}/api/runs`],
      ['POST', `http://127.0.0.1:${port}/api/session/login-urls`],
      ['GET', `http://127.0.0.1:${port}/%61pi/runs`],
    ];
    for (const [method, target] of targets) {
      const r = await rawRequest(
        port,
        `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
      );
      expect(r.status, `${method} ${target}: ${r.head.split('\r\n')[0]}`).toBe(401);
      expect(JSON.parse(r.body).error.code, `${method} ${target}`).toBe('daemon_unauthorized');
      expect(r.body).not.toContain(UI_SECRET);
      expect(r.body).not.toContain('"runs"');
      expect(r.body).not.toContain('login_url');
    }
    expect(login.issued).toBe(before);
  });

  it('unknown paths are not served without the token either (the not-found handler and the API catch-all)', async () => {
    for (const url of ['/api/nothing', '/api/', '/api', '/nothing-here']) {
      const r = await d.app.inject({ method: 'GET', url, headers: { host: `127.0.0.1:${port}` } });
      expect([401, 404], url).toContain(r.statusCode);
      expect(r.body, url).not.toContain(UI_SECRET);
    }
    expect(
      (await d.app.inject({ method: 'GET', url: '/api/nothing', headers: { host: `127.0.0.1:${port}` } })).statusCode,
    ).toBe(401);
    expect(
      (
        await d.app.inject({
          method: 'DELETE',
          url: '/api/backups/uploads/up_x',
          headers: { host: `127.0.0.1:${port}` },
        })
      ).statusCode,
    ).toBe(401);
    // HEAD routes Fastify derives from GET ones are guarded the same way.
    for (const url of ['/api/runs', '/%61pi/runs', '/API/runs', '//api/runs']) {
      expect(
        (await d.app.inject({ method: 'HEAD', url, headers: { host: `127.0.0.1:${port}` } })).statusCode,
        `HEAD ${url}`,
      ).toBe(401);
    }
  });

  it('the token still opens the API, and only the login exchange and the UI files are public', async () => {
    const auth = { host: `127.0.0.1:${port}`, authorization: `Bearer ${TOKEN}` };
    expect((await d.app.inject({ method: 'GET', url: '/api/runs', headers: auth })).statusCode).toBe(200);
    const issued = await rawRequest(
      port,
      `POST /api/session/login-urls HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n`,
    );
    expect(issued.status).toBe(201);
    const t = (JSON.parse(issued.body) as { login_url: string }).login_url.split('#login=')[1];
    const session = await d.app.inject({
      method: 'POST',
      url: '/api/session',
      headers: { host: `127.0.0.1:${port}` },
      payload: { login_token: t },
    });
    expect(session.statusCode).toBe(200);
    const page = await d.app.inject({ method: 'GET', url: '/', headers: { host: `127.0.0.1:${port}` } });
    expect(page.statusCode).toBe(200);
    expect(page.body).toContain('<title>loopx</title>');
    expect(
      (await d.app.inject({ method: 'GET', url: '/assets/app.js', headers: { host: `127.0.0.1:${port}` } })).statusCode,
    ).toBe(200);
  });

  it('a refused request is logged with method, route pattern and status, never the token or a query value', async () => {
    logged = '';
    await d.app.inject({
      method: 'GET',
      url: '/%61pi/runs?secret-query=value-xyz',
      headers: { host: `127.0.0.1:${port}`, authorization: 'Bearer wrong-token-abc' },
    });
    await d.app.inject({
      method: 'GET',
      url: '/api/runs',
      headers: { host: 'evil.example', authorization: `Bearer ${TOKEN}` },
    });
    const refused = logged
      .split('\n')
      .filter((l) => l.includes('"request refused"'))
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(refused).toContainEqual(
      expect.objectContaining({ method: 'GET', route: '/api/runs', status: 401, code: 'daemon_unauthorized' }),
    );
    expect(refused).toContainEqual(
      expect.objectContaining({ method: 'GET', route: '/api/runs', status: 403, code: 'daemon_forbidden_host' }),
    );
    for (const secret of [TOKEN, 'wrong-token-abc', 'secret-query', 'value-xyz', '%61pi', root])
      expect(logged, secret).not.toContain(secret);
  });

  it('looksLikeApiPath sees through every decoding and normalisation, and lets plain UI paths be', () => {
    for (const [, t] of TARGETS) expect(looksLikeApiPath(t), t).toBe(true);
    for (const t of ['http://127.0.0.1:1/x', '/%zz', '/%5Capi/runs', '/%25%32%35%36%31pi/runs'])
      expect(looksLikeApiPath(t), t).toBe(true);
    for (const t of ['/', '/index.html', '/assets/app-1234.js', '/login?x=/api/runs'])
      expect(looksLikeApiPath(t), t).toBe(false);
  });
});

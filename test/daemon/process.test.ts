/**
 * The daemon as a real process: it binds 127.0.0.1 only (another --host is refused), one daemon
 * per root (a second is refused with exit 4), the UI address carries a one-time login token, the
 * token file is owner-only and removed on SIGTERM, which drains and exits 0; its logs carry no
 * token, query value or absolute path.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { existsSync, statSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { buildApp, LoginTokens } from '../../src/daemon/index.js';
import { CLI, REPO, STATE_HOME, loopxAsync, loopxChild, tempRoot, rel } from '../support/cli.js';

const running: ChildProcessWithoutNullStreams[] = [];
afterEach(() => {
  for (const c of running.splice(0)) c.kill('SIGKILL');
});

/** Start `loopx daemon --json` and wait for its one JSON line. */
function daemon(
  root: string,
  ...args: string[]
): Promise<{ child: ChildProcessWithoutNullStreams; doc: { url: string; login_url: string; port: number } }> {
  const child = spawn(process.execPath, [...CLI, 'daemon', '--root', root, '--json', ...args], {
    cwd: REPO,
    env: { ...process.env, XDG_STATE_HOME: STATE_HOME, LOOPX_DEV_RECEIVER_PORT: '0' },
  });
  running.push(child);
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (b: Buffer) => {
      out += b.toString('utf8');
      try {
        resolve({ child, doc: JSON.parse(out) });
      } catch {
        // not complete yet
      }
    });
    child.on('exit', (code) => reject(new Error(`daemon exited ${code}`)));
  });
}

const exited = (c: ChildProcessWithoutNullStreams) =>
  new Promise<number | null>((r) => c.on('exit', (code) => r(code)));

describe('loopx daemon (a real process)', () => {
  it('listens on 127.0.0.1 with a token file (0600) and a one-time login address; a second daemon on the root is refused; SIGTERM drains', async () => {
    const root = tempRoot('loopx-daemon-proc-');
    expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
    const { child, doc } = await daemon(root);
    expect(doc.url).toBe(`http://127.0.0.1:${doc.port}/`);
    expect(doc.login_url).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${doc.port}/#login=[A-Za-z0-9_-]{43}$`));
    const tokenFile = join(root, 'daemon', 'token');
    expect(statSync(tokenFile).mode & 0o777).toBe(0o600);
    const token = readFileSync(tokenFile, 'utf8').trim();

    const ok = await fetch(`${doc.url}api/health`, { headers: { authorization: `Bearer ${token}` } });
    expect(ok.status).toBe(200);
    expect((await fetch(`${doc.url}api/health`)).status).toBe(401);
    const session = await fetch(`${doc.url}api/session`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ login_token: doc.login_url.split('#login=')[1] }),
    });
    expect(session.status).toBe(200);

    // A new one-time login address from the CLI, for another tab: it signs in once.
    const more = await loopxAsync(['daemon', 'login-url', '--root', root, '--json']);
    expect(more.status, more.stderr).toBe(0);
    const { login_url } = more.json() as { login_url: string };
    expect(login_url).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${doc.port}/#login=[A-Za-z0-9_-]{43}$`));
    expect(login_url).not.toBe(doc.login_url);
    const exchange = () =>
      fetch(`${doc.url}api/session`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ login_token: login_url.split('#login=')[1] }),
      });
    expect((await exchange()).status).toBe(200);
    expect((await exchange()).status).toBe(401);
    expect(statSync(join(root, 'daemon', 'endpoint.json')).mode & 0o777).toBe(0o600);

    const second = await loopxChild(['daemon', '--root', root, '--json']);
    expect(second.status).toBe(4);
    expect(second.json().error.code).toBe('daemon_already_running');

    const code = exited(child);
    child.kill('SIGTERM');
    expect(await code).toBe(0);
    expect(existsSync(tokenFile)).toBe(false);
    expect(existsSync(join(root, 'daemon', 'endpoint.json'))).toBe(false);
    const none = await loopxAsync(['daemon', 'login-url', '--root', root, '--json']);
    expect(none.status).toBe(3);
    expect(none.json().error).toMatchObject({
      code: 'daemon_not_running',
      next_action: `start it: loopx daemon --root ${rel(root)}`,
    });
    // Files a daemon killed hard would leave: with the lock free, nothing is sent to that port.
    const bait = createServer((_req, res) => {
      baited = true;
      res.end();
    });
    let baited = false;
    await new Promise<void>((r) => bait.listen(0, '127.0.0.1', r));
    writeFileSync(
      join(root, 'daemon', 'endpoint.json'),
      JSON.stringify({ port: (bait.address() as AddressInfo).port }),
      { mode: 0o600 },
    );
    writeFileSync(tokenFile, 'stale-token\n', { mode: 0o600 });
    const stale = await loopxAsync(['daemon', 'login-url', '--root', root, '--json']);
    await new Promise<void>((r) => bait.close(() => r()));
    expect(stale.status).toBe(3);
    expect(stale.json().error.code).toBe('daemon_not_running');
    expect(baited).toBe(false);
    // The lock went with the process: a new daemon may start.
    const again = await daemon(root);
    // The new daemon replaced the stale endpoint and token before anyone could pair them.
    expect(JSON.parse(readFileSync(join(root, 'daemon', 'endpoint.json'), 'utf8'))).toEqual({ port: again.doc.port });
    expect(readFileSync(tokenFile, 'utf8')).not.toContain('stale-token');
    again.child.kill('SIGTERM');
    expect(await exited(again.child)).toBe(0);
  }, 60_000);

  it('a SIGTERM sent the instant the address is printed still drains: exit 0, token file removed (repeated, it was a race)', async () => {
    const root = tempRoot('loopx-daemon-race-');
    expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
    for (let i = 0; i < 8; i++) {
      const child = spawn(process.execPath, [...CLI, 'daemon', '--root', root, '--json'], {
        cwd: REPO,
        env: { ...process.env, XDG_STATE_HOME: STATE_HOME, LOOPX_DEV_RECEIVER_PORT: '0' },
      });
      running.push(child);
      const ended = new Promise<string>((r) => child.on('exit', (code, signal) => r(`${code}/${signal}`)));
      child.stdout.once('data', () => child.kill('SIGTERM'));
      expect(await ended, `attempt ${i}`).toBe('0/null');
      expect(existsSync(join(root, 'daemon', 'token'))).toBe(false);
    }
  }, 60_000);

  it('refuses any listen address but 127.0.0.1 (usage, exit 2)', async () => {
    const root = tempRoot('loopx-daemon-host-');
    expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
    for (const host of ['0.0.0.0', '::', '192.168.1.10']) {
      const r = await loopxAsync(['daemon', '--root', root, '--host', host, '--json']);
      expect(r.status, host).toBe(2);
      expect(r.json().error.code).toBe('daemon_host_refused');
    }
  });

  it('a busy port is daemon_port_in_use naming the port (exit 4), leaving no token or lock behind; an out-of-range or non-numeric port is a usage error (exit 2)', async () => {
    const root = tempRoot('loopx-daemon-port-');
    expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    const port = (busy.address() as AddressInfo).port;
    try {
      const r = await loopxAsync(['daemon', '--root', root, '--port', String(port), '--json']);
      expect(r.status, r.stderr).toBe(4);
      expect(r.json().error).toMatchObject({
        code: 'daemon_port_in_use',
        details: { port },
        next_action: expect.any(String),
      });
      expect(r.json().error.message).toContain(String(port));
      expect(existsSync(join(root, 'daemon', 'token'))).toBe(false);
      const human = await loopxAsync(['daemon', '--root', root, '--port', String(port)]);
      expect(human.status).toBe(4);
      expect(human.stderr).toContain(`Port ${port} `);
      expect(human.stderr).not.toContain('EADDRINUSE');
    } finally {
      await new Promise<void>((r) => busy.close(() => r()));
    }
    for (const bad of ['65536', '70000', '99999', '-1', 'abc', '80.5', '']) {
      const r = await loopxAsync(['daemon', '--root', root, '--port', bad, '--json']);
      expect(r.status, bad).toBe(2);
      expect(r.json().error.code, bad).toMatch(/^(usage_error|daemon_port_invalid)$/);
    }
    // The lock went with the refused daemons: one starts on the root now.
    const { child } = await daemon(root);
    const code = exited(child);
    child.kill('SIGTERM');
    expect(await code).toBe(0);
  }, 60_000);

  it('startDaemon refuses an out-of-range port before it takes the root (daemon_port_invalid, usage)', async () => {
    const { startDaemon } = await import('../../src/daemon/index.js');
    const root = tempRoot('loopx-daemon-port-lib-');
    expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
    for (const port of [65536, -1, 1.5, Number.NaN]) {
      await expect(startDaemon({ root, port, logger: false }), String(port)).rejects.toMatchObject({
        code: 'daemon_port_invalid',
        kind: 'usage',
      });
    }
    expect(existsSync(join(root, 'daemon', 'token'))).toBe(false);
  });

  it('logs method, route and status — never the token, a query value or the root path', async () => {
    const root = tempRoot('loopx-daemon-log-');
    expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
    let logged = '';
    const stream = new Writable({
      write(chunk: Buffer, _e, cb) {
        logged += chunk.toString('utf8');
        cb();
      },
    });
    const d = await buildApp({
      root,
      token: 'secret-token-xyz',
      loginTokens: new LoginTokens(),
      port: () => 80,
      logger: { level: 'info', stream },
    });
    try {
      await d.app.inject({
        method: 'GET',
        url: '/api/runs?after=private-value',
        headers: { host: '127.0.0.1:80', authorization: 'Bearer secret-token-xyz' },
      });
      await d.app.inject({
        method: 'GET',
        url: '/api/runs',
        headers: { host: '127.0.0.1:80', authorization: 'Bearer wrong-token-abc' },
      });
      await d.app.inject({
        method: 'POST',
        url: '/api/session',
        headers: { host: '127.0.0.1:80' },
        payload: { login_token: 'login-secret-123' },
      });
    } finally {
      await d.app.close();
    }
    expect(logged).toContain('"route":"/api/runs"');
    expect(logged).toContain('"status":');
    for (const secret of ['secret-token-xyz', 'wrong-token-abc', 'login-secret-123', 'private-value', root])
      expect(logged, secret).not.toContain(secret);
  });
});

describe('draining', () => {
  it('stopping the daemon ends open event streams and interrupts a running verify job, removing its destination', async () => {
    const { startDaemon } = await import('../../src/daemon/index.js');
    const root = tempRoot('loopx-daemon-drain-');
    expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
    const out = join(root, '..', 'out');
    expect(
      (await loopxAsync(['backup-state', '--execute', '--output-dir', out, '--backup-id', 'b1', '--root', root]))
        .status,
    ).toBe(0);
    process.env.LOOPX_TEST_WORKER_HANG = '1';
    const d = await startDaemon({
      root,
      port: 0,
      logger: false,
      authorityDir: join(STATE_HOME, 'loopx', 'run-authority'),
    });
    try {
      const api = (path: string, init: RequestInit = {}) =>
        fetch(`${d.url}api/${path}`, {
          ...init,
          headers: { authorization: `Bearer ${d.token}`, ...(init.headers ?? {}) },
        });
      const { upload_id } = (await (await api('backups/uploads', { method: 'POST' })).json()) as { upload_id: string };
      for (const [part, file] of [
        ['archive', 'b1.tar.gz'],
        ['manifest', 'b1.manifest.json'],
      ] as const) {
        expect(
          (
            await api(`backups/uploads/${upload_id}/${part}`, {
              method: 'PUT',
              headers: { 'content-type': 'application/octet-stream' },
              body: readFileSync(join(out, file)),
            })
          ).status,
        ).toBe(200);
      }
      const { job_id } = (await (await api(`backups/uploads/${upload_id}/verify`, { method: 'POST' })).json()) as {
        job_id: string;
      };
      const stream = await api(`backups/jobs/${job_id}/events`);
      const body = stream.text();
      // The worker hangs (test hook) once the archive is verified: wait for the owners step.
      for (let i = 0; i < 100; i++) {
        const job = (await (await api(`backups/jobs/${job_id}`)).json()) as { progress: { step: string } | null };
        if (job.progress?.step === 'owners') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const started = Date.now();
      await d.close();
      expect(Date.now() - started).toBeLessThan(15_000);
      const text = await body;
      expect(text).toContain('event: result');
      expect(text).toContain('verify_interrupted');
      expect(existsSync(join(root, 'daemon', 'recoveries', job_id))).toBe(false);
      expect(existsSync(join(root, 'daemon', 'token'))).toBe(false);
    } finally {
      delete process.env.LOOPX_TEST_WORKER_HANG;
      await d.close();
    }
  }, 60_000);
});

describe('npm start', () => {
  it('daemon --seed-sample fills an empty root with a sample Goal whose Todos a scripted agent worked, once', async () => {
    const root = tempRoot('loopx-daemon-seed-');
    const { child, doc } = await daemon(root, '--seed-sample');
    try {
      const token = readFileSync(join(root, 'daemon', 'token'), 'utf8').trim();
      const get = async (path: string) =>
        (await fetch(`${doc.url}api/${path}`, { headers: { authorization: `Bearer ${token}` } })).json();
      const goals = (await get('goals')) as { goals: { goal_id: string }[] };
      expect(goals.goals.map((g) => g.goal_id)).toEqual(['sample']);
      const sample = (await get('goals/sample')) as { todos: unknown[]; counts: Record<string, number> };
      expect(sample.todos).toHaveLength(3);
      expect(sample.counts.done).toBeGreaterThan(0);
      const runs = (await get('runs')) as { runs: { status: string }[] };
      expect(runs.runs).toHaveLength(1);
    } finally {
      const code = exited(child);
      child.kill('SIGTERM');
      await code;
    }
    // A second start seeds nothing more.
    const again = await daemon(root, '--seed-sample');
    const token = readFileSync(join(root, 'daemon', 'token'), 'utf8').trim();
    const runs = (await (
      await fetch(`${again.doc.url}api/runs`, { headers: { authorization: `Bearer ${token}` } })
    ).json()) as { runs: unknown[] };
    expect(runs.runs).toHaveLength(1);
    again.child.kill('SIGTERM');
    await exited(again.child);
  }, 60_000);
});

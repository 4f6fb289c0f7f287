/**
 * The dev receiver `loopx daemon` opens: at a fixed loopback port (configurable), its journal in
 * `$XDG_STATE_HOME/loopx/dev-receiver/` (0700/0600), outliving the root and every daemon restart.
 * The sample delivers to it; a daemon started later on another, empty root (a replacement machine)
 * reopens it with what it held; a second daemon shares the one already answering; a port held by
 * anything else is refused with a typed error; without a journal and without the sample, nothing opens.
 */
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdirSync, mkdtempSync, statSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { REPO, loopxAsync } from '../support/cli.js';
import { freePort, spawnDaemon, stopDaemonProcess } from '../support/daemon-process.js';

const running: ChildProcessWithoutNullStreams[] = [];
afterEach(() => {
  for (const c of running.splice(0)) c.kill('SIGKILL');
});

const daemon = (env: NodeJS.ProcessEnv, root: string, ...args: string[]) =>
  spawnDaemon(['--root', root, ...args], { env: { ...process.env, ...env }, cwd: REPO }).then(
    (d) => (running.push(d.child), d),
  );
const stopped = stopDaemonProcess;

const deliveries = async (url: string) =>
  ((await (await fetch(url)).json()) as { deliveries: { operation_id: string }[] }).deliveries;

describe('the dev receiver loopx daemon opens', () => {
  it('takes the sample delivery at its port, keeps it in the state home, and is reopened with it by a daemon on a new, empty root', async () => {
    const home = mkdtempSync(join(tmpdir(), 'loopx-devrecv-'));
    const port = await freePort();
    const env = { XDG_STATE_HOME: join(home, 'state'), LOOPX_DEV_RECEIVER_PORT: String(port) };
    const first = await daemon(env, join(home, 'root'), '--seed-sample');
    expect(first.doc.dev_receiver_url).toBe(`http://127.0.0.1:${port}/deliveries`);
    const held = await deliveries(first.doc.dev_receiver_url!);
    expect(held.length).toBeGreaterThanOrEqual(1);
    const dir = join(home, 'state', 'loopx', 'dev-receiver');
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, 'journal.jsonl')).mode & 0o777).toBe(0o600);

    // A second daemon on this machine while the first runs shares the receiver already answering.
    mkdirSync(join(home, 'other'), { mode: 0o700 });
    const second = await daemon(env, join(home, 'other'));
    expect(second.doc.dev_receiver_url).toBe(first.doc.dev_receiver_url);
    expect(await stopped(second.child)).toBe(0);
    expect(await deliveries(first.doc.dev_receiver_url!)).toEqual(held); // the first still serves it
    expect(await stopped(first.child)).toBe(0);
    await expect(fetch(first.doc.dev_receiver_url!)).rejects.toThrow(); // closed with its daemon

    // The replacement machine: the root is gone, a daemon without --seed-sample starts on a new, empty one.
    mkdirSync(join(home, 'replacement'), { mode: 0o700 });
    const again = await daemon(env, join(home, 'replacement'));
    expect(again.doc.dev_receiver_url).toBe(`http://127.0.0.1:${port}/deliveries`);
    expect(await deliveries(again.doc.dev_receiver_url!)).toEqual(held);
    // Its failure controls are off: it stands in for an external system, not a test fixture.
    expect(
      (await fetch(`http://127.0.0.1:${port}/control`, { method: 'POST', body: '{"mode":"drop_before_store"}' }))
        .status,
    ).toBe(404);
    expect(await stopped(again.child)).toBe(0);
  }, 120_000);

  it('opens nothing on a machine whose dev receiver never stored anything, unless the sample is seeded', async () => {
    const home = mkdtempSync(join(tmpdir(), 'loopx-devrecv-'));
    mkdirSync(join(home, 'root'), { mode: 0o700 });
    const { child, doc } = await daemon(
      { XDG_STATE_HOME: join(home, 'state'), LOOPX_DEV_RECEIVER_PORT: String(await freePort()) },
      join(home, 'root'),
    );
    expect(doc.dev_receiver_url).toBeUndefined();
    expect(await stopped(child)).toBe(0);
  }, 60_000);

  it('refuses a port held by something that is not a loopx dev receiver, and --seed-sample with --no-dev-receiver', async () => {
    const home = mkdtempSync(join(tmpdir(), 'loopx-devrecv-'));
    const other: Server = createServer((_req, res) => res.end('not a receiver'));
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    try {
      const port = (other.address() as AddressInfo).port;
      const env = { XDG_STATE_HOME: join(home, 'state'), LOOPX_DEV_RECEIVER_PORT: String(port) };
      const taken = await loopxAsync(['daemon', '--seed-sample', '--root', join(home, 'root'), '--json'], env);
      expect(taken.status).toBe(2);
      const refusal = JSON.parse(taken.stdout).error as { code: string; next_action: string };
      expect(refusal.code).toBe('dev_receiver_port_taken');
      expect(refusal.next_action).toMatch(/^choose a free port: loopx daemon --dev-receiver-port PORT --root \S+$/);
      const off = await loopxAsync(
        ['daemon', '--seed-sample', '--no-dev-receiver', '--root', join(home, 'root'), '--json'],
        env,
      );
      expect(off.status).toBe(2);
      expect(JSON.parse(off.stdout).error).toMatchObject({ code: 'daemon_sample_needs_receiver' });
      const invalid = await loopxAsync(['daemon', '--seed-sample', '--root', join(home, 'root'), '--json'], {
        ...env,
        LOOPX_DEV_RECEIVER_PORT: 'x',
      });
      expect(JSON.parse(invalid.stdout).error).toMatchObject({ code: 'dev_receiver_port_invalid' });
    } finally {
      await new Promise((r) => other.close(r));
    }
  }, 60_000);
});

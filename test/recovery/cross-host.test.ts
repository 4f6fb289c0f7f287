/**
 * Recovery on another host, from an encrypted S3 repository. Host A (this network namespace) works
 * a Goal, backs it up encrypted into S3 (s3rver behind the conditional-write proxy, listening on a
 * private link the test made), and is then lost. Host B — a network namespace of its own, its own
 * HOME and run authority, reaching the repository and the receiver only over that link — verifies
 * the backup from the repository with the key, plans (pinning it) and applies the Goal's recovery,
 * and continues its open Todo: B's authority minted the new lifetime, and the receiver's fence
 * carries it. When A comes back, its work run first asks the receiver for the lineage's newest
 * fence, records its own supersession and is refused before it sends anything. Real processes throughout (as root: real
 * namespaces; otherwise processes on loopback, as the multi-daemon tests do).
 */
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { CLI, REPO, loopxAsync, type CliResult } from '../support/cli.js';
import { makeHosts, type Host, type Hosts } from '../support/hosts.js';
import { startS3WithProxy, type S3ServerWithProxy } from '../support/s3.js';
import { agentFile, type Doc } from './support/adopt.js';
import { CONTINUE } from './support/adopt.js';
import { as, newUser, workedSource, type User } from './support/adopt-users.js';

const PASSPHRASE = 'cross-host test passphrase';
let hosts: Hosts;
let sink: WebhookSink;
let s3: S3ServerWithProxy;
let a: User;
let repo: string;
const scratch = mkdtempSync(join(tmpdir(), 'loopx-cross-host-'));
const b = {
  home: join(scratch, 'b-home'),
  authority: join(scratch, 'b-home', 'authority'),
  workspace: join(scratch, 'b-home', 'workspace'),
  root: join(scratch, 'b-home', 'recovered'),
};

/** `loopx …args --json` on host B: its own HOME, XDG homes and run authority; the key only in its environment. */
function onB(host: Host, args: readonly string[]): Promise<CliResult> {
  const [cmd, ...prefix] = host.prefix.length > 0 ? [...host.prefix, process.execPath] : [process.execPath];
  const env = {
    PATH: process.env.PATH ?? '',
    HOME: b.home,
    XDG_STATE_HOME: join(b.home, 'state'),
    XDG_DATA_HOME: join(b.home, 'data'),
    LOOPX_DEV_RECEIVER_PORT: '0',
    B_REPO_CREDENTIALS: `${s3.credentials.accessKeyId}:${s3.credentials.secretAccessKey}`,
    B_BACKUP_KEY: PASSPHRASE,
  };
  return new Promise((res, rej) => {
    const child = spawn(cmd!, [...prefix, ...CLI, ...args, '--authority-dir', b.authority, '--json'], {
      cwd: REPO,
      env,
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', rej);
    child.on('close', (status, signal) =>
      res({ status, signal, stdout, stderr, json: () => JSON.parse(stdout) as Doc }),
    );
  });
}
const okOnB = async (host: Host, args: readonly string[]): Promise<Doc> => {
  const r = await onB(host, args);
  expect(r.status, `${args.join(' ')}\n${r.stderr}${r.stdout}`).toBe(0);
  return r.json();
};

beforeAll(async () => {
  hosts = makeHosts(1);
  // Under CI (as root) host B is a real network namespace: it reaches the repository and the receiver only over the link.
  if (process.env.CI === 'true') expect(hosts.isolated).toBe(true);
  const link = hosts.isolated ? { linkAddress: hosts.servicesAddress } : {};
  sink = await startWebhookSink({ port: 0, ...link });
  s3 = await startS3WithProxy(hosts.isolated ? { listenAddress: hosts.servicesAddress } : {});
  repo = `s3://${s3.bucket}/offsite?endpoint=${s3.endpoint}&path_style=true&credentials=env:A_REPO_CREDENTIALS`;
  mkdirSync(b.home, { recursive: true, mode: 0o700 });
  a = newUser('loopx-host-a-');
  await workedSource(a, sink.deliveriesUrl);
  const env = {
    A_REPO_CREDENTIALS: `${s3.credentials.accessKeyId}:${s3.credentials.secretAccessKey}`,
    A_KEY: PASSPHRASE,
  };
  await as(a, ['repo', 'init', '--repo', repo, '--encrypt'], env);
  await as(
    a,
    [
      'backup-state',
      '--execute',
      '--profile',
      'quiescent',
      '--repo',
      repo,
      '--backup-id',
      'x1',
      '--encrypt',
      '--recipient',
      'env:A_KEY',
      '--root',
      a.root,
    ],
    env,
  );
}, 300_000);
afterAll(async () => {
  await sink?.close();
  await s3?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe('recovery on another host, from an encrypted S3 repository', () => {
  it('host B verifies with the key, recovers the Goal under its own authority, and continues its open Todo', async () => {
    const host = hosts.hosts[0]!;
    const bRepo = repo.replace('env:A_REPO_CREDENTIALS', 'env:B_REPO_CREDENTIALS');
    const listed = await okOnB(host, ['repo', 'ls', '--repo', bRepo]);
    expect(listed.backups.map((x: Doc) => [x.backup_id, x.encrypted])).toEqual([['x1', true]]);
    const keyless = await onB(host, [
      'backup-state',
      'verify',
      '--repo',
      bRepo,
      '--backup-id',
      'x1',
      '--destination',
      b.workspace,
      '--execute',
      '--root',
      join(b.home, 'none'),
    ]);
    expect(keyless.status).toBe(3);
    expect(keyless.json().error.code).toBe('repo_key_required');
    const audit = await okOnB(host, [
      'backup-state',
      'verify',
      '--repo',
      bRepo,
      '--backup-id',
      'x1',
      '--key',
      'env:B_BACKUP_KEY',
      '--destination',
      b.workspace,
      '--execute',
      '--root',
      join(b.home, 'none'),
    ]);
    // Held by the session binding, as every audit of a root with agent sessions is: a successful verification.
    expect(['audited', 'held'], JSON.stringify(audit.findings)).toContain(audit.phase);
    const plan = await okOnB(host, [
      'recover',
      'plan',
      '--from',
      b.workspace,
      '--goal',
      'launch',
      '--destination',
      b.root,
      '--repo',
      bRepo,
      '--root',
      join(b.home, 'none'),
    ]);
    const st = await okOnB(host, [
      'recover',
      'apply',
      '--destination',
      b.root,
      '--confirm',
      plan.plan_digest,
      '--root',
      join(b.home, 'none'),
    ]);
    expect(st.state, JSON.stringify(st.holds)).toBe('complete');
    expect(st.fences).toEqual({ source_established: true, destination_established: true });
    const cont = agentFile(b.home, 'continue', CONTINUE);
    const run = await okOnB(host, ['work', 'run', '--goal', 'launch', '--agent', cont, '--root', b.root]);
    expect(run.status).toBe('completed');
    const todos = (await okOnB(host, ['todo', 'list', '--goal', 'launch', '--root', b.root])).todos as Doc[];
    expect(todos.find((t) => t.todo_id === 't3').status).toBe('done');
    // The recovery ended: its pin is gone from the repository.
    const dry = await okOnB(host, ['repo', 'forget', '--repo', bRepo, '--keep-last', '1', '--dry-run']);
    expect(dry.pins).toEqual([]);
  }, 300_000);

  it('host A comes back: before its work run sends anything it asks the receiver, learns of the newer lifetime, records its supersession and is refused', async () => {
    const before = sink.attempts().attempts.length;
    const stale = agentFile(a.dir, 'stale', [
      {
        text: 'Announcing.',
        tool_calls: [{ name: 'webhook.deliver', arguments: { message: 'stale news from host A' } }],
      },
    ]);
    const w = await loopxAsync([
      'work',
      'run',
      '--goal',
      'launch',
      '--agent',
      stale,
      '--sink',
      sink.deliveriesUrl,
      '--root',
      a.root,
      '--authority-dir',
      a.authority,
      '--json',
    ]);
    expect(w.status, w.stdout).toBe(4);
    expect(w.json().error.code).toBe('goal_lifetime_superseded');
    // Refused before it sent: the receiver saw no attempt at all from the old lifetime, not even a refused one.
    expect(sink.attempts().attempts.length).toBe(before);
    expect(
      sink.deliveries().filter((d) => (d.body as { message?: string }).message === 'stale news from host A'),
    ).toEqual([]);
    const t = await loopxAsync([
      'todo',
      'update',
      't3',
      '--goal',
      'launch',
      '--status',
      'done',
      '--root',
      a.root,
      '--authority-dir',
      a.authority,
      '--json',
    ]);
    expect(t.status).toBe(4);
    expect(t.json().error.code).toBe('goal_lifetime_superseded');
  }, 300_000);
});

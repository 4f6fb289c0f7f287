/**
 * Helpers for the §9 recovery tests that need more than one user, one source or one working
 * directory: a private user (its own run authority, source root and workspace), the real CLI run
 * from a chosen working directory (so what it prints is read as the operator sees it there), a
 * quiescent backup verified into the user's workspace, and readbacks of a root's effect journal
 * and quota ledger through their owners.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import * as effectOwner from '../../../src/owners/effect/index.js';
import * as quotaOwner from '../../../src/owners/quota/index.js';
import { CLI, STATE_HOME, loopxAsync, type CliResult } from '../../support/cli.js';
import { agentFile, BEFORE, type Doc } from './adopt.js';

/** One user of the machine: a private directory with its run authority, a source root and a workspace path. */
export interface User {
  readonly dir: string;
  readonly root: string;
  readonly authority: string;
  readonly workspace: string;
}

export function newUser(prefix: string): User {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, root: join(dir, 'root'), authority: join(dir, 'authority'), workspace: join(dir, 'workspace') };
}

/** The real CLI as `u`, without the event loop blocked: its status and JSON document, expected to succeed. */
export async function as(
  u: Pick<User, 'authority'>,
  args: readonly string[],
  env: Record<string, string> = {},
): Promise<Doc> {
  const r = await loopxAsync([...args, '--authority-dir', u.authority, '--json'], env);
  expect(r.status, `${args.join(' ')}\n${r.stderr}${r.stdout}`).toBe(0);
  return r.json();
}

/** The CLI as `u`, expected to be refused: its exit status and error code. */
export async function refusedAs(
  u: Pick<User, 'authority'>,
  args: readonly string[],
): Promise<{ status: number | null; code: string | undefined }> {
  const r = await loopxAsync([...args, '--authority-dir', u.authority, '--json']);
  return { status: r.status, code: r.status === 0 ? undefined : (r.json().error?.code as string | undefined) };
}

/** The CLI started in `cwd` (relative arguments are the operator's), never blocking the test's event loop. */
export function cliIn(cwd: string, args: readonly string[]): Promise<CliResult> {
  return new Promise((res, rej) => {
    const child = spawn(process.execPath, [...CLI, ...args], {
      cwd,
      env: { ...process.env, XDG_STATE_HOME: STATE_HOME },
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', rej);
    child.on('close', (status, signal) => res({ status, signal, stdout, stderr, json: () => JSON.parse(stdout) }));
  });
}

/**
 * `u`'s source root with the Goal `launch` (three Todos) worked once before any backup — the
 * outline announced at `deliveriesUrl` — as every old-writer test starts; the Goal's lineage id.
 */
export async function workedSource(u: User, deliveriesUrl: string): Promise<string> {
  const at = ['--root', u.root];
  await as(u, ['init', ...at]);
  const lineage = (await as(u, ['goal', 'create', 'launch', '--title', 'Ship the launch post', ...at]))
    .goal_instance_id as string;
  for (const title of ['Draft the outline', 'Review with design', 'Publish the post'])
    await as(u, ['todo', 'add', '--goal', 'launch', '--title', title, ...at]);
  await as(u, [
    'work',
    'run',
    '--goal',
    'launch',
    '--agent',
    agentFile(u.dir, 'before', BEFORE),
    '--sink',
    deliveriesUrl,
    ...at,
  ]);
  return lineage;
}

/** A quiescent backup of `u`'s root, verified into `u.workspace`. */
export async function backupVerified(u: User, id = 'b1'): Promise<void> {
  const out = join(u.dir, 'backups');
  const b = await as(u, [
    'backup-state',
    '--execute',
    '--profile',
    'quiescent',
    '--output-dir',
    out,
    '--backup-id',
    id,
    '--root',
    u.root,
  ]);
  await as(u, [
    'backup-state',
    'verify',
    '--archive',
    join(out, b.archive.name),
    '--manifest',
    join(out, b.manifest.name),
    '--destination',
    u.workspace,
    '--execute',
    '--root',
    u.root,
  ]);
}

/** Plan `u`'s Goal `goal` from its workspace into `destination`; the plan document. */
export const planInto = (u: User, destination: string, goal = 'launch'): Promise<Doc> =>
  as(u, ['recover', 'plan', '--from', u.workspace, '--goal', goal, '--destination', destination, '--root', u.root]);

/** Plan `u`'s Goal `goal` from its workspace into `destination`, then apply it; the apply's status document. */
export async function recoverInto(u: User, destination: string, goal = 'launch'): Promise<Doc> {
  const plan = await planInto(u, destination, goal);
  return as(u, ['recover', 'apply', '--destination', destination, '--confirm', plan.plan_digest]);
}

/** A root's effect journal, read back through the effect owner (empty when it has none). */
export async function effectsOf(root: string): Promise<effectOwner.EffectRecord[]> {
  if (!existsSync(join(root, 'effects.db'))) return [];
  const journal = effectOwner.openSqliteEffectJournal(join(root, 'effects.db'));
  try {
    return await journal.list({});
  } finally {
    journal.close();
  }
}

/** A root's quota spends, read back through the quota owner (none when it has no ledger). */
export async function spendsOf(root: string): Promise<quotaOwner.SpendEntry[]> {
  if (!existsSync(join(root, 'quota.db'))) return [];
  const ledger = quotaOwner.openSqliteQuotaLedger(join(root, 'quota.db'));
  try {
    return await ledger.list();
  } finally {
    ledger.close();
  }
}

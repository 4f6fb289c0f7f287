/**
 * A source root that did real Goal work, its verified backup, and what happened after the capture:
 * the starting point of every adoption test. Everything runs through the real CLI (in this
 * process where a separate one is not the point: test/support/cli.ts), against a real loopback
 * receiver with a journal.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'vitest';
import type { WebhookSink } from '../../../src/dev/index.js';
import {
  AFTER_CAPTURE,
  BEFORE,
  CONTINUE,
  agentDocument,
  type ScriptStep,
} from '../../../src/runtime/drill/definition.js';
import { loopx, loopxAsync, tempRoot } from '../../support/cli.js';

/** A command's JSON document, read field by field by the tests. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Doc = any;

/** A scripted turn (the drill's own definition is the one source of the scripts below). */
export type Step = ScriptStep;

/** A scripted Goal worker agent file (the provider plays `script` turn by turn). */
export function agentFile(dir: string, name: string, script: readonly Step[]): string {
  const path = join(dir, `${name}.json`);
  writeFileSync(path, JSON.stringify(agentDocument(name, script)));
  return path;
}

/** The work before the capture, after it (lost locally), and the continuation in the new root: the drill's scripts. */
export { AFTER_CAPTURE, BEFORE, CONTINUE };

export interface Source {
  readonly dir: string;
  readonly root: string;
  readonly authority: string;
  readonly workspace: string;
  readonly agents: { before: string; after: string; cont: string };
  /** `--root R --authority-dir A` for this source's user. */
  readonly at: (root: string) => string[];
}

/** Run the CLI for `s`'s user in a child process and expect success; its JSON document (`okAsync` where the event loop may run). */
export function ok(s: Pick<Source, 'authority'>, args: readonly string[]): Doc {
  const r = loopx([...args, '--authority-dir', s.authority, '--json']);
  expect(r.status, `${args.join(' ')}\n${r.stderr}${r.stdout}`).toBe(0);
  return r.json();
}

/** `ok` for a command that talks to the in-process receiver (the test's event loop must keep running). */
export async function okAsync(s: Pick<Source, 'authority'>, args: readonly string[]): Promise<Doc> {
  const r = await loopxAsync([...args, '--authority-dir', s.authority, '--json']);
  expect(r.status, `${args.join(' ')}\n${r.stderr}${r.stdout}`).toBe(0);
  return r.json();
}

/** A source root worked before a quiescent capture, verified into a workspace, then worked again (lost locally). */
export async function sourceWithBackup(
  sink: WebhookSink,
  options: {
    profile?: 'quiescent' | 'online';
    afterCapture?: boolean;
    store?: { readonly database_url: string; readonly schema: string };
  } = {},
): Promise<Source> {
  const dir = mkdtempSync(join(tmpdir(), 'loopx-adopt-'));
  const root = tempRoot();
  const authority = join(dir, 'authority');
  const at = (r: string) => ['--root', r, '--authority-dir', authority];
  const agents = {
    before: agentFile(dir, 'before', BEFORE),
    after: agentFile(dir, 'after', AFTER_CAPTURE),
    cont: agentFile(dir, 'continue', CONTINUE),
  };
  const s: Source = { dir, root, authority, workspace: join(dir, 'workspace'), agents, at };
  // The source's Goal state in PostgreSQL when `store` names a schema (by its URL reference, set in this process's environment).
  const store =
    options.store === undefined
      ? []
      : ['--store', 'postgresql', '--database-url', options.store.database_url, '--pg-schema', options.store.schema];
  expect((await loopxAsync(['init', ...store, ...at(root)])).status).toBe(0);
  if (options.store !== undefined) expect((await loopxAsync(['db', 'migrate', ...at(root)])).status).toBe(0);
  expect((await loopxAsync(['goal', 'create', 'launch', '--title', 'Ship the launch post', ...at(root)])).status).toBe(
    0,
  );
  for (const title of ['Draft the outline', 'Review with design', 'Publish the post'])
    expect((await loopxAsync(['todo', 'add', '--goal', 'launch', '--title', title, ...at(root)])).status).toBe(0);
  const w = await loopxAsync([
    'work',
    'run',
    '--goal',
    'launch',
    '--agent',
    agents.before,
    '--sink',
    sink.deliveriesUrl,
    ...at(root),
    '--json',
  ]);
  expect(w.status, w.stderr).toBe(0);
  const out = join(dir, 'backups');
  const b = await okAsync(s, [
    'backup-state',
    '--execute',
    '--profile',
    options.profile ?? 'quiescent',
    '--output-dir',
    out,
    '--backup-id',
    'b1',
    '--root',
    root,
  ]);
  await okAsync(s, [
    'backup-state',
    'verify',
    '--archive',
    join(out, b.archive.name),
    '--manifest',
    join(out, b.manifest.name),
    '--destination',
    s.workspace,
    '--execute',
    '--root',
    root,
  ]);
  if (options.afterCapture !== false) {
    const a = await loopxAsync(['work', 'run', '--goal', 'launch', '--agent', agents.after, ...at(root), '--json']);
    expect(a.status, a.stderr).toBe(0);
  }
  return s;
}

/** Plan `s`'s Goal into a new destination beside the workspace; the plan's public document. */
export function plan(s: Source, name = 'recovered'): { destination: string; doc: Doc } {
  const destination = join(s.dir, name);
  return {
    destination,
    doc: ok(s, [
      'recover',
      'plan',
      '--from',
      s.workspace,
      '--goal',
      'launch',
      '--destination',
      destination,
      '--root',
      s.root,
    ]),
  };
}

/** `plan` through `okAsync`: the CLI in this process when it can be. */
export async function planAsync(s: Source, name = 'recovered'): Promise<{ destination: string; doc: Doc }> {
  const destination = join(s.dir, name);
  return {
    destination,
    doc: await okAsync(s, [
      'recover',
      'plan',
      '--from',
      s.workspace,
      '--goal',
      'launch',
      '--destination',
      destination,
      '--root',
      s.root,
    ]),
  };
}

/**
 * A small but complete runtime root for backup tests, built through the real owners (registry,
 * goal, config, work, session, run store), and helpers to read archives back. Only what no owner
 * writes — stray files, non-state, special entries — is written directly.
 */
import Database from 'better-sqlite3';
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  createReadStream,
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGunzip } from 'node:zlib';
import tar from 'tar-stream';
import { openSqliteRunStore } from '../../../src/engine/run-store/sqlite.js';
import { openFileConfigStore, type ConfigStore, type NamespaceValue } from '../../../src/owners/config/index.js';
import { goalRef, openFileGoalStore, type GoalRecord, type GoalStore } from '../../../src/owners/goal/index.js';
import { memoryRegistry, openFileRegistry, type Registry } from '../../../src/owners/registry/index.js';
import { openSqliteSessionStore } from '../../../src/owners/session/index.js';
import { openGoalWork } from '../../../src/owners/work/index.js';

/** A fresh private directory (0700) holding `root/` (not created) and room for outputs. */
export function tempBase(prefix = 'loopx-backup-'): string {
  const base = mkdtempSync(join(tmpdir(), prefix));
  chmodSync(base, 0o700);
  return base;
}

/** A file no owner writes (stray content, non-state, optional targets). */
function write(root: string, rel: string, data: string | Uint8Array): void {
  const path = join(root, rel);
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  writeFileSync(path, data, { mode: 0o600 });
}

export function sqliteDb(path: string, setup: (db: Database.Database) => void): void {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const db = new Database(path);
  db.pragma('journal_mode = WAL');
  setup(db);
  db.close();
}

/** The project every fixture Goal belongs to. */
export const PROJECT = { project_id: 'proj', name: 'Project' } as const;
/** The title of the Goal whose registration was interrupted (see makeRoot). */
export const ORPHAN_TITLE = 'Orphan';

/** The machine configuration the fixture applies through the config owner (the decoded value the owner reads back). */
export const machineDoc = {
  schema_version: 'loopx_machine_configuration_v0',
  namespaces: { goal_storage: { schema_version: '1', new_goal_provider: 'sqlite' } },
};

/** The root's owners, opened the way the CLI opens them. */
export const registryOf = (root: string): Registry => openFileRegistry(root);
export const goalsOf = (root: string): GoalStore => openFileGoalStore(root, { registry: openFileRegistry(root) });
export const configOf = (root: string): ConfigStore => openFileConfigStore(root);

let transactionSeq = 0;
/** Apply namespace changes through the config owner against its current revision. */
export function applyMachineConfiguration(
  root: string,
  changes: Readonly<Record<string, NamespaceValue | null>>,
): void {
  const config = configOf(root);
  config.apply({
    expectedRevision: config.read().revision,
    transactionId: `test-${process.pid}-${++transactionSeq}`,
    changes,
  });
}

/** Add a project through the registry owner (same Goals and routes, new registry bytes). */
export function addProject(root: string, project: { project_id: string; name: string }): void {
  const registry = registryOf(root);
  registry.addProject(project, registry.read().revision);
}

/** Create a registered Goal through the goal owner (which registers `goals/<goal_id>` through the registry owner) with its work store. */
export async function createGoal(root: string, goalId: string, title = goalId): Promise<GoalRecord> {
  const goal = goalsOf(root).create(goalId, title, { projectId: PROJECT.project_id });
  (await openGoalWork({ root, goal_id: goalId })).close();
  return goal;
}

/**
 * Commit exactly `commits` transactions to a Goal's work through the work owner: the Todo
 * `todoId` is added if it does not exist yet, then updated once per further commit. `text`, when
 * given, is each update's Todo text (the history grows by about that much per commit). The
 * store is opened with synchronous=OFF: a fixture needs no durability, and 20,000 commits stay fast.
 */
export async function commitWork(
  root: string,
  goalId: string,
  commits: number,
  options: { todoId?: string; text?: (i: number) => string } = {},
): Promise<void> {
  const todoId = options.todoId ?? 'history';
  const work = await openGoalWork({ root, goal_id: goalId, synchronous: 'OFF' });
  try {
    const base = await work.transactionCount();
    let done = 0;
    if (commits > 0 && (await work.getTodo(todoId)) === undefined) {
      await work.addTodo({ operation_id: `${goalId}-${base}`, todo_id: todoId, title: `history of ${goalId}` });
      done++;
    }
    for (; done < commits; done++) {
      const n = base + done;
      await work.updateTodo({
        operation_id: `${goalId}-${n}`,
        todo_id: todoId,
        ...(options.text ? { text: options.text(n) } : { priority: n % 1000 }),
      });
    }
  } finally {
    work.close();
  }
}

export interface FixtureOptions {
  /** Apply a machine configuration (default true). */
  machine?: boolean;
  /** Extra special entries: a symlink and a FIFO (default true). */
  specials?: boolean;
  /** Committed work transactions of alpha (default 25, at least 3). */
  commitsAlpha?: number;
}

/** What makeRoot built: the Goal records the owners minted (instance ids are random). */
export interface Fixture {
  readonly alpha: GoalRecord;
  readonly beta: GoalRecord;
  readonly orphan: GoalRecord;
}

/**
 * Build a runtime root through the owners: a project and two registered Goals (alpha active,
 * beta paused) with documents and work history, a Goal directory whose registration was
 * interrupted (orphan: goal.json written, route never registered), the machine configuration,
 * engine and session databases; plus what no owner writes: a non-ASCII stray file, a SQLite
 * attachment, a fake .db, a large file, an empty directory, non-state, automations, skills,
 * and (optionally) a symlink and a FIFO.
 */
export async function makeRoot(root: string, options: FixtureOptions = {}): Promise<Fixture> {
  mkdirSync(root, { mode: 0o700 });
  addProject(root, PROJECT);
  if (options.machine ?? true) applyMachineConfiguration(root, machineDoc.namespaces);

  const goals = goalsOf(root);
  const alpha = goals.create('alpha', 'Alpha', { projectId: PROJECT.project_id });
  const work = await openGoalWork({ root, goal_id: 'alpha' });
  try {
    await work.addTodo({ operation_id: 'alpha-add-report', todo_id: 't1', title: 'finish the report' });
    await work.addTodo({ operation_id: 'alpha-add-sources', todo_id: 't2', title: 'gather sources' });
    await work.updateTodo({ operation_id: 'alpha-done-sources', todo_id: 't2', status: 'done' });
  } finally {
    work.close();
  }
  await commitWork(root, 'alpha', (options.commitsAlpha ?? 25) - 3, { todoId: 't1' });
  goals.addDoc('alpha', 'plan.md', '# Plan\n\n- [ ] finish the report\n- [x] gather sources\n');
  // A SQLite database is recognized by its header, not its name: a Goal document that is one.
  const scratch = mkdtempSync(join(tmpdir(), 'loopx-backup-attachment-'));
  try {
    sqliteDb(join(scratch, 'attachment.bin'), (db) => db.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1)'));
    goals.addDoc('alpha', 'attachment.bin', readFileSync(join(scratch, 'attachment.bin')));
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  // The goal owner only names documents in ASCII; a stray non-ASCII file is still captured.
  write(root, 'goals/alpha/docs/notes-é.md', 'non-ASCII file name\n');

  const created = goals.create('beta', 'Beta', { projectId: PROJECT.project_id });
  await commitWork(root, 'beta', 3);
  const beta = goals.pause(goalRef(created), 'active');
  mkdirSync(join(root, 'goals/beta/empty'), { mode: 0o700 });

  // goal.json written, the route never registered (the registration went to a registry that was lost).
  const orphan = openFileGoalStore(root, { registry: memoryRegistry() }).create('orphan', ORPHAN_TITLE);

  openSqliteRunStore(join(root, 'engine.db')).close();
  openSqliteSessionStore(join(root, 'sessions.db')).close();
  write(root, 'fake.db', 'not a database, just a name');
  write(
    root,
    'big.bin',
    new Uint8Array(3 * 1024 * 1024 + 7).map((_, i) => (i * 7919) % 251),
  );
  // Not owner state, and optional targets.
  write(root, 'locks/run_1.lock', '');
  write(root, 'exports/run_1.snapshot', 'x');
  write(root, 'outbox.jsonl', '{}\n');
  write(root, 'automations/heartbeat.json', '{"enabled":true}');
  write(root, 'skills/loopx-review/SKILL.md', '# skill\n');
  if (options.specials ?? true) {
    symlinkSync('/etc/hostname', join(root, 'goals/alpha/docs/link'));
    execFileSync('mkfifo', ['-m', '600', join(root, 'goals/alpha/fifo')]);
  }
  return { alpha, beta, orphan };
}

/** Every path under `dir` with type, size, mode and mtime: a fingerprint that changes when anything is written. */
export function treeFingerprint(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      const st = lstatSync(p);
      out.push(`${p} ${st.mode.toString(8)} ${st.size} ${st.mtimeMs} ${st.ino}`);
      if (st.isDirectory()) walk(p);
    }
  };
  if (existsSync(dir)) walk(dir);
  return out;
}

export interface ArchiveEntry {
  name: string;
  type: string;
  mode: number;
  uid: number;
  gid: number;
  uname: string;
  gname: string;
  size: number;
  mtime: Date;
  sha256: string | null;
  data: Buffer;
}

/** Read a .tar.gz back with tar-stream. */
export async function readArchive(path: string): Promise<ArchiveEntry[]> {
  const entries: ArchiveEntry[] = [];
  const extract = tar.extract();
  extract.on('entry', (header, stream, next) => {
    const chunks: Buffer[] = [];
    stream.on('data', (c: unknown) => chunks.push(c as Buffer));
    stream.on('end', () => {
      const data = Buffer.concat(chunks);
      entries.push({
        name: header.name,
        type: header.type,
        mode: header.mode,
        uid: header.uid,
        gid: header.gid,
        uname: header.uname,
        gname: header.gname,
        size: header.size,
        mtime: header.mtime,
        sha256: header.type === 'file' ? createHash('sha256').update(data).digest('hex') : null,
        data,
      });
      next();
    });
    stream.resume();
  });
  await pipeline(createReadStream(path), createGunzip(), extract);
  return entries;
}

export const sha256File = (path: string): string => createHash('sha256').update(readFileSync(path)).digest('hex');

/** Every string value in a JSON document (keys included). */
export function jsonStrings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(jsonStrings);
  if (value && typeof value === 'object') return Object.entries(value).flatMap(([k, v]) => [k, ...jsonStrings(v)]);
  return [];
}

/**
 * Step 5 of verification (RFC §5), the part that runs inside the disposable worker process
 * (worker.ts): SQLite integrity on private copies, the configuration checkpoint verifier, and
 * readback of configuration, registry, Goals, Todos and committed history through each owner's
 * `readHistorical()`. It reads the staged workspace and writes only private scratch copies under
 * the scratch directory it is given; it loads no restored code, opens no socket, takes no lock or
 * lease. Its report carries counts, ids, statuses and finding codes — never payloads.
 */
import { closeSync, constants, openSync, readSync } from 'node:fs';
import { readRegularFileOnce } from '../core/index.js';
import { join } from 'node:path';
import { isOutOfSpace, openSqliteCopy } from '../store/index.js';
import { config, effect, goal, quota, registry, scheduler, session, work } from '../owners/index.js';

export interface WorkspaceRef {
  /** The staged workspace (the archive's top). */
  readonly workspace: string;
  /** Private scratch directory for SQLite copies. */
  readonly scratch: string;
}

/**
 * The worker's input, one JSON document per line on stdin: first the WorkspaceRef, then one
 * `{"sqlite": "<workspace-relative path>"}` per database as soon as extraction has written it and
 * checked its digest, then `{"end": true}` once the whole archive is verified. The caller keeps
 * stdin open until the worker exits: its end means the caller died, and the worker exits at once.
 */
export type WorkerMessage = { readonly sqlite: string } | { readonly end: true };

/**
 * The worker's exit codes besides 0 (report printed): `noSpace` — the scratch file system filled
 * or hit its quota (the caller answers with the capacity refusal, never a verdict on the backup);
 * `parentGone` — its stdin closed, i.e. the verification that started it is gone; `failed` — anything else.
 */
export const WORKER_EXIT = { noSpace: 75, parentGone: 76, failed: 70 } as const;

export interface FindingLite {
  readonly code: string;
  readonly severity: string;
  readonly subject: string;
  readonly next_action: string;
}

export type OwnerKind = 'config' | 'registry' | 'goal' | 'work' | 'session' | 'effect' | 'quota' | 'scheduler' | 'engine' | 'unknown';

export interface SqliteReport {
  readonly path: string;
  readonly owner: OwnerKind;
  readonly goal_id: string | null;
  readonly integrity: 'ok' | 'failed' | 'unreadable';
  readonly wal_header: boolean;
  /** Owner readback, when the owner has a reader for this file. */
  readonly readback: { readonly ok: boolean; readonly counts: Record<string, number>; readonly findings: readonly FindingLite[] } | null;
  readonly work?: WorkReadback;
}

export interface WorkReadback {
  readonly goal_id: string | null;
  readonly readable: boolean;
  readonly store_identity: string | null;
  readonly head_cursor: number | null;
  readonly history_count: number;
  readonly todo_count: number;
  readonly todos_by_status: Record<string, number>;
}

export interface WorkerReport {
  readonly sqlite_heap_limit: number;
  /** Time the worker spent reading owners (set by worker.ts; owner checks overlap extraction). */
  readonly busy_ms?: number;
  readonly checkpoint: { readonly ok: boolean; readonly sha256: string | null; readonly goal_count: number; readonly machine_configuration_present: boolean; readonly findings: readonly FindingLite[] };
  readonly config: { readonly ok: boolean; readonly revision: string | null; readonly receipts: number; readonly findings: readonly FindingLite[] };
  readonly registry: { readonly ok: boolean; readonly revision: string | null; readonly goals: readonly { goal_id: string; goal_instance_id: string; status: string; route: string }[]; readonly findings: readonly FindingLite[] };
  readonly goals: { readonly ok: boolean; readonly goals: readonly { goal_id: string; goal_instance_id: string; lifecycle: string; docs: number }[]; readonly findings: readonly FindingLite[] };
  readonly sqlite: readonly SqliteReport[];
}

const lite = (f: { code: string; severity?: string; subject: string; next_action: string }): FindingLite => ({
  code: f.code,
  severity: f.severity ?? 'error',
  subject: f.subject,
  next_action: f.next_action,
});

const ROOT = 'runtime-root';
const GOAL_WORK = /^runtime-root\/goals\/([a-z0-9][a-z0-9._-]{0,63})\/work\.db$/;

/** The owner of a SQLite file by its place in the root's layout (owners/layout.ts). */
export function ownerOfSqlite(path: string): { owner: OwnerKind; goal_id: string | null } {
  const w = GOAL_WORK.exec(path);
  if (w) return { owner: 'work', goal_id: w[1]! };
  const byName: Record<string, OwnerKind> = {
    [`${ROOT}/sessions.db`]: 'session',
    [`${ROOT}/effects.db`]: 'effect',
    [`${ROOT}/quota.db`]: 'quota',
    [`${ROOT}/scheduler.db`]: 'scheduler',
    [`${ROOT}/engine.db`]: 'engine',
  };
  return { owner: byName[path] ?? 'unknown', goal_id: null };
}

/** Whether the file's header says WAL mode (format bytes 2/2); null when it cannot be read. */
function walHeader(abs: string): boolean | null {
  try {
    const head = Buffer.alloc(20);
    const fd = openSync(abs, constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      return readSync(fd, head, 0, 20, 0) === 20 && head[18] === 2 && head[19] === 2;
    } finally {
      closeSync(fd);
    }
  } catch {
    return null;
  }
}

function integrityOf(abs: string, scratch: string): { integrity: SqliteReport['integrity']; wal: boolean } {
  const header = walHeader(abs);
  const wal = header === true;
  if (header === null) return { integrity: 'unreadable', wal };
  let copy;
  try {
    copy = openSqliteCopy(abs, { scratchDir: scratch, scratchPrefix: 'integrity-' });
  } catch (e) {
    // A full scratch disk ends the worker (WORKER_EXIT.noSpace): it is never a verdict on the file.
    if (isOutOfSpace(e)) throw e;
    return { integrity: 'unreadable', wal };
  }
  try {
    const rows = copy.db.pragma('integrity_check') as Array<{ integrity_check: string }>;
    return { integrity: rows.length === 1 && rows[0]!.integrity_check === 'ok' ? 'ok' : 'failed', wal };
  } catch (e) {
    if (isOutOfSpace(e)) throw e;
    return { integrity: 'failed', wal };
  } finally {
    copy.close();
  }
}

const okOf = (findings: readonly { severity: string }[]): boolean => !findings.some((f) => f.severity === 'error');

/**
 * A Goal's work database: the work owner's reader makes the one private copy and runs the full
 * `integrity_check` on it itself, so the file is copied and checked once, not twice.
 */
function verifyWork(abs: string, path: string, goal_id: string): SqliteReport {
  const h = work.readHistorical(abs, { goal_id, integrity: 'full' });
  const codes = new Set(h.findings.map((f) => f.code));
  const integrity: SqliteReport['integrity'] = codes.has('work_db_integrity_failed')
    ? 'failed'
    : codes.has('work_db_unreadable') || codes.has('work_db_not_sqlite') || codes.has('work_db_too_large')
      ? 'unreadable'
      : 'ok';
  const base = { path, owner: 'work' as const, goal_id, integrity, wal_header: walHeader(abs) === true };
  if (integrity !== 'ok') return { ...base, readback: null };
      const byStatus: Record<string, number> = {};
  for (const t of h.todos) byStatus[t.status] = (byStatus[t.status] ?? 0) + 1;
  return {
    ...base,
    readback: { ok: h.readable && okOf(h.findings), counts: { todos: h.todos.length, history: h.history_count }, findings: h.findings.map(lite) },
    work: {
      goal_id: h.goal_id,
      readable: h.readable,
      store_identity: h.store_identity,
      head_cursor: h.head_cursor,
      history_count: h.history_count,
      todo_count: h.todos.length,
      todos_by_status: byStatus,
    },
  };
}

/** One SQLite file of the workspace: integrity on a private copy, then its owner's readback. */
export function verifySqliteFile(req: WorkspaceRef, path: string): SqliteReport {
  const opts = { scratchDir: req.scratch };
  const abs = join(req.workspace, path);
  const { owner, goal_id } = ownerOfSqlite(path);
  if (owner === 'work') return verifyWork(abs, path, goal_id!);
  const { integrity, wal } = integrityOf(abs, req.scratch);
  const base = { path, owner, goal_id, integrity, wal_header: wal };
  if (integrity !== 'ok') return { ...base, readback: null };
  switch (owner) {
    case 'session': {
      const h = session.readHistorical(abs, opts);
      return { ...base, readback: { ok: okOf(h.findings), counts: { sessions: h.sessions.length, turns: h.turns.length, settlements: h.settlements.length }, findings: h.findings.map(lite) } };
    }
    case 'effect': {
      const h = effect.readHistorical(abs, opts);
      return { ...base, readback: { ok: okOf(h.findings), counts: { effects: h.effects.length, outbox: h.outbox.length, transitions: h.transitions.length }, findings: h.findings.map(lite) } };
    }
    case 'quota': {
      const h = quota.readHistorical(abs, opts);
      return { ...base, readback: { ok: okOf(h.findings), counts: { entries: h.entries.length }, findings: h.findings.map(lite) } };
    }
    case 'scheduler': {
      const h = scheduler.readHistorical(abs, opts);
      return { ...base, readback: { ok: okOf(h.findings), counts: { timers: h.timers.length }, findings: h.findings.map(lite) } };
    }
    default:
      return { ...base, readback: null };
  }
}

/** The root-level owners (checkpoint, config, registry, goal), with the SQLite reports already made. */
export function verifyOwners(req: WorkspaceRef, sqlite: readonly SqliteReport[], heapLimit: number): WorkerReport {
  const root = join(req.workspace, ROOT);

  // Read once, bounded, never through a link (an archive's link is inert data, not a route).
  let checkpointBytes: Uint8Array | null = null;
  try {
    checkpointBytes = readRegularFileOnce(join(req.workspace, 'configuration-backup.json'), config.CHECKPOINT_MAX_BYTES);
  } catch {
    checkpointBytes = null;
  }
  const cp =
    checkpointBytes === null
      ? { ok: false, sha256: null, goal_count: 0, machine_configuration_present: false, findings: [{ code: 'checkpoint_unreadable', severity: 'error', subject: 'configuration-backup.json', next_action: 'use another backup of this root' }] }
      : config.verifyConfigurationCheckpoint(checkpointBytes);
  const checkpoint = {
    ok: cp.ok,
    sha256: cp.sha256,
    goal_count: cp.goal_count,
    machine_configuration_present: cp.machine_configuration_present,
    findings: cp.findings.map(lite),
  };

  const c = config.readHistorical(root);
  const configReport = {
    ok: c.ok,
    revision: c.configuration?.revision ?? null,
    receipts: c.receipts.length,
    findings: c.findings.map(lite),
  };

  const r = registry.readHistorical(root);
  const registryReport = r.ok
    ? {
        ok: true,
        revision: r.read.revision,
        goals: r.read.value.goals.map((g) => ({ goal_id: g.goal_id, goal_instance_id: g.goal_instance_id, status: g.status, route: g.route })),
        findings: [],
      }
    : { ok: false, revision: null, goals: [], findings: r.findings.map(lite) };

  const g = goal.readHistorical(root);
  const goalsReport = {
    ok: g.ok,
    goals: g.goals.map((x) => ({ goal_id: x.goal_id, goal_instance_id: x.goal_instance_id, lifecycle: x.lifecycle, docs: x.docs.length })),
    findings: g.findings.map(lite),
  };

  return { sqlite_heap_limit: heapLimit, checkpoint, config: configReport, registry: registryReport, goals: goalsReport, sqlite };
}

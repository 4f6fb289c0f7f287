/**
 * Owner verification and the exact §12 boundaries of `backup-state verify`, on archives built from
 * real producer backups: a WAL-era SQLite snapshot passes; a corrupt database and a changed
 * configuration checkpoint refuse; the disposable worker is killed at its time limit; 20,000
 * committed transactions pass and 20,001 refuse (declared or found); a 16 MiB manifest passes and
 * one byte more refuses; an archive changed and restored during the scan refuses. Every refusal
 * leaves the destination unpublished.
 */
import Database from 'better-sqlite3';
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { create, plan, type BackupManifest } from '../../src/backup/index.js';
import { isLoopxError } from '../../src/core/errors.js';
import { AUDIT_FILE, executeVerify, type RecoveryAudit, type VerifyOptions } from '../../src/recovery/index.js';
import { commitWork, createGoal, makeRoot, tempBase } from '../backup/support/fixtures.js';
import {
  buildCorpus,
  fileEntry,
  insertAfter,
  loadBase,
  replaceEntry,
  writeCorpus,
  type BaseBackup,
  type BuildOptions,
} from './support/corpus.js';

const MiB = 1024 * 1024;
let dir: string;
let base: BaseBackup;
let n = 0;

async function backup(root: string, out: string, id: string): Promise<{ archive: string; manifest: BackupManifest }> {
  await create(plan(root, { outputDir: out, backupId: id }), { format: 'v0' });
  return {
    archive: join(out, `${id}.tar.gz`),
    manifest: JSON.parse(readFileSync(join(out, `${id}.manifest.json`), 'utf8')) as BackupManifest,
  };
}

beforeAll(async () => {
  dir = tempBase('loopx-verify-owners-');
  await makeRoot(join(dir, 'root'));
  const b = await backup(join(dir, 'root'), join(dir, 'out'), 'base');
  base = await loadBase(b.archive, b.manifest);
}, 60_000);

/** Write a corpus pair and verify it into a fresh destination. */
async function verifyCorpus(options: BuildOptions, from: BaseBackup = base, verifyOptions: VerifyOptions = {}) {
  const id = `c${++n}`;
  const files = writeCorpus(join(dir, id), buildCorpus(from, options));
  const destination = join(dir, id, 'dest');
  try {
    const outcome = await executeVerify({ ...files, destination }, verifyOptions);
    return { outcome, destination, code: undefined as string | undefined, files };
  } catch (e) {
    if (!isLoopxError(e)) throw e;
    expect(existsSync(destination), 'destination must not be published').toBe(false);
    return { outcome: undefined, destination, code: e.code, files };
  }
}

const workPath = 'runtime-root/goals/alpha/work.db';
const workBytes = (b: BaseBackup = base): Buffer => b.entries.find((e) => e.path === workPath)!.data!;

/** Rewrite a SQLite image through better-sqlite3 in a scratch file. */
function rewriteDb(bytes: Buffer, fn: (db: Database.Database) => void): Buffer {
  const p = join(dir, `scratch-${++n}.db`);
  writeFileSync(p, bytes);
  const db = new Database(p);
  fn(db);
  db.close();
  return readFileSync(p);
}

describe('owner verification in the disposable worker', () => {
  it('a valid WAL-era snapshot passes and its Goal work stays readable', async () => {
    const wal = rewriteDb(workBytes(), (db) => db.pragma('journal_mode = WAL'));
    expect([wal[18], wal[19]]).toEqual([2, 2]);
    const r = await verifyCorpus({ entries: replaceEntry(base.entries, workPath, (e) => ({ ...e, data: wal })) });
    expect(r.code).toBeUndefined();
    const audit = JSON.parse(readFileSync(join(r.destination, AUDIT_FILE), 'utf8')) as RecoveryAudit;
    const db = audit.components.find((c) => c.archive_members.includes(workPath))!;
    expect(db.readback).toMatchObject({ integrity: 'ok', wal_header: true });
    expect(db.classification).toBe('recovered_readable');
  }, 30_000);

  it('a corrupt database refuses (verify_sqlite_integrity_failed)', async () => {
    const bytes = Buffer.from(workBytes());
    const pageSize = bytes.readUInt16BE(16) === 1 ? 65536 : bytes.readUInt16BE(16);
    expect(bytes.length).toBeGreaterThan(pageSize * 2);
    randomBytes(pageSize - 200).copy(bytes, pageSize + 100); // the middle of page 2
    const r = await verifyCorpus({ entries: replaceEntry(base.entries, workPath, (e) => ({ ...e, data: bytes })) });
    expect(r.code).toBe('verify_sqlite_integrity_failed');
  }, 30_000);

  it('a changed configuration checkpoint refuses (verify_configuration_checkpoint_invalid)', async () => {
    const checkpoint = base.entries.find((e) => e.path === 'configuration-backup.json')!;
    const doc = JSON.parse(checkpoint.data!.toString('utf8')) as { data: { goals: unknown[] } };
    doc.data.goals = [];
    const r = await verifyCorpus({
      entries: replaceEntry(base.entries, 'configuration-backup.json', (e) => ({
        ...e,
        data: Buffer.from(JSON.stringify(doc)),
      })),
    });
    expect(r.code).toBe('verify_configuration_checkpoint_invalid');
  }, 30_000);

  it('kills the worker at its time limit (verify_worker_timeout) and publishes nothing', async () => {
    process.env.LOOPX_TEST_WORKER_HANG = '1';
    process.env.LOOPX_TEST_WORKER_TIMEOUT_MS = '1500';
    try {
      const started = Date.now();
      const r = await verifyCorpus({});
      expect(r.code).toBe('verify_worker_timeout');
      expect(Date.now() - started).toBeLessThan(15_000);
    } finally {
      delete process.env.LOOPX_TEST_WORKER_HANG;
      delete process.env.LOOPX_TEST_WORKER_TIMEOUT_MS;
    }
  }, 30_000);
});

describe('the owner/dependency graph', () => {
  const audit = (dest: string): RecoveryAudit =>
    JSON.parse(readFileSync(join(dest, AUDIT_FILE), 'utf8')) as RecoveryAudit;
  const goalOf = (a: RecoveryAudit, goalId: string) =>
    a.components.find((c) => c.owner_kind === 'goal' && (c.readback as { goal_id?: string }).goal_id === goalId)!;

  it('a Goal whose document does not match its recorded digest is invalid, never readable', async () => {
    const doc = base.entries.find((e) => e.type === 'file' && e.path.startsWith('runtime-root/goals/alpha/docs/'))!;
    const changed = Buffer.concat([doc.data!, Buffer.from(' (changed after the Goal recorded it)')]);
    const r = await verifyCorpus({ entries: replaceEntry(base.entries, doc.path, (e) => ({ ...e, data: changed })) });
    expect(r.code).toBeUndefined();
    const a = audit(r.destination);
    const alpha = goalOf(a, 'alpha');
    expect(alpha).toMatchObject({ verification: 'invalid', classification: 'unknown_unrecoverable' });
    expect(
      a.findings.some((f) => f.component === alpha.component_id && f.owner === 'goal' && f.severity === 'error'),
    ).toBe(true);
    expect(goalOf(a, 'beta').classification).toBe('recovered_readable');
  }, 30_000);

  it('a Goal the registry routes to but whose goal.json is gone is reported missing', async () => {
    const r = await verifyCorpus({
      entries: base.entries.filter((e) => e.path !== 'runtime-root/goals/beta/goal.json'),
    });
    expect(r.code).toBeUndefined();
    const a = audit(r.destination);
    const beta = goalOf(a, 'beta');
    expect(beta).toMatchObject({ verification: 'missing', classification: 'unknown_unrecoverable', member_count: 0 });
    expect(a.findings.find((f) => f.code === 'registry_goal_missing')?.component).toBe(beta.component_id);
    expect(a.counts.verification.missing).toBeGreaterThanOrEqual(1);
  }, 30_000);
});

describe('exact boundaries', () => {
  let history: BaseBackup;
  let over: Buffer;

  beforeAll(async () => {
    const root = join(dir, 'history-root');
    await makeRoot(root, { specials: false });
    await createGoal(root, 'gamma');
    await commitWork(root, 'gamma', 20_000);
    const b = await backup(root, join(dir, 'history-out'), 'h');
    history = await loadBase(b.archive, b.manifest);
    await commitWork(root, 'gamma', 1);
    over = readFileSync(join(root, 'goals', 'gamma', 'work.db'));
  }, 180_000);

  it('20,000 committed transactions pass, read back completely', async () => {
    const r = await verifyCorpus({}, history);
    expect(r.code).toBeUndefined();
    const audit = JSON.parse(readFileSync(join(r.destination, AUDIT_FILE), 'utf8')) as RecoveryAudit;
    const goal = audit.components.find(
      (c) => c.owner_kind === 'goal' && (c.readback as { goal_id: string }).goal_id === 'gamma',
    )!;
    expect((goal.readback as { work: { history_count: number } }).work.history_count).toBe(20_000);
  }, 60_000);

  it('20,001 committed transactions refuse when found by the owner (verify_capacity_goal_history)', async () => {
    const r = await verifyCorpus(
      { entries: replaceEntry(history.entries, 'runtime-root/goals/gamma/work.db', (e) => ({ ...e, data: over })) },
      history,
    );
    expect(r.code).toBe('verify_capacity_goal_history');
  }, 60_000);

  it('20,001 committed transactions refuse when declared, before extraction', async () => {
    const r = await verifyCorpus(
      {
        doc: (m) => {
          const s = m.execution.sqlite_snapshots.find((x) => x.goal_id === 'gamma') as {
            committed_transactions: number;
          };
          s.committed_transactions = 20_001;
        },
      },
      history,
    );
    expect(r.code).toBe('verify_capacity_goal_history');
  }, 60_000);

  it('a 16 MiB external manifest passes and one byte more refuses (verify_capacity_manifest_bytes)', async () => {
    const pad = (size: number) => (b: Buffer) => Buffer.concat([b, Buffer.alloc(size - b.length, 0x20)]);
    const ok = await verifyCorpus({ manifestBytes: pad(16 * MiB) });
    expect(ok.code).toBeUndefined();
    expect(readFileSync(ok.files.manifest).length).toBe(16 * MiB);
    const over = await verifyCorpus({ manifestBytes: pad(16 * MiB + 1) });
    expect(over.code).toBe('verify_capacity_manifest_bytes');
  }, 60_000);
});

describe('interruption', () => {
  it('an aborted verification stops, kills its worker and removes everything it created', async () => {
    const id = `c${++n}`;
    const files = writeCorpus(
      join(dir, id),
      buildCorpus(base, {
        entries: insertAfter(base.entries, 'runtime-root', fileEntry('runtime-root/blob.bin', randomBytes(4 * MiB))),
      }),
    );
    const destination = join(dir, id, 'dest');
    const abort = new AbortController();
    let code: string | undefined;
    try {
      await executeVerify(
        { ...files, destination },
        { signal: abort.signal, onProgress: (p) => p.step === 'extract' && p.done >= MiB && abort.abort() },
      );
    } catch (e) {
      code = isLoopxError(e) ? e.code : String(e);
    }
    expect(code).toBe('verify_interrupted');
    expect(existsSync(destination)).toBe(false);
  }, 30_000);
});

describe('the scan witnesses the bytes it consumes', () => {
  it('an archive changed during the scan and restored afterwards refuses (verify_archive_witness_mismatch)', async () => {
    const blob = randomBytes(8 * MiB); // incompressible: the archive is ~8 MiB, read in 1 MiB chunks
    const id = `c${++n}`;
    const files = writeCorpus(
      join(dir, id),
      buildCorpus(base, {
        entries: insertAfter(base.entries, 'runtime-root', fileEntry('runtime-root/blob.bin', blob)),
      }),
    );
    const original = readFileSync(files.archive);
    const at = original.length - 3 * MiB;
    let changed = false;
    let restored = false;
    const destination = join(dir, id, 'dest');
    let code: string | undefined;
    try {
      await executeVerify(
        { ...files, destination },
        {
          onProgress: (p) => {
            if (p.step !== 'extract') return;
            if (!changed && p.done >= MiB) {
              const flipped = Buffer.from([original[at]! ^ 0xff]);
              writeFileSync(
                files.archive,
                Buffer.concat([original.subarray(0, at), flipped, original.subarray(at + 1)]),
              );
              changed = true;
            } else if (changed && !restored && p.done > at + MiB) {
              writeFileSync(files.archive, original);
              restored = true;
            }
          },
        },
      );
    } catch (e) {
      code = isLoopxError(e) ? e.code : String(e);
    }
    if (!restored) writeFileSync(files.archive, original);
    expect(changed).toBe(true);
    expect(code).toBe('verify_archive_witness_mismatch');
    expect(existsSync(destination)).toBe(false);
    // The archive is the original again: only a witness of the consumed bytes can tell.
    expect(Buffer.compare(readFileSync(files.archive), original)).toBe(0);
    const again = await executeVerify({ ...files, destination });
    expect(again.audit.execution_authority_granted).toBe(false);
  }, 60_000);
});

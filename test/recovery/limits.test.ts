/**
 * backup-state verify: every §12 limit at its boundary on the verify side — the limit is accepted,
 * one more is refused with its code (RFC complete-state-recovery §12, issue 10 item 15).
 *
 * Limits the manifest declares are checked cheaply by the plan (steps 1–3, nothing extracted);
 * limits only the archive or the owners can reveal are checked by a real verification of an
 * archive re-packed from one real backup (support/corpus.ts); the audit's graph and size bounds
 * are checked on `buildAudit` with synthetic inputs, since reaching them end to end needs
 * thousands of owner stores. Byte-sized data is generated in-process.
 */
import Database from 'better-sqlite3';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { BackupManifest } from '../../src/backup/index.js';
import { isLoopxError } from '../../src/core/errors.js';
import {
  AUDIT_FILE,
  RECOVERY_LIMITS,
  executeVerify,
  planVerify,
  showAudit,
  type RecoveryAudit,
} from '../../src/recovery/index.js';
import { auditBytes, buildAudit, publishableAuditBytes, type AuditInputs } from '../../src/recovery/audit.js';
import type { ExtractedFile } from '../../src/recovery/extract.js';
import type { WorkerReport } from '../../src/recovery/owner-verify.js';
import type { OfflineVerification } from '../../src/owners/index.js';

/** A document owner's report as the worker makes it, with the facts the audit reads. */
const documentReport = (owner: string, facts: Record<string, unknown>): OfflineVerification => ({
  owner,
  scope: { goal_id: null },
  members: [],
  ok: true,
  readback: { ok: true, counts: {} },
  source_identity: null,
  revision: null,
  cursor: null,
  facts,
  findings: [],
});
import { checkExpansion } from '../../src/recovery/tar-scan.js';
import { dirEntry, fileEntry, linkEntry, type BuildOptions, type CorpusEntry } from './support/corpus.js';
import { useBaseBackup } from './support/base-fixture.js';

const MiB = 1024 * 1024;
const SQLITE_MAGIC = 'SQLite format 3\u0000';
const fx = useBaseBackup('loopx-limits-');

const codeOf = (e: unknown): string => (isLoopxError(e) ? e.code : `not a LoopxError: ${String(e)}`);

const stage = (options: BuildOptions) => fx.stage(options);

/** Steps 1–3 only: the code of the refusal, or undefined. */
async function planCode(options: BuildOptions): Promise<string | undefined> {
  try {
    await planVerify(stage(options));
    return undefined;
  } catch (e) {
    return codeOf(e);
  }
}

/** The whole verification: the code of the refusal (nothing published), or undefined and the audit. */
async function verify(
  options: BuildOptions,
): Promise<{ code: string | undefined; audit?: RecoveryAudit; destination: string }> {
  const s = stage(options);
  try {
    await executeVerify(s);
  } catch (e) {
    expect(existsSync(s.destination), 'a refused verification publishes nothing').toBe(false);
    return { code: codeOf(e), destination: s.destination };
  }
  const audit = JSON.parse(readFileSync(join(s.destination, AUDIT_FILE), 'utf8')) as RecoveryAudit;
  return { code: undefined, audit, destination: s.destination };
}

async function withEnv<T>(name: string, value: string, run: () => Promise<T>): Promise<T> {
  const saved = process.env[name];
  process.env[name] = value;
  try {
    return await run();
  } finally {
    if (saved === undefined) delete process.env[name];
    else process.env[name] = saved;
  }
}

const isSqlite = (e: CorpusEntry): boolean =>
  e.type === 'file' && e.data!.subarray(0, 16).toString('latin1') === SQLITE_MAGIC;

// ────────────────────────────────────────────────────────────────────────────────────────────
describe('inventory: Goals and SQLite files, declared and found', () => {
  const goalsDeclared = (n: number): BuildOptions => ({
    doc: (m) => {
      const template = m.goals[0]!;
      (m as unknown as { goals: unknown[] }).goals = Array.from({ length: n }, (_, i) =>
        i < m.goals.length ? m.goals[i]! : { ...template, goal_id: `declared-${i}` },
      );
    },
  });
  const sqliteDeclared = (n: number): BuildOptions => ({
    doc: (m) => {
      const template = m.execution.sqlite_snapshots[0]!;
      const list = m.execution.sqlite_snapshots;
      (m.execution as unknown as { sqlite_snapshots: unknown[] }).sqlite_snapshots = Array.from(
        { length: n },
        (_, i) =>
          i < list.length
            ? list[i]!
            : {
                ...template,
                archive_path: `runtime-root/declared-${i}.db`,
                goal_id: null,
                committed_transactions: null,
              },
      );
    },
  });

  it('128 declared Goals pass the plan; 129 refuse (verify_capacity_goals)', async () => {
    expect(await planCode(goalsDeclared(128))).toBeUndefined();
    expect(await planCode(goalsDeclared(129))).toBe('verify_capacity_goals');
  });

  it('128 declared SQLite files pass the plan; 129 refuse (verify_capacity_sqlite_files)', async () => {
    expect(await planCode(sqliteDeclared(128))).toBeUndefined();
    expect(await planCode(sqliteDeclared(129))).toBe('verify_capacity_sqlite_files');
  });

  /** The base plus Goal directories (goal.json only) until the goal owner finds `total` Goals. */
  const goalsFound = (total: number): CorpusEntry[] => {
    const goalJson = JSON.parse(
      fx.base.entries.find((e) => e.path === 'runtime-root/goals/beta/goal.json')!.data!.toString('utf8'),
    ) as Record<string, unknown>;
    const existing = fx.base.entries.filter((e) => /^runtime-root\/goals\/[^/]+\/goal\.json$/.test(e.path)).length;
    const extra: CorpusEntry[] = [];
    for (let i = 0; i < total - existing; i++) {
      const id = `found-${String(i).padStart(3, '0')}`;
      extra.push(
        dirEntry(`runtime-root/goals/${id}`),
        fileEntry(`runtime-root/goals/${id}/goal.json`, JSON.stringify({ ...goalJson, goal_id: id })),
      );
    }
    return [...fx.base.entries, ...extra];
  };

  it('128 Goals found by the goal owner verify; 129 refuse (verify_capacity_goals) although the manifest declares fewer', async () => {
    const ok = await verify({ entries: goalsFound(128) });
    expect(ok.code).toBeUndefined();
    expect(ok.audit!.components.filter((c) => c.owner_kind === 'goal').length).toBe(128);
    expect((await verify({ entries: goalsFound(129) })).code).toBe('verify_capacity_goals');
  }, 120_000);

  /** The base plus tiny real databases until the archive holds `total` files with the SQLite header. */
  const sqliteFound = (total: number): CorpusEntry[] => {
    const p = join(fx.work, `tiny-${fx.next()}.db`);
    const db = new Database(p);
    db.pragma('page_size = 512');
    db.exec('CREATE TABLE t (x); INSERT INTO t VALUES (1)');
    db.close();
    const bytes = readFileSync(p);
    const existing = fx.base.entries.filter(isSqlite).length;
    // Long names: the worker's answer then outgrows a pipe's 64 KiB and must still arrive whole.
    const dir = `runtime-root/${'d'.repeat(200)}/${'e'.repeat(200)}`;
    const extra: CorpusEntry[] = [dirEntry(dir.slice(0, 213)), dirEntry(dir)];
    for (let i = 0; i < total - existing; i++)
      extra.push(fileEntry(`${dir}/${String(i).padStart(3, '0')}-${'n'.repeat(240)}.db`, bytes));
    return [...fx.base.entries, ...extra];
  };

  it('128 SQLite files found in the archive verify (the owner answer, over 64 KiB, read whole); 129 refuse (verify_capacity_sqlite_files) although the manifest declares fewer', async () => {
    const ok = await verify({ entries: sqliteFound(128) });
    expect(ok.code).toBeUndefined();
    expect(ok.audit!.counts.members.sqlite_files).toBe(128);
    expect(
      ok.audit!.components.filter((c) => c.owner_kind === 'unknown' && c.component_id.startsWith('database-')).length,
    ).toBeGreaterThanOrEqual(128 - fx.base.entries.filter(isSqlite).length);
    expect((await verify({ entries: sqliteFound(129) })).code).toBe('verify_capacity_sqlite_files');
  }, 120_000);
});

// ────────────────────────────────────────────────────────────────────────────────────────────
describe('the audit graph: components and dependency links', () => {
  const manifest = (): BackupManifest => fx.base.manifest;
  const file = (path: string): ExtractedFile => ({ path, size_bytes: 1, sha256: 'a'.repeat(64), sqlite: false });

  /** Audit inputs with `databases` unknown-owner SQLite files, `found` Goals, `registeredOnly` Goals no goal.json names, and one stray file. */
  function inputs(databases: number, found: number, registeredOnly = 0): AuditInputs {
    const dbPaths = Array.from({ length: databases }, (_, i) => `runtime-root/dbs/d${i}.db`);
    const goalIds = Array.from({ length: found }, (_, i) => `g${i}`);
    const files = [
      file('configuration-backup.json'),
      file('runtime-root/stray.txt'),
      ...dbPaths.map(file),
      ...goalIds.map((g) => file(`runtime-root/goals/${g}/goal.json`)),
    ];
    const report: WorkerReport = {
      sqlite_heap_limit: RECOVERY_LIMITS.sqliteHardHeapBytes,
      owners: [
        documentReport('registry', {
          revision: null,
          goals: [...goalIds, ...Array.from({ length: registeredOnly }, (_, i) => `r${i}`)].map((goal_id) => ({
            goal_id,
            goal_instance_id: `i-${goal_id}`,
            status: 'active',
            route: `goals/${goal_id}`,
          })),
        }),
        documentReport('config', {
          checkpoint: {
            ok: true,
            sha256: 'b'.repeat(64),
            goal_count: found + registeredOnly,
            machine_configuration_present: false,
            codes: [],
          },
          config_ok: true,
          configuration_revision: null,
          configuration_receipts: 0,
        }),
        documentReport('goal', {
          goals: goalIds.map((goal_id) => ({
            goal_id,
            goal_instance_id: `i-${goal_id}`,
            lifecycle: 'active',
            docs: 0,
          })),
        }),
      ],
      sqlite: dbPaths.map((path) => ({
        path,
        owner: 'unknown',
        goal_id: null,
        integrity: 'ok',
        wal_header: false,
        readback: null,
        facts: {},
      })),
    };
    return {
      manifest: manifest(),
      archiveSha256: 'c'.repeat(64),
      archiveSize: 1,
      manifestSha256: 'd'.repeat(64),
      extraction: {
        expandedBytes: 1,
        regularBytes: 1,
        members: files.length,
        files,
        directories: 0,
        symlinks: [],
        embeddedManifestSha256: 'e'.repeat(64),
      },
      report,
      durations: { archive_processing: 1, owner_read: 1, total: 2 },
    };
  }
  const refusal = (i: AuditInputs): string | undefined => {
    try {
      buildAudit(i);
      return undefined;
    } catch (e) {
      return codeOf(e);
    }
  };

  it('258 components (1 configuration + 128 databases + 128 Goals + 1 remainder) and 128 dependency links are audited', () => {
    const a = buildAudit(inputs(128, 128));
    expect(a.components.length).toBe(258);
    expect(a.counts.dependency_links).toBe(128);
  });

  it('a 259th component refuses (verify_capacity_components): a Goal the registry routes to beside 128 found ones', () => {
    expect(refusal(inputs(128, 128, 1))).toBe('verify_capacity_components');
  });

  it('a 129th dependency link refuses (verify_capacity_dependency_links) within the component bound', () => {
    expect(buildAudit(inputs(0, 128)).counts.dependency_links).toBe(128);
    const over = inputs(0, 128, 1);
    expect(refusal(over)).toBe('verify_capacity_dependency_links');
  });

  it('an audit of exactly 16 MiB is published and read back by audit show; one byte more refuses (verify_capacity_audit_bytes, audit_not_found)', () => {
    const target = RECOVERY_LIMITS.savedAuditBytes;
    // About 16 MiB of private member names in the remainder component, then one name sized to land exactly.
    const names = Array.from(
      { length: 16_000 },
      (_, i) => `runtime-root/pad/${String(i).padStart(5, '0')}-${'n'.repeat(1000)}`,
    );
    const sized = (last: number): RecoveryAudit => {
      const i = inputs(0, 0);
      const files = [...i.extraction.files, ...names.map(file), file(`runtime-root/pad/z-${'n'.repeat(last)}`)];
      return buildAudit({ ...i, extraction: { ...i.extraction, files, members: files.length } });
    };
    const probe = auditBytes(sized(1000)).length;
    expect(probe).toBeLessThan(target);
    const exact = sized(1000 + target - probe);
    const bytes = publishableAuditBytes(exact);
    expect(bytes.length).toBe(target);
    const dest = join(fx.work, `audit-${fx.next()}`);
    mkdirSync(dest, { mode: 0o700 });
    writeFileSync(join(dest, AUDIT_FILE), bytes, { mode: 0o600 });
    expect(showAudit(dest).bytes.equals(bytes)).toBe(true);

    const over = sized(1001 + target - probe);
    expect(auditBytes(over).length).toBe(target + 1);
    expect(() => publishableAuditBytes(over)).toThrow(expect.objectContaining({ code: 'verify_capacity_audit_bytes' }));
    const overDest = join(fx.work, `audit-${fx.next()}`);
    mkdirSync(overDest, { mode: 0o700 });
    writeFileSync(join(overDest, AUDIT_FILE), auditBytes(over), { mode: 0o600 });
    expect(() => showAudit(overDest)).toThrow(expect.objectContaining({ code: 'audit_not_found' }));
  }, 60_000);
});

// ────────────────────────────────────────────────────────────────────────────────────────────
describe('byte-sized bounds', () => {
  const padEmbedded = (size: number): BuildOptions => ({
    embedded: { recordActual: true, bytes: (b) => Buffer.concat([b, Buffer.alloc(size - b.length, 0x20)]) },
  });

  it('an embedded manifest of exactly 16 MiB verifies; one byte more refuses (verify_capacity_manifest_bytes)', async () => {
    const ok = await verify(padEmbedded(16 * MiB));
    expect(ok.code).toBeUndefined();
    expect(readFileSync(join(ok.destination, 'workspace', 'manifest.json')).length).toBe(16 * MiB);
    expect((await verify(padEmbedded(16 * MiB + 1))).code).toBe('verify_capacity_manifest_bytes');
  }, 120_000);

  it('an owner worker answer of exactly 2 Mi characters is read; one character more refuses (verify_worker_failed)', async () => {
    const chars = RECOVERY_LIMITS.workerOutputChars;
    expect(chars).toBe(2 * MiB);
    const ok = await withEnv('LOOPX_TEST_WORKER_ANSWER_CHARS', String(chars), () => verify({}));
    expect(ok.code).toBeUndefined();
    const over = await withEnv('LOOPX_TEST_WORKER_ANSWER_CHARS', String(chars + 1), () => verify({}));
    expect(over.code).toBe('verify_worker_failed');
  }, 120_000);

  it('the streaming bounds apply from the first byte: 2,000 expanded bytes per compressed byte pass, one more refuses — long before 1 MiB is expanded', () => {
    const at = (expanded: number, compressed: number): string | undefined => {
      try {
        checkExpansion(expanded, compressed);
        return undefined;
      } catch (e) {
        return codeOf(e);
      }
    };
    expect(at(2_000, 1)).toBeUndefined();
    expect(at(2_001, 1)).toBe('verify_capacity_expansion_ratio');
    expect(at(2_000 * 300, 300)).toBeUndefined();
    expect(at(2_000 * 300 + 1, 300)).toBe('verify_capacity_expansion_ratio');
    expect(at(512 * MiB, 128 * MiB)).toBeUndefined();
    expect(at(512 * MiB + 1, 128 * MiB)).toBe('verify_capacity_expanded_bytes');
  });
});

// ────────────────────────────────────────────────────────────────────────────────────────────
describe('paths and links', () => {
  /** The directories a path needs (every proper prefix below runtime-root), then the file. */
  const withParents = (path: string): CorpusEntry[] => {
    const parts = path.split('/');
    const dirs = parts.slice(1, -1).map((_, i) => dirEntry(parts.slice(0, i + 2).join('/')));
    return [...dirs, fileEntry(path, 'x')];
  };
  const components = (n: number): string =>
    ['runtime-root', ...Array.from({ length: n - 2 }, () => 'd'), 'f'].join('/');
  /** runtime-root/ + four 200-character directories + a file name making `n` characters in all. */
  const chars = (n: number): string => {
    const dirs = `runtime-root/${Array.from({ length: 4 }, (_, i) => String(i).repeat(200)).join('/')}/`;
    return dirs + 'f'.repeat(n - dirs.length);
  };
  const componentBytes = (n: number): string => `runtime-root/${'é'.repeat(Math.floor(n / 2))}${'x'.repeat(n % 2)}`;
  /** `n` links, each to the next, the last to the goals directory: resolving the first follows n links. */
  const chain = (n: number): CorpusEntry[] =>
    Array.from({ length: n }, (_, i) => linkEntry(`runtime-root/l${i}`, i === n - 1 ? 'goals' : `l${i + 1}`));
  const add = (...extra: CorpusEntry[]): BuildOptions => ({ entries: [...fx.base.entries, ...extra] });

  it('the path shapes at their limits: 64 components, 1,024 characters, a 255-byte component', () => {
    expect(components(64).split('/').length).toBe(64);
    expect([...chars(1024)].length).toBe(1024);
    expect(Buffer.byteLength(componentBytes(255).split('/')[1]!)).toBe(255);
    expect(Buffer.byteLength(componentBytes(256).split('/')[1]!)).toBe(256);
  });

  it('each path limit + 1 refuses in the plan, before anything is written', async () => {
    expect(await planCode(add(...withParents(components(64))))).toBeUndefined();
    expect(await planCode(add(...withParents(components(65))))).toBe('verify_capacity_path_components');
    expect(await planCode(add(...withParents(chars(1024))))).toBeUndefined();
    expect(await planCode(add(...withParents(chars(1025))))).toBe('verify_capacity_path_chars');
    expect(await planCode(add(fileEntry(componentBytes(255), 'x')))).toBeUndefined();
    expect(await planCode(add(fileEntry(componentBytes(256), 'x')))).toBe('verify_capacity_path_component_bytes');
  });

  it('a chain of 40 symbolic links resolves; 41 refuse (verify_capacity_link_hops)', async () => {
    expect(await planCode(add(...chain(40)))).toBeUndefined();
    expect(await planCode(add(...chain(41)))).toBe('verify_capacity_link_hops');
  });

  it('an archive holding every path and link shape at its limit verifies and extracts them', async () => {
    const r = await verify(
      add(
        ...withParents(components(64)),
        ...withParents(chars(1024)),
        fileEntry(componentBytes(255), 'x'),
        ...chain(40),
      ),
    );
    expect(r.code).toBeUndefined();
    const ws = join(r.destination, 'workspace');
    for (const p of [components(64), chars(1024), componentBytes(255)])
      expect(existsSync(join(ws, p)), p.slice(0, 40)).toBe(true);
    expect(r.audit!.findings.filter((f) => f.code === 'member_symlink_inert').length).toBe(40);
  }, 60_000);
});

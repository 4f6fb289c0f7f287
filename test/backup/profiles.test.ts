/**
 * Capture profiles are evidence. Crash-consistent: refused while anything still runs on the root (a
 * held root lock, another process with a root file open); after writers were SIGKILLed mid-commit it
 * captures the exact durable bytes — WAL included — from one failure observation without cleaning
 * the source up, and the owners recover the copy. A required component its owner cannot capture is
 * an explicit hold, its raw bytes withheld, never silently optional.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { create, plan, type RecoverySetCapture } from '../../src/backup/index.js';
import { executeVerify } from '../../src/recovery/index.js';
import { commitWork, makeRoot, tempBase } from './support/fixtures.js';
import { buildCorpus, loadBase, replaceEntry, writeCorpus } from '../recovery/support/corpus.js';

const HOLDER = resolve(import.meta.dirname, 'support/holder.ts');
const WRITER = resolve(import.meta.dirname, 'support/work-writer.ts');

const children: ChildProcessWithoutNullStreams[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

/** Spawn a child and resolve once it printed a line matching `ready` (a latch, never a sleep). */
function spawnUntil(
  args: string[],
  ready: RegExp,
): Promise<{ child: ChildProcessWithoutNullStreams; lines: string[] }> {
  const child = spawn(process.execPath, ['--import', 'tsx', ...args]);
  children.push(child);
  const lines: string[] = [];
  return new Promise((res, rej) => {
    let buffered = '';
    child.stdout.on('data', (d: Buffer) => {
      buffered += d.toString();
      const parts = buffered.split('\n');
      buffered = parts.pop()!;
      lines.push(...parts);
      if (parts.some((l) => ready.test(l))) res({ child, lines });
    });
    child.on('exit', (code) => rej(new Error(`child exited (${code}) before it was ready`)));
  });
}

const sha = (p: string): string => createHash('sha256').update(readFileSync(p)).digest('hex');
const killed = (c: ChildProcessWithoutNullStreams): Promise<void> =>
  new Promise((res) => {
    c.once('exit', () => res());
    c.kill('SIGKILL');
  });

async function root(): Promise<{ base: string; root: string; out: string }> {
  const base = tempBase();
  const r = join(base, 'root');
  await makeRoot(r, { specials: false });
  return { base, root: r, out: join(base, 'out') };
}

describe('crash-consistent capture', () => {
  it('is refused while a process holds a lock of the root, and nothing is published', async () => {
    const { root: r, out } = await root();
    await spawnUntil([HOLDER, 'lock', join(r, 'locks', 'run_1.lock')], /^holding$/);
    await expect(
      create(plan(r, { outputDir: out, backupId: 'b' }), { profile: 'crash_consistent' }),
    ).rejects.toMatchObject({ code: 'backup_crash_source_live' });
    expect(existsSync(out) ? readdirSync(out) : []).toEqual([]);
  });

  it('is refused while another process has a file of the root open', async () => {
    const { root: r, out } = await root();
    await spawnUntil([HOLDER, 'open', join(r, 'goals', 'alpha', 'work.db')], /^holding$/);
    await expect(
      create(plan(r, { outputDir: out, backupId: 'b' }), { profile: 'crash_consistent' }),
    ).rejects.toMatchObject({ code: 'backup_crash_source_live' });
  });

  it('after a writer was SIGKILLed mid-commit: the exact durable bytes, WAL included, untouched at the source; the owners recover the copy', async () => {
    const { base, root: r, out } = await root();
    await commitWork(r, 'alpha', 50, { todoId: 't1' });
    const w = await spawnUntil([WRITER, r, 'alpha', 't1'], /^[1-9]\d*0$/);
    await killed(w.child);
    const written = Math.max(...w.lines.filter((l) => /^\d+$/.test(l)).map(Number));
    const wal = join(r, 'goals', 'alpha', 'work.db-wal');
    expect(existsSync(wal)).toBe(true);
    const before = { db: sha(join(r, 'goals', 'alpha', 'work.db')), wal: sha(wal) };

    const result = await create(plan(r, { outputDir: out, backupId: 'crash' }), { profile: 'crash_consistent' });
    // Nothing was cleaned up first: the source's database and its WAL are byte for byte what the crash left.
    expect({ db: sha(join(r, 'goals', 'alpha', 'work.db')), wal: sha(wal) }).toEqual(before);
    const set = result.manifest_doc.capture as RecoverySetCapture;
    expect(set).toMatchObject({
      requested_profile: 'crash_consistent',
      achieved_profile: 'crash_consistent',
      cross_owner_point_in_time: true,
      downgrades: [],
    });
    expect(set.failure_observation!.proof.other_processes_with_open_files).toBe(0);
    expect(set.failure_observation!.files.find((f) => f.path === 'goals/alpha/work.db-wal')).toMatchObject({
      path: 'goals/alpha/work.db-wal',
      size_bytes: readFileSync(wal).length,
      sha256: before.wal,
    });
    const work = result.manifest_doc.components!.find((c) => c.owner_kind === 'work' && c.goal_id === 'alpha')!;
    expect(work.achieved_profile).toBe('crash_consistent');
    // Every commit the writer reported before it died is in the recovered copy (25 fixture + 50 + the live ones).
    expect(work.cursor).toBeGreaterThanOrEqual(25 + 50 + written);

    // The observed bytes themselves are in the archive, under opaque names (a journal never beside its database).
    const walMember = set.failure_observation!.files.find((f) => f.path === 'goals/alpha/work.db-wal')!.archive_member;
    expect(result.manifest_doc.members).toContainEqual(
      expect.objectContaining({ path: walMember, origin: 'failure_observation', sha256: before.wal }),
    );
    // Each observed byte is archived once: only the database with its journal is carried beside the
    // owner's recovered copy; every other observed file is its component's member, byte for byte.
    const byPath = new Map(result.manifest_doc.members.map((m) => [m.path, m]));
    const opaque = set
      .failure_observation!.files.filter((f) => f.archive_member.startsWith('failure-observation/'))
      .map((f) => f.path);
    expect(opaque.sort()).toEqual(['goals/alpha/work.db', 'goals/alpha/work.db-wal']);
    const quota = set.failure_observation!.files.find((f) => f.path === 'sessions.db')!;
    expect(quota.archive_member).toBe('runtime-root/sessions.db');
    for (const f of set.failure_observation!.files) expect(byPath.get(f.archive_member)?.sha256, f.path).toBe(f.sha256);
    expect(
      result.manifest_doc.members.filter((m) => m.origin === 'failure_observation' && m.type === 'file'),
    ).toHaveLength(2);

    const v = await executeVerify({
      archive: join(out, result.archive.name),
      manifest: join(out, result.manifest.name),
      destination: join(base, 'dest'),
    });
    expect(v.audit.capture).toEqual({
      requested_profile: 'crash_consistent',
      achieved_profile: 'crash_consistent',
      producer_claim: 'crash_consistent',
    });
    const audited = v.audit.components.find((c) => c.component_id === work.component_id)!;
    expect(
      audited.verification,
      JSON.stringify({
        f: v.audit.findings.filter((f) => f.component === work.component_id),
        rb: audited.readback,
        w: [work.source_revision, work.cursor],
      }),
    ).toBe('verified');
    // The verifier replayed the owner's crash recovery from the observed bytes and reached the captured state.
    expect((audited.readback as { crash_recovery: unknown }).crash_recovery).toEqual({
      revision: work.source_revision,
      cursor: work.cursor,
      files: 2,
    });
    expect(
      v.audit.components.every(
        (c) => !c.archive_members.some((m) => m.startsWith('failure-observation')) || c.owner_kind !== 'unknown',
      ),
    ).toBe(true);
    expect([v.audit.phase, v.audit.activation_eligible, v.audit.execution_authority_granted]).toEqual([
      'audited',
      true,
      false,
    ]);

    // The same archive with its observed WAL cut in half: the replay no longer reaches the captured state.
    const damaged = await loadBase(join(out, result.archive.name), result.manifest_doc);
    const corpus = buildCorpus(damaged, {
      entries: replaceEntry(damaged.entries, walMember, (e) => ({
        ...e,
        data: e.data!.subarray(0, Math.floor(e.data!.length / 2)),
      })),
    });
    const pair = writeCorpus(join(base, 'damaged'), corpus);
    const bad = await executeVerify({
      archive: pair.archive,
      manifest: pair.manifest,
      destination: join(base, 'dest2'),
    });
    const codes = bad.audit.findings.filter((f) => f.component === work.component_id).map((f) => f.code);
    expect(codes).toEqual(expect.arrayContaining(['crash_observation_digest_mismatch', 'crash_recovery_mismatch']));
    expect(bad.audit.components.find((c) => c.component_id === work.component_id)!.verification).toBe('invalid');
    expect(bad.audit.activation_eligible).toBe(false);
  });
});

describe('crash-consistent capture of a cleanly stopped root', () => {
  it('archives every observed file once, as its component member, and the verifier takes their owner verification as the recovery', async () => {
    const { base, root: r, out } = await root();
    const result = await create(plan(r, { outputDir: out, backupId: 'stopped' }), { profile: 'crash_consistent' });
    const online = await create(plan(r, { outputDir: join(base, 'online'), backupId: 'online' }));
    const set = result.manifest_doc.capture as RecoverySetCapture;
    expect(set.achieved_profile).toBe('crash_consistent');
    // No database of a cleanly stopped root has a journal: nothing is carried under an opaque name.
    expect(set.failure_observation!.files.length).toBeGreaterThan(3);
    expect(set.failure_observation!.files.every((f) => f.archive_member === `runtime-root/${f.path}`)).toBe(true);
    expect(result.manifest_doc.members.some((m) => m.origin === 'failure_observation')).toBe(false);
    // The databases are archived as observed (the bytes the source holds), not as a second copy.
    const work = set.failure_observation!.files.find((f) => f.path === 'goals/alpha/work.db')!;
    expect(work.sha256).toBe(sha(join(r, 'goals', 'alpha', 'work.db')));
    // The archive carries no more than the online archive of the same root does (a few bytes of header at most).
    expect(result.manifest_doc.summary.logical_source_bytes).toBeLessThanOrEqual(
      online.manifest_doc.summary.logical_source_bytes + 4096,
    );

    const v = await executeVerify({
      archive: join(out, result.archive.name),
      manifest: join(out, result.manifest.name),
      destination: join(base, 'dest'),
    });
    expect([v.audit.phase, v.audit.activation_eligible]).toEqual(['audited', true]);
    const component = result.manifest_doc.components!.find((c) => c.owner_kind === 'work' && c.goal_id === 'alpha')!;
    const audited = v.audit.components.find((c) => c.component_id === component.component_id)!;
    expect(audited.verification).toBe('verified');
    expect((audited.readback as { crash_recovery: unknown }).crash_recovery).toEqual({
      revision: component.source_revision,
      cursor: component.cursor,
      files: 1,
    });

    // An observed database whose archived bytes were replaced: the digest no longer matches the observation.
    const damaged = await loadBase(join(out, result.archive.name), result.manifest_doc);
    const member = 'runtime-root/goals/alpha/work.db';
    const corpus = buildCorpus(damaged, {
      entries: replaceEntry(damaged.entries, member, (e) => ({
        ...e,
        data: Buffer.concat([e.data!, Buffer.alloc(4096)]),
      })),
    });
    const pair = writeCorpus(join(base, 'damaged'), corpus);
    const bad = await executeVerify({
      archive: pair.archive,
      manifest: pair.manifest,
      destination: join(base, 'dest2'),
    });
    expect(bad.audit.findings.filter((f) => f.component === component.component_id).map((f) => f.code)).toContain(
      'crash_observation_digest_mismatch',
    );
    expect(bad.audit.activation_eligible).toBe(false);
  });
});

describe('crash-consistent capture with an empty journal beside a database', () => {
  it('archives the database as its member (an empty journal holds nothing to recover) and the empty journal under an opaque name; the replay still agrees', async () => {
    const { base, root: r, out } = await root();
    writeFileSync(join(r, 'sessions.db-wal'), '');
    const result = await create(plan(r, { outputDir: out, backupId: 'empty-wal' }), { profile: 'crash_consistent' });
    const set = result.manifest_doc.capture as RecoverySetCapture;
    const byPath = new Map(set.failure_observation!.files.map((f) => [f.path, f]));
    expect(byPath.get('sessions.db')!.archive_member).toBe('runtime-root/sessions.db');
    expect(byPath.get('sessions.db-wal')).toMatchObject({ size_bytes: 0 });
    expect(byPath.get('sessions.db-wal')!.archive_member).toMatch(/^failure-observation\/\d{6}\.bin$/);
    expect(result.manifest_doc.members.some((m) => m.path === 'runtime-root/sessions.db-wal')).toBe(false);

    const v = await executeVerify({
      archive: join(out, result.archive.name),
      manifest: join(out, result.manifest.name),
      destination: join(base, 'dest'),
    });
    const session = v.audit.components.find((c) => c.owner_kind === 'session')!;
    expect(session.verification).toBe('verified');
    expect((session.readback as { crash_recovery: { files: number } }).crash_recovery.files).toBe(2);
    expect(v.audit.activation_eligible).toBe(true);
  });
});

describe('a required component its owner cannot capture', () => {
  it('is held with capture_component_unreadable, its raw bytes withheld, and its Goals are not offered for adoption', async () => {
    const { base, root: r, out } = await root();
    const corrupt = Buffer.alloc(8192, 0xab);
    Buffer.from('SQLite format 3\0', 'latin1').copy(corrupt);
    writeFileSync(join(r, 'quota.db'), corrupt);
    const result = await create(plan(r, { outputDir: out, backupId: 'b' }));
    const m = result.manifest_doc;
    expect(m.components!.find((c) => c.owner_kind === 'quota')).toMatchObject({
      state: 'unreadable',
      archive_members: [],
      downgrades: ['capture_component_unreadable'],
    });
    expect((m.capture as RecoverySetCapture).downgrades).toContainEqual(
      expect.objectContaining({ code: 'capture_component_unreadable', component_id: 'quota', severity: 'hold' }),
    );
    expect(m.members.some((x) => x.path === 'runtime-root/quota.db')).toBe(false);
    expect(m.missing).toContainEqual({
      key: 'member:quota.db',
      source_path: 'quota.db',
      reason: 'owner_capture_failed',
    });

    const v = await executeVerify({
      archive: join(out, result.archive.name),
      manifest: join(out, result.manifest.name),
      destination: join(base, 'dest'),
    });
    expect(v.audit.components.find((c) => c.component_id === 'quota')!.verification).toBe('missing');
    expect(v.audit.findings.filter((f) => f.code === 'goal_closure_incomplete').length).toBe(2);
    expect([v.audit.phase, v.audit.activation_eligible]).toEqual(['held', false]);
  });
});

describe("a registered Goal's store that is not there", () => {
  it('is missing (capture_component_missing, a hold), never a confirmed absence, and its closure is incomplete', async () => {
    const { base, root: r, out } = await root();
    rmSync(join(r, 'goals', 'beta', 'work.db'));
    const result = await create(plan(r, { outputDir: out, backupId: 'b' }));
    const work = result.manifest_doc.components!.find((c) => c.owner_kind === 'work' && c.goal_id === 'beta')!;
    expect([work.state, work.downgrades, work.archive_members]).toEqual(['missing', ['capture_component_missing'], []]);
    const v = await executeVerify({
      archive: join(out, result.archive.name),
      manifest: join(out, result.manifest.name),
      destination: join(base, 'dest'),
    });
    expect(v.audit.components.find((c) => c.component_id === work.component_id)!.verification).toBe('missing');
    expect(v.audit.findings).toContainEqual(
      expect.objectContaining({ code: 'goal_closure_incomplete', severity: 'hold', subject: work.component_id }),
    );
    // alpha's closure is whole: it is still offered; beta's is not.
    expect(v.audit.activation?.eligible_scopes).toEqual([
      result.manifest_doc.components!.find((c) => c.goal_id === 'alpha')!.logical_scope,
    ]);
  });
});

/**
 * The authority binds and retains the directory identity it validated (RFC 0007): renaming or
 * substituting the path after open — another directory, a symlink swap, a substituted
 * subdirectory, a planted symlink entry — cannot redirect authority state. Each attack must be
 * refused, and nothing may be read from or written into the substitute.
 */
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readFileSync,
  renameSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeEach, describe, expect, it } from 'vitest';
import type { LocalRunAuthority, RunLease } from '../../src/run-authority/index.js';
import { asyncCodeOf, cleanup, codeOf, open, record, snapshotTree, tempBase } from './support.js';

afterAll(cleanup);

const RECORD_V1 = record('run-1', {
  state: 'SUSPENDED',
  payloadSha256: 'aa'.repeat(32),
  claimHmac: 'bb'.repeat(32),
  keyGeneration: 1,
  lastSequence: 7,
});
const RECORD_V2 = record('run-1', { transitionGeneration: 2 });

/** An attacker-made directory laid out like an authority, with a record for run-1 of its own. */
function attackerDir(path: string): Record<string, string> {
  mkdirSync(path, { mode: 0o700 });
  for (const sub of ['keys', 'locks', 'runs']) mkdirSync(join(path, sub), { mode: 0o700 });
  writeFileSync(join(path, 'scope'), `${'cd'.repeat(32)}\n`, { mode: 0o600 });
  writeFileSync(join(path, 'keys', '1.key'), `${'ef'.repeat(32)}\n`, { mode: 0o600 });
  const forged = {
    schema: 'loopx.run-authority.record/v1',
    run_id: 'run-1',
    state: 'ACTIVE',
    transition_generation: 99,
    owner_root: 'attacker',
    updated_at: 'x',
  };
  writeFileSync(join(path, 'runs', 'run-1.json'), `${JSON.stringify(forged)}\n`, { mode: 0o600 });
  return snapshotTree(path);
}

/** Every operation that touches the disk must refuse with authority_dir_substituted. */
async function expectEveryOperationRefused(a: LocalRunAuthority, lease: RunLease): Promise<void> {
  expect(await asyncCodeOf(a.readRecord('run-1'))).toBe('authority_dir_substituted');
  expect(await asyncCodeOf(a.writeRecord(lease, RECORD_V2))).toBe('authority_dir_substituted');
  expect(codeOf(() => a.rotate())).toBe('authority_dir_substituted');
  expect(await asyncCodeOf(a.acquireRun('run-2'))).toBe('authority_dir_substituted');
  expect(a.currentKeyGeneration()).toBe(1); // the refused rotate added nothing
}

describe('renaming or replacing the authority directory after open', () => {
  let base: string;
  let dir: string;
  let moved: string;
  let a: LocalRunAuthority;
  let lease: RunLease;
  let originalBefore: Record<string, string>;

  beforeEach(async () => {
    base = tempBase();
    dir = join(base, 'authority');
    moved = join(base, 'authority.moved');
    a = open(dir);
    lease = (await a.acquireRun('run-1'))!;
    await a.writeRecord(lease, RECORD_V1);
    originalBefore = snapshotTree(dir);
  });

  it('a write made before the rename landed in the original object and travels with it', () => {
    renameSync(dir, moved);
    const onDisk = JSON.parse(readFileSync(join(moved, 'runs', 'run-1.json'), 'utf8'));
    expect(onDisk).toMatchObject({ run_id: 'run-1', state: 'SUSPENDED', transition_generation: 1, last_sequence: 7 });
    expect(snapshotTree(moved)).toEqual(originalBefore);
  });

  it('rename away + a fresh 0700 directory at the path: every operation is refused with authority_dir_substituted, the substitute is neither read nor written', async () => {
    renameSync(dir, moved);
    const substituteBefore = attackerDir(dir);
    await expectEveryOperationRefused(a, lease);
    expect(snapshotTree(dir)).toEqual(substituteBefore);
    expect(snapshotTree(moved)).toEqual(originalBefore);
  });

  it('rename away with nothing at the path: operations are refused with authority_dir_substituted', async () => {
    renameSync(dir, moved);
    await expectEveryOperationRefused(a, lease);
    expect(existsSync(dir)).toBe(false);
    expect(snapshotTree(moved)).toEqual(originalBefore);
  });

  it('a symlink at the path to the renamed original is refused (the path is now a symlink), though it resolves to the same object', async () => {
    renameSync(dir, moved);
    symlinkSync(moved, dir);
    expect(statSync(dir).ino).toBe(lstatSync(moved).ino); // same object through the link
    await expectEveryOperationRefused(a, lease);
    expect(snapshotTree(moved)).toEqual(originalBefore);
  });

  it('a symlink at the path to an attacker directory is refused, and the attacker directory is neither read nor written', async () => {
    renameSync(dir, moved);
    const attacker = join(base, 'attacker');
    const attackerBefore = attackerDir(attacker);
    symlinkSync(attacker, dir);
    await expectEveryOperationRefused(a, lease);
    expect(snapshotTree(attacker)).toEqual(attackerBefore);
    expect(snapshotTree(moved)).toEqual(originalBefore);
  });

  it('putting the original object back at the path makes the authority usable again (identity, not name, is what counts)', async () => {
    renameSync(dir, moved);
    expect(await asyncCodeOf(a.readRecord('run-1'))).toBe('authority_dir_substituted');
    renameSync(moved, dir);
    expect(await a.readRecord('run-1')).toEqual(RECORD_V1);
    await a.writeRecord(lease, RECORD_V2);
    expect(await a.readRecord('run-1')).toEqual(RECORD_V2);
  });
});

describe('substituting a subdirectory after open', () => {
  let base: string;
  let dir: string;
  let a: LocalRunAuthority;
  let lease: RunLease;

  beforeEach(async () => {
    base = tempBase();
    dir = join(base, 'authority');
    a = open(dir);
    lease = (await a.acquireRun('run-1'))!;
    await a.writeRecord(lease, RECORD_V1);
  });

  it('runs/ renamed away and replaced by a fresh 0700 directory: reads and writes of records are refused with authority_dir_substituted, the substitute untouched', async () => {
    renameSync(join(dir, 'runs'), join(base, 'runs.moved'));
    const forged = attackerDir(join(base, 'attacker'));
    renameSync(join(base, 'attacker', 'runs'), join(dir, 'runs'));
    const substituteBefore = snapshotTree(join(dir, 'runs'));
    expect(substituteBefore['run-1.json']).toBe(forged['runs/run-1.json']);
    expect(await asyncCodeOf(a.readRecord('run-1'))).toBe('authority_dir_substituted');
    expect(await asyncCodeOf(a.writeRecord(lease, RECORD_V2))).toBe('authority_dir_substituted');
    expect(snapshotTree(join(dir, 'runs'))).toEqual(substituteBefore);
    // The original runs/ object still holds the pre-attack record, unchanged.
    expect(JSON.parse(readFileSync(join(base, 'runs.moved', 'run-1.json'), 'utf8')).state).toBe('SUSPENDED');
  });

  it('runs/ replaced by a symlink to an attacker directory is refused with authority_dir_substituted', async () => {
    renameSync(join(dir, 'runs'), join(base, 'runs.moved'));
    attackerDir(join(base, 'attacker'));
    const before = snapshotTree(join(base, 'attacker'));
    symlinkSync(join(base, 'attacker', 'runs'), join(dir, 'runs'));
    expect(await asyncCodeOf(a.readRecord('run-1'))).toBe('authority_dir_substituted');
    expect(await asyncCodeOf(a.writeRecord(lease, RECORD_V2))).toBe('authority_dir_substituted');
    expect(snapshotTree(join(base, 'attacker'))).toEqual(before);
  });

  it('keys/ renamed away and replaced (with a planted 3.key): rotate and retire are refused with authority_dir_substituted and no key is written or adopted', () => {
    expect(a.rotate()).toBe(2);
    renameSync(join(dir, 'keys'), join(base, 'keys.moved'));
    mkdirSync(join(dir, 'keys'), { mode: 0o700 });
    writeFileSync(join(dir, 'keys', '3.key'), `${'11'.repeat(32)}\n`, { mode: 0o600 });
    const substituteBefore = snapshotTree(join(dir, 'keys'));
    const originalBefore = snapshotTree(join(base, 'keys.moved'));
    expect(codeOf(() => a.rotate())).toBe('authority_dir_substituted');
    expect(codeOf(() => a.retire(1))).toBe('authority_dir_substituted');
    expect(a.keyGenerations()).toEqual([1, 2].map((generation) => ({ generation, retired: false })));
    expect(snapshotTree(join(dir, 'keys'))).toEqual(substituteBefore);
    expect(snapshotTree(join(base, 'keys.moved'))).toEqual(originalBefore);
  });

  it('locks/ renamed away and replaced: acquireRun is refused with authority_dir_substituted and no lock file is created', async () => {
    renameSync(join(dir, 'locks'), join(base, 'locks.moved'));
    mkdirSync(join(dir, 'locks'), { mode: 0o700 });
    const originalBefore = snapshotTree(join(base, 'locks.moved'));
    expect(await asyncCodeOf(a.acquireRun('run-2'))).toBe('authority_dir_substituted');
    expect(snapshotTree(join(dir, 'locks'))).toEqual({});
    expect(snapshotTree(join(base, 'locks.moved'))).toEqual(originalBefore);
  });
});

describe('symlinks planted as entry names', () => {
  it('a symlink at runs/<run>.json to a file elsewhere: reading is refused with authority_entry_symlink; writing replaces the link atomically and leaves the target bytes unchanged', async () => {
    const base = tempBase();
    const dir = join(base, 'authority');
    const a = open(dir);
    const victim = join(base, 'victim.txt');
    writeFileSync(victim, 'precious bytes\n', { mode: 0o600 });
    symlinkSync(victim, join(dir, 'runs', 'run-1.json'));
    expect(await asyncCodeOf(a.readRecord('run-1'))).toBe('authority_entry_symlink');
    const lease = (await a.acquireRun('run-1'))!;
    await a.writeRecord(lease, RECORD_V1);
    expect(readFileSync(victim, 'utf8')).toBe('precious bytes\n');
    const st = lstatSync(join(dir, 'runs', 'run-1.json'));
    expect(st.isSymbolicLink()).toBe(false);
    expect(st.isFile()).toBe(true);
    expect(st.mode & 0o777).toBe(0o600);
    expect(await a.readRecord('run-1')).toEqual(RECORD_V1);
  });

  it('a symlink at runs/<run>.json to /etc/passwd is refused on read with authority_entry_symlink (nothing of the target is returned)', async () => {
    const dir = join(tempBase(), 'authority');
    const a = open(dir);
    const before = readFileSync('/etc/passwd');
    symlinkSync('/etc/passwd', join(dir, 'runs', 'run-1.json'));
    expect(await asyncCodeOf(a.readRecord('run-1'))).toBe('authority_entry_symlink');
    expect(readFileSync('/etc/passwd').equals(before)).toBe(true);
  });

  it('a symlink planted at locks/<run>.lock is refused with authority_entry_symlink and its target is neither created nor written', async () => {
    const base = tempBase();
    const dir = join(base, 'authority');
    const a = open(dir);
    const victim = join(base, 'victim.txt');
    writeFileSync(victim, 'precious bytes\n', { mode: 0o600 });
    symlinkSync(victim, join(dir, 'locks', 'run-1.lock'));
    symlinkSync(join(base, 'absent'), join(dir, 'locks', 'run-2.lock'));
    const code1 = await asyncCodeOf(a.acquireRun('run-1'));
    const code2 = await asyncCodeOf(a.acquireRun('run-2'));
    expect(readFileSync(victim, 'utf8')).toBe('precious bytes\n');
    expect(existsSync(join(base, 'absent'))).toBe(false);
    expect(code1).toBe('authority_entry_symlink');
    expect(code2).toBe('authority_entry_symlink');
  });

  it('run ids that are not single safe names are refused with run_id_invalid and reach no path', async () => {
    const base = tempBase();
    const a = open(join(base, 'authority'));
    expect(await asyncCodeOf(a.acquireRun('../../escape'))).toBe('run_id_invalid');
    expect(await asyncCodeOf(a.acquireRun(''))).toBe('run_id_invalid');
    expect(await a.readRecord('../scope')).toBeUndefined();
    expect(existsSync(join(base, 'escape.lock'))).toBe(false);
  });
});

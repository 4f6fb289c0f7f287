/**
 * Run leases and durable records of the local authority (RFC 0007): per-run flock leases exclude
 * other instances and processes, die with their process, and the lock files are never unlinked;
 * a record is a private file written atomically (write new, fsync, rename, fsync the directory) —
 * a process killed at the named fault points before or after the rename leaves either the old or
 * the new record, never a partial one. The contract cases (exclusive leases within one authority,
 * writes refused without the live lease, exact round trips) are in the conformance suite.
 */
import { chmodSync, existsSync, lstatSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { asyncCodeOf, cleanup, childWrite, modeOf, open, record, spawnHolder, tempBase } from './support.js';

afterAll(cleanup);

const inodeOf = (path: string): number => lstatSync(path).ino;

describe('run leases', () => {
  it('two authority instances on one directory exclude each other too', async () => {
    const dir = join(tempBase(), 'authority');
    const a = open(dir);
    const b = open(dir, false);
    const lease = (await a.acquireRun('run-1'))!;
    expect(await b.acquireRun('run-1')).toBeUndefined();
    await lease.release();
    expect(await b.acquireRun('run-1')).toBeDefined();
  });

  it('lock files are never unlinked: the same inode survives release and re-acquire', async () => {
    const dir = join(tempBase(), 'authority');
    const a = open(dir);
    await (await a.acquireRun('run-1'))!.release();
    const lockPath = join(dir, 'locks', 'run-1.lock');
    const ino = inodeOf(lockPath);
    expect(modeOf(lockPath)).toBe(0o600);
    await (await a.acquireRun('run-1'))!.release();
    expect(inodeOf(lockPath)).toBe(ino);
  });

  it('a lease held by a live child process excludes the parent; after SIGKILL of the child the parent acquires it, and the lock file is still the same one', async () => {
    const dir = join(tempBase(), 'authority');
    const a = open(dir); // creates the directory the child opens
    const holder = spawnHolder(dir, 'run-1');
    try {
      await holder.held; // latch: the child printed "held" after taking the lock
      const lockPath = join(dir, 'locks', 'run-1.lock');
      const ino = inodeOf(lockPath);
      expect(await a.acquireRun('run-1')).toBeUndefined();
      expect(await a.acquireRun('run-1')).toBeUndefined(); // still held: refusing does not steal or break it
      holder.child.kill('SIGKILL');
      expect(await holder.exited).toBe('SIGKILL');
      const lease = await a.acquireRun('run-1');
      expect(lease).toBeDefined();
      expect(existsSync(lockPath)).toBe(true);
      expect(inodeOf(lockPath)).toBe(ino);
      await lease!.release();
      expect(inodeOf(lockPath)).toBe(ino);
    } finally {
      holder.child.kill('SIGKILL');
    }
  });

  it('a lease held by the parent makes a child report the run busy', async () => {
    const dir = join(tempBase(), 'authority');
    const a = open(dir);
    const lease = (await a.acquireRun('run-1'))!;
    const holder = spawnHolder(dir, 'run-1');
    await expect(holder.held).rejects.toThrow(/before "held"/);
    await lease.release();
  });
});

describe('records', () => {
  it('a record is a 0600 regular file even under umask 0, clean writes leave no temp file, and another instance on the directory reads it exactly', async () => {
    const dir = join(tempBase(), 'authority');
    const a = open(dir);
    const lease = (await a.acquireRun('run-1'))!;
    const minimal = record('run-1');
    const full = record('run-1', {
      state: 'SUSPENDED',
      transitionGeneration: 4,
      payloadSha256: 'ab'.repeat(32),
      claimHmac: 'cd'.repeat(32),
      keyGeneration: 2,
      lastSequence: 41,
    });
    const previous = process.umask(0);
    try {
      await a.writeRecord(lease, minimal);
    } finally {
      process.umask(previous);
    }
    expect(await a.readRecord('run-1')).toStrictEqual(minimal);
    expect(modeOf(join(dir, 'runs', 'run-1.json'))).toBe(0o600);
    await a.writeRecord(lease, full);
    expect(await a.readRecord('run-1')).toStrictEqual(full);
    expect(readdirSync(join(dir, 'runs'))).toEqual(['run-1.json']); // no temp files left by clean writes
    // A second process sees the same record.
    expect(await open(dir, false).readRecord('run-1')).toStrictEqual(full);
  });

  it('a record file that is not private (0644) is refused with authority_entry_unsafe', async () => {
    const dir = join(tempBase(), 'authority');
    const a = open(dir);
    await a.writeRecord((await a.acquireRun('run-1'))!, record('run-1'));
    chmodSync(join(dir, 'runs', 'run-1.json'), 0o644);
    expect(await asyncCodeOf(a.readRecord('run-1'))).toBe('authority_entry_unsafe');
  });

  it('a corrupt record is refused with authority_record_corrupt, not treated as absent', async () => {
    const dir = join(tempBase(), 'authority');
    const a = open(dir);
    const lease = (await a.acquireRun('run-1'))!;
    await a.writeRecord(lease, record('run-1'));
    writeFileSync(join(dir, 'runs', 'run-1.json'), '{"schema":"loopx.run-authority.record/v1","run_id":"run-2"', {
      mode: 0o600,
    });
    expect(await asyncCodeOf(a.readRecord('run-1'))).toBe('authority_record_corrupt');
  });
});

describe('atomic record writes under a crash (child SIGKILLed at the named fault point)', () => {
  const OLD = record('run-1', { state: 'ACTIVE', transitionGeneration: 1, ownerRoot: 'root-a' });
  const NEW = record('run-1', {
    state: 'SUSPENDED',
    transitionGeneration: 1,
    ownerRoot: 'root-a',
    payloadSha256: 'ee'.repeat(32),
    claimHmac: 'ff'.repeat(32),
    keyGeneration: 1,
    lastSequence: 12,
  });

  const setup = async () => {
    const dir = join(tempBase(), 'authority');
    const a = open(dir);
    const lease = (await a.acquireRun('run-1'))!;
    await a.writeRecord(lease, OLD);
    await lease.release(); // the child takes the lease
    const oldBytes = readFileSync(join(dir, 'runs', 'run-1.json'));
    return { dir, a, oldBytes };
  };

  const recordFiles = (dir: string) => readdirSync(join(dir, 'runs')).filter((n) => !n.startsWith('.tmp-'));

  it('the fault hook is inert unless the switch names the point: the child completes the write', async () => {
    const { dir, a } = await setup();
    const r = childWrite(dir, NEW, 'x', 'x.some-other-point');
    expect(r.signal).toBeNull();
    expect(r.stdout).toContain('written');
    expect(await a.readRecord('run-1')).toStrictEqual(NEW);
  });

  it('killed before the rename: the previous record is intact (old bytes) and no partial record exists; the lease died with the child', async () => {
    const { dir, a, oldBytes } = await setup();
    const r = childWrite(dir, NEW, 'x', 'x.before-rename');
    expect(r.signal).toBe('SIGKILL');
    expect(r.stdout).not.toContain('written');
    expect(readFileSync(join(dir, 'runs', 'run-1.json')).equals(oldBytes)).toBe(true);
    expect(await a.readRecord('run-1')).toStrictEqual(OLD);
    expect(recordFiles(dir)).toEqual(['run-1.json']);
    const lease = await a.acquireRun('run-1');
    expect(lease).toBeDefined();
    await lease!.release();
  });

  it('killed after the rename: the new record is fully there and parses', async () => {
    const { dir, a } = await setup();
    const r = childWrite(dir, NEW, 'x', 'x.after-rename');
    expect(r.signal).toBe('SIGKILL');
    expect(r.stdout).not.toContain('written');
    expect(await a.readRecord('run-1')).toStrictEqual(NEW);
    expect(JSON.parse(readFileSync(join(dir, 'runs', 'run-1.json'), 'utf8'))).toMatchObject({
      state: 'SUSPENDED',
      last_sequence: 12,
    });
    expect(recordFiles(dir)).toEqual(['run-1.json']);
    expect(modeOf(join(dir, 'runs', 'run-1.json'))).toBe(0o600);
    const lease = await a.acquireRun('run-1');
    expect(lease).toBeDefined();
    await lease!.release();
  });
});

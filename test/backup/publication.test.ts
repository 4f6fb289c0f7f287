/**
 * Non-overwriting publication (RFC §7): occupied archive or manifest names are refused; the pair
 * is linked exclusively, manifest before archive; an interrupted attempt (a real process killed at
 * a named point) never deletes, replaces or completes over an existing pair.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BACKUP_FAULT_POINTS, create, plan, type CreateHooks } from '../../src/backup/index.js';
import { isLoopxError } from '../../src/core/errors.js';
import { makeRoot, readArchive, sha256File, tempBase } from './support/fixtures.js';

const CHILD = resolve(import.meta.dirname, 'support/create-child.ts');

async function setup() {
  const base = tempBase();
  const root = join(base, 'root');
  await makeRoot(root, { specials: false });
  return { root, out: join(base, 'out') };
}

function runChild(root: string, out: string, id: string, fault?: string) {
  return spawnSync(process.execPath, ['--import', 'tsx', CHILD, root, out, id], {
    env: { ...process.env, ...(fault ? { LOOPX_TEST_FAULT: fault } : {}) },
    encoding: 'utf8',
    timeout: 60_000,
  });
}

async function conflictOf(root: string, out: string, id: string, hooks: CreateHooks = {}) {
  try {
    await create(plan(root, { outputDir: out, backupId: id }), { hooks });
  } catch (e) {
    if (isLoopxError(e)) return { code: e.code, kind: e.kind, details: e.details };
    throw e;
  }
  throw new Error('create was expected to refuse');
}

/** The published files (a killed attempt's private staging directory is not one). */
const fingerprint = (out: string) =>
  Object.fromEntries(
    readdirSync(out)
      .filter((f) => !f.startsWith('.'))
      .map((f) => [f, sha256File(join(out, f))]),
  );

describe('backup publication never overwrites', () => {
  it('an occupied archive name is refused before capture and the occupying file is untouched', async () => {
    const { root, out } = await setup();
    await create(plan(root, { outputDir: out, backupId: 'first' }));
    writeFileSync(join(out, 'b.tar.gz'), 'someone else');
    const before = fingerprint(out);
    expect(await conflictOf(root, out, 'b')).toEqual({
      code: 'backup_destination_occupied',
      kind: 'conflict',
      details: { occupied: ['b.tar.gz'] },
    });
    expect(fingerprint(out)).toEqual(before); // no manifest of ours, no staging left
  });

  it('an occupied manifest name is refused', async () => {
    const { root, out } = await setup();
    await create(plan(root, { outputDir: out, backupId: 'first' }));
    writeFileSync(join(out, 'b.manifest.json'), '{}');
    const before = fingerprint(out);
    expect((await conflictOf(root, out, 'b')).code).toBe('backup_destination_occupied');
    expect(fingerprint(out)).toEqual(before);
  });

  it('a complete pair is never replaced by a second create with its id', async () => {
    const { root, out } = await setup();
    await create(plan(root, { outputDir: out, backupId: 'b' }));
    const before = fingerprint(out);
    writeFileSync(join(root, 'goals/alpha/docs/plan.md'), 'changed since');
    expect((await conflictOf(root, out, 'b')).details).toEqual({ occupied: ['b.tar.gz', 'b.manifest.json'] });
    expect(fingerprint(out)).toEqual(before);
  });

  it('an archive name taken during capture: the manifest this attempt linked is withdrawn, the other file untouched', async () => {
    const { root, out } = await setup();
    const r = await conflictOf(root, out, 'b', {
      beforePublish: () => writeFileSync(join(out, 'b.tar.gz'), 'raced in'),
    });
    expect(r).toMatchObject({ code: 'backup_destination_occupied', details: { occupied: ['b.tar.gz'] } });
    expect(readdirSync(out)).toEqual(['b.tar.gz']);
    expect(readFileSync(join(out, 'b.tar.gz'), 'utf8')).toBe('raced in');
  });

  it('a manifest name taken during capture: nothing of this attempt is published', async () => {
    const { root, out } = await setup();
    const r = await conflictOf(root, out, 'b', {
      beforePublish: () => writeFileSync(join(out, 'b.manifest.json'), 'raced in'),
    });
    expect(r).toMatchObject({ code: 'backup_destination_occupied', details: { occupied: ['b.manifest.json'] } });
    expect(readdirSync(out)).toEqual(['b.manifest.json']);
    expect(readFileSync(join(out, 'b.manifest.json'), 'utf8')).toBe('raced in');
  });

  it('killed before publication: nothing is published, and the names stay free', async () => {
    const { root, out } = await setup();
    const killed = runChild(root, out, 'b', BACKUP_FAULT_POINTS.beforePublish);
    expect(killed.signal).toBe('SIGKILL');
    expect(readdirSync(out).filter((f) => !f.startsWith('.'))).toEqual([]);
    const retried = runChild(root, out, 'b');
    expect(retried.status, retried.stderr).toBe(0);
    expect(
      readdirSync(out)
        .filter((f) => !f.startsWith('.'))
        .sort(),
    ).toEqual(['b.manifest.json', 'b.tar.gz']);
  });

  it('killed between the manifest and the archive link: the partial pair is neither deleted nor completed by a retry', async () => {
    const { root, out } = await setup();
    expect(runChild(root, out, 'earlier').status).toBe(0);
    const earlier = fingerprint(out);
    const killed = runChild(root, out, 'b', BACKUP_FAULT_POINTS.afterManifestLink);
    expect(killed.signal).toBe('SIGKILL');
    // The killed attempt's staging directory stays behind, private; nothing removes it implicitly.
    const staging = readdirSync(out).filter((f) => f.startsWith('.b.staging-'));
    expect(staging).toHaveLength(1);
    expect(statSync(join(out, staging[0]!)).mode & 0o777).toBe(0o700);
    const visible = () =>
      readdirSync(out)
        .filter((f) => !f.startsWith('.'))
        .sort();
    expect(visible()).toEqual(['b.manifest.json', 'earlier.manifest.json', 'earlier.tar.gz']); // manifest first, archive never
    const partial = sha256File(join(out, 'b.manifest.json'));
    const retried = runChild(root, out, 'b');
    expect(retried.status).not.toBe(0);
    expect(retried.stderr).toContain('backup_destination_occupied');
    expect(visible()).toEqual(['b.manifest.json', 'earlier.manifest.json', 'earlier.tar.gz']);
    expect(sha256File(join(out, 'b.manifest.json'))).toBe(partial);
    for (const [f, sha] of Object.entries(earlier)) expect(sha256File(join(out, f))).toBe(sha);
    // A fresh id publishes normally beside them.
    expect(runChild(root, out, 'c').status).toBe(0);
  });

  it('killed right after the archive link: the pair is complete and verifiable, and a retry is refused', async () => {
    const { root, out } = await setup();
    const killed = runChild(root, out, 'b', BACKUP_FAULT_POINTS.afterArchiveLink);
    expect(killed.signal).toBe('SIGKILL');
    const manifest = JSON.parse(readFileSync(join(out, 'b.manifest.json'), 'utf8'));
    expect(sha256File(join(out, 'b.tar.gz'))).toBe(manifest.execution.archive_sha256);
    expect((await readArchive(join(out, 'b.tar.gz'))).at(-1)!.name).toBe('manifest.json');
    const before = fingerprint(out);
    const retried = runChild(root, out, 'b');
    expect(retried.status).not.toBe(0);
    expect(retried.stderr).toContain('backup_destination_occupied');
    expect(fingerprint(out)).toEqual(before);
  });
});

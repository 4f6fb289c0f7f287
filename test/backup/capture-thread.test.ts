/**
 * The v1 set capture runs on its own thread while the archive streams. What crosses back is what
 * the capture said on any thread: a typed refusal keeps its code, kind and next action; a system
 * error keeps its errno code (a full disk stays the capacity refusal); a failure leaves nothing
 * published and no staging behind; back-to-back backups each start a new thread (one process,
 * several threads — the lock addon is never loaded on one); and a component's export precedes
 * its databases in the archive, so verification reads them together.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { create, plan } from '../../src/backup/index.js';
import { deserializeError, serializeError } from '../../src/backup/capture-thread.js';
import { BACKUP_CAPTURE_FAULT } from '../../src/backup/set-capture.js';
import { LoopxError, isLoopxError } from '../../src/core/index.js';
import { THROW_FAULT_PREFIX } from '../../src/core/faults.js';
import { makeRoot, readArchive, tempBase } from './support/fixtures.js';

afterEach(() => {
  delete process.env.LOOPX_TEST_FAULT;
});

describe('errors from the capture thread', () => {
  it('a typed refusal comes back with its code, kind, next action and details', () => {
    const e = deserializeError(
      serializeError(
        new LoopxError('rejected', 'owner_export_capacity_exceeded', 'Too many.', {
          nextAction: 'split it',
          details: { records: 3 },
        }),
      ),
    );
    expect(isLoopxError(e)).toBe(true);
    expect(e).toMatchObject({
      kind: 'rejected',
      code: 'owner_export_capacity_exceeded',
      message: 'Too many.',
      nextAction: 'split it',
      details: { records: 3 },
    });
  });

  it('a system error keeps its errno code; a full disk anywhere in its causes is ENOSPC', () => {
    expect(deserializeError(serializeError(Object.assign(new Error('io'), { code: 'EIO' })))).toMatchObject({
      code: 'EIO',
      message: 'io',
    });
    const wrapped = new Error('snapshot failed', { cause: Object.assign(new Error('full'), { code: 'ENOSPC' }) });
    expect(deserializeError(serializeError(wrapped))).toMatchObject({ code: 'ENOSPC' });
  });
});

describe('a v1 backup captured on its own thread', () => {
  it('a failure on the thread is the caller’s error; nothing is published and the staging is gone', async () => {
    const base = tempBase();
    const root = join(base, 'root');
    await makeRoot(root, { specials: false });
    process.env.LOOPX_TEST_FAULT = `${THROW_FAULT_PREFIX}${BACKUP_CAPTURE_FAULT}`;
    const out = join(base, 'out');
    const err = await create(plan(root, { outputDir: out, backupId: 'fails' })).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'EIO' });
    expect(existsSync(out) ? readdirSync(out) : []).toEqual([]);
  });

  it('back-to-back backups in one process each capture on a new thread; every export precedes its databases', async () => {
    const base = tempBase();
    const root = join(base, 'root');
    await makeRoot(root, { specials: false });
    for (const id of ['one', 'two', 'three']) {
      const r = await create(plan(root, { outputDir: join(base, 'out'), backupId: id }));
      const names = (await readArchive(join(base, 'out', r.archive.name))).map((e) => e.name);
      for (const c of r.manifest_doc.components!.filter((x) => x.state === 'captured')) {
        const at = names.indexOf(c.export_member!);
        expect(at, c.component_id).toBeGreaterThanOrEqual(0);
        for (const m of c.archive_members.filter((x) => x.endsWith('.db')))
          expect(names.indexOf(m), m).toBeGreaterThan(at);
      }
      expect(names.at(-1)).toBe('manifest.json');
    }
  });
});

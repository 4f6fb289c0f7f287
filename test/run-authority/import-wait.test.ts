/**
 * An importer waits for a competing import of the same run by polling its import lock — never a
 * blocking flock that would hold a thread-pool thread — so the wait is bounded (`import_busy`)
 * and shutdown ends it at once (`authority_shutting_down`).
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { openRunAuthority, type RunRecord } from '../../src/run-authority/index.js';
import { spawnImporter } from './support.js';

const record = (runId: string): RunRecord => ({
  runId,
  state: 'SUSPENDED',
  transitionGeneration: 1,
  ownerRoot: 'root_a',
  updatedAt: '',
});

const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: { code?: string }) => e.code ?? String(e),
  );

describe('waiting for a competing importer', () => {
  it('is bounded: import_busy (a conflict) while the other importer holds the lock, then the lock is taken once it has finished', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'loopx-import-wait-')), 'authority');
    await openRunAuthority({ dir, create: true }).close();
    const competitor = spawnImporter(dir, record('run_wait'));
    const authority = openRunAuthority({ dir, importWaitMs: 300 });
    try {
      await competitor.held;
      const busy = await authority.beginImport('run_wait').catch((e: unknown) => e);
      expect(busy).toMatchObject({
        code: 'import_busy',
        kind: 'conflict',
        nextAction: 'run the same import again once the other one has finished',
      });
      competitor.finish();
      expect(await competitor.exited).toBe(0);
      const lease = await authority.beginImport('run_wait');
      await lease.release();
    } finally {
      competitor.child.kill('SIGKILL');
      await authority.close();
    }
  });

  it('ends when shutdown begins: authority_shutting_down, and the shutdown does not wait for the waiter', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'loopx-import-wait-')), 'authority');
    await openRunAuthority({ dir, create: true }).close();
    const competitor = spawnImporter(dir, record('run_stop'));
    const authority = openRunAuthority({ dir });
    try {
      await competitor.held;
      const waiting = codeOf(authority.beginImport('run_stop'));
      await authority.close();
      expect(await waiting).toBe('authority_shutting_down');
    } finally {
      competitor.child.kill('SIGKILL');
    }
  });
});

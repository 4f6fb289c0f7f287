/** The owner-side commit loop every storage port shares (src/owners/port.ts): outcomes become answers or typed refusals. */
import { describe, expect, it } from 'vitest';
import { MAX_COMMIT_ATTEMPTS, decideAndCommit, type CommitResult } from '../../src/owners/port.js';
import { rejectionOf } from './conformance/support.js';

const deciding = (landed = false) => {
  let reads = 0;
  return {
    reads: () => reads,
    decide: async () => {
      reads++;
      return { result: 'answer', write: { n: reads }, landed: async () => landed };
    },
  };
};

describe('decideAndCommit', () => {
  it('a decision without a write is its answer and commits nothing', async () => {
    let commits = 0;
    expect(
      await decideAndCommit(
        'test',
        async () => (commits++, { status: 'applied' }),
        async () => ({ result: 'readback' }),
      ),
    ).toBe('readback');
    expect(commits).toBe(0);
  });

  it('a conflict re-reads and re-decides; writers that keep winning end in store_commit_contention', async () => {
    const d = deciding();
    let left = 2;
    expect(
      await decideAndCommit(
        'test',
        async (): Promise<CommitResult> =>
          left-- > 0 ? { status: 'conflict', reason: 'changed' } : { status: 'applied' },
        d.decide,
      ),
    ).toBe('answer');
    expect(d.reads()).toBe(3);
    const always = deciding();
    const e = await rejectionOf(() =>
      decideAndCommit('test', async () => ({ status: 'conflict', reason: 'changed' }), always.decide),
    );
    expect(e).toMatchObject({
      code: 'store_commit_contention',
      kind: 'conflict',
      details: { owner: 'test', attempts: MAX_COMMIT_ATTEMPTS },
    });
    expect(always.reads()).toBe(MAX_COMMIT_ATTEMPTS);
  });

  it('an ambiguous commit is applied when the readback shows the write, store_outcome_unproved when it does not', async () => {
    expect(await decideAndCommit('test', async () => ({ status: 'ambiguous' }), deciding(true).decide)).toBe('answer');
    const e = await rejectionOf(() =>
      decideAndCommit('test', async () => ({ status: 'ambiguous' }), deciding(false).decide),
    );
    expect(e).toMatchObject({ code: 'store_outcome_unproved', details: { owner: 'test' } });
    expect(e.nextAction).toBeTruthy();
  });

  it('a failed commit is store_commit_failed carrying the provider code', async () => {
    const e = await rejectionOf(() =>
      decideAndCommit('test', async () => ({ status: 'failed', code: 'provider_busy' }), deciding().decide),
    );
    expect(e).toMatchObject({
      code: 'store_commit_failed',
      details: { owner: 'test', provider_code: 'provider_busy' },
    });
  });
});

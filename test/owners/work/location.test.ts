/**
 * The work owner's record of where one Goal's work lives (`goals/<goal_id>/work-store.json`):
 * written only for a choice that differs from the root's, by URL reference and never the URL; a
 * pending choice (the Goal not made yet) keeps its schema and row key when asked again; an
 * existing Goal's provider is never changed; a record this loopx does not read is refused, never
 * taken for the root's default.
 */
import { chmodSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LAYOUT, work } from '../../../src/owners/index.js';
import { tempDir } from './support.js';

const REF = 'env:LOOPX_TEST_LOCATION_URL';
let root: string;

beforeEach(() => {
  root = tempDir();
  chmodSync(root, 0o700);
  process.env.LOOPX_TEST_LOCATION_URL = 'postgres://someone:not-a-real-password-51aa@127.0.0.1:5432/test';
});
afterEach(() => {
  delete process.env.LOOPX_TEST_LOCATION_URL;
});

const codeOf = (fn: () => unknown): string | undefined => {
  try {
    fn();
  } catch (e) {
    return (e as { code?: string }).code;
  }
  return undefined;
};
const recordPath = (goalId: string) => join(root, LAYOUT.workStoreLocation(goalId));

describe('a Goal’s work location', () => {
  it('is not recorded when it is the root’s, and is recorded by reference when it differs', () => {
    expect(work.settleGoalWorkLocation(root, 'a', undefined, { exists: false })).toEqual({ provider: 'sqlite' });
    expect(work.settleGoalWorkLocation(root, 'a', { provider: 'sqlite' }, { exists: false })).toEqual({
      provider: 'sqlite',
    });
    expect(existsSync(recordPath('a'))).toBe(false);

    const pg = work.settleGoalWorkLocation(root, 'b', { provider: 'postgresql', database_url: REF }, { exists: false });
    expect(pg).toMatchObject({
      provider: 'postgresql',
      database_url: REF,
      schema: expect.stringMatching(/^loopx_[0-9a-f]{12}$/),
      store_key: expect.stringMatching(/^b~[0-9a-f]{12}$/),
    });
    const text = readFileSync(recordPath('b'), 'utf8');
    expect(text).toContain(REF);
    expect(text).not.toContain('not-a-real-password');
    expect(work.recordedWorkLocations(root)).toEqual([{ goal_id: 'b', location: pg }]);
  });

  it('keeps a pending choice’s schema and row key when asked again, and drops it for the root’s', () => {
    const first = work.settleGoalWorkLocation(
      root,
      'g',
      { provider: 'postgresql', database_url: REF },
      { exists: false },
    );
    expect(
      work.settleGoalWorkLocation(root, 'g', { provider: 'postgresql', database_url: REF }, { exists: false }),
    ).toEqual(first);
    const named = work.settleGoalWorkLocation(
      root,
      'g',
      { provider: 'postgresql', database_url: REF, schema: 'loopx_other' },
      { exists: false },
    );
    expect(named).toMatchObject({ schema: 'loopx_other' });
    expect(named).not.toEqual(first);
    expect(work.settleGoalWorkLocation(root, 'g', undefined, { exists: false })).toEqual({ provider: 'sqlite' });
    expect(existsSync(recordPath('g'))).toBe(false);
  });

  it('never changes for a Goal that exists', () => {
    const pg = work.settleGoalWorkLocation(
      root,
      'g',
      { provider: 'postgresql', database_url: REF, schema: 'loopx_s' },
      { exists: false },
    );
    expect(work.settleGoalWorkLocation(root, 'g', undefined, { exists: true })).toEqual(pg);
    expect(work.settleGoalWorkLocation(root, 'g', { provider: 'postgresql' }, { exists: true })).toEqual(pg);
    expect(codeOf(() => work.settleGoalWorkLocation(root, 'g', { provider: 'sqlite' }, { exists: true }))).toBe(
      'work_provider_change_refused',
    );
    expect(
      codeOf(() =>
        work.settleGoalWorkLocation(root, 'g', { provider: 'postgresql', schema: 'loopx_t' }, { exists: true }),
      ),
    ).toBe('work_provider_change_refused');
    // A Goal with no record has its root's: asking it for PostgreSQL is a change too.
    expect(
      codeOf(() =>
        work.settleGoalWorkLocation(root, 'h', { provider: 'postgresql', database_url: REF }, { exists: true }),
      ),
    ).toBe('work_provider_change_refused');
    expect(existsSync(recordPath('h'))).toBe(false);
  });

  it('refuses, before recording anything, PostgreSQL without a URL reference on a SQLite root, an unset variable or a bad schema name', () => {
    expect(codeOf(() => work.settleGoalWorkLocation(root, 'g', { provider: 'postgresql' }, { exists: false }))).toBe(
      'database_url_required',
    );
    expect(
      codeOf(() =>
        work.settleGoalWorkLocation(
          root,
          'g',
          { provider: 'postgresql', database_url: 'env:LOOPX_TEST_UNSET_VARIABLE' },
          { exists: false },
        ),
      ),
    ).toBe('database_url_missing');
    expect(
      codeOf(() =>
        work.settleGoalWorkLocation(
          root,
          'g',
          { provider: 'postgresql', database_url: REF, schema: 'Bad-Name' },
          { exists: false },
        ),
      ),
    ).toBe('pg_schema_name_invalid');
    expect(existsSync(recordPath('g'))).toBe(false);
  });

  it('refuses a record it does not read — a URL written inline, an unknown field, another Goal’s row key — rather than take the root’s', () => {
    const pg = work.settleGoalWorkLocation(
      root,
      'g',
      { provider: 'postgresql', database_url: REF, schema: 'loopx_s' },
      { exists: false },
    );
    const base = { schema_version: work.WORK_LOCATION_SCHEMA, ...pg };
    for (const bad of [
      { ...base, database_url: 'postgres://someone@127.0.0.1/test' },
      { ...base, extra: true },
      { ...base, store_key: 'other~0123456789ab' },
      { ...base, schema_version: 'loopx_work_store_location_v9' },
    ]) {
      writeFileSync(recordPath('g'), JSON.stringify(bad));
      expect(
        codeOf(() => work.recordedWorkLocations(root)),
        JSON.stringify(bad),
      ).toBe('work_store_location_invalid');
      expect(codeOf(() => work.settleGoalWorkLocation(root, 'g', undefined, { exists: true }))).toBe(
        'work_store_location_invalid',
      );
    }
  });
});

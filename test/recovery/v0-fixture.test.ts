/**
 * Dual-read of the archives loopx already made: a v0 backup produced by the previous producer
 * (test/fixtures/v0, made before the owners had one recovery contract — a root with two Goals,
 * a Goal work run, a spend, a timer and a stray file) still verifies, and its audit is the one
 * that producer's verifier wrote, apart from the per-audit keyed labels and the durations.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { AUDIT_FILE, type RecoveryAudit } from '../../src/recovery/index.js';
import { REPO, loopxAsync } from '../support/cli.js';
import { normalizeAudit } from './support/normalize-audit.js';

const FIXTURE = join(REPO, 'test/fixtures/v0');

describe('a v0 archive made by the previous producer', () => {
  it('verifies with the audit its own verifier wrote (labels and durations aside)', async () => {
    const dest = join(mkdtempSync(join(tmpdir(), 'loopx-v0-')), 'dest');
    const r = await loopxAsync([
      'backup-state',
      'verify',
      '--archive',
      join(FIXTURE, 'v0-fixture.tar.gz'),
      '--manifest',
      join(FIXTURE, 'v0-fixture.manifest.json'),
      '--destination',
      dest,
      '--execute',
      '--json',
    ]);
    expect(r.status, r.stderr).toBe(0);
    const audit = JSON.parse(readFileSync(join(dest, AUDIT_FILE), 'utf8')) as RecoveryAudit;
    const expected = JSON.parse(readFileSync(join(FIXTURE, 'expected-audit.json'), 'utf8')) as unknown;
    expect(normalizeAudit(audit)).toEqual(expected);
  });
});

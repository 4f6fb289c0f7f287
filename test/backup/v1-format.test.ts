/**
 * The published v1 formats cannot drift: the owner-export test vector is what the one export
 * builder writes and what the offline checker accepts (and a changed record is caught), and the
 * committed v1 manifest schema is what its generator derives from the v0 schema.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/core/index.js';
import { MACHINE, verifyExport } from '../../src/owners/index.js';
import { buildExport } from '../../src/owners/export.js';
import { REPO } from '../support/cli.js';

const vector = JSON.parse(readFileSync(join(REPO, 'docs/test-vectors/owner-export-v0.json'), 'utf8')) as {
  header: Parameters<typeof buildExport>[0];
  items: unknown[];
  file_lines: string[];
  content_digest: string;
};

describe('the owner-export test vector', () => {
  it('is what the export builder writes, line for line, with its content digest', () => {
    const built = buildExport(vector.header, vector.items, 1_000);
    expect(built.records.map((r) => canonicalJson(r))).toEqual(vector.file_lines);
    expect(built.sha256).toBe(vector.content_digest);
    expect(createHash('sha256').update(vector.file_lines.at(-1)!).digest('hex')).toBe(vector.content_digest);
  });

  it('verifies offline, and one changed item breaks the chain', () => {
    const records = vector.file_lines.map((l) => JSON.parse(l) as unknown);
    const expect_ = {
      schema: vector.header.schema_version,
      owner: vector.header.owner,
      scope: MACHINE,
      maxItems: 1_000,
    };
    const ok = verifyExport(records, expect_);
    expect([ok.findings, ok.sha256]).toEqual([[], vector.content_digest]);
    const changed = structuredClone(records) as Array<{ value?: { value?: { name?: string } } }>;
    changed[2]!.value!.value!.name = 'Another';
    expect(verifyExport(changed, expect_).findings.map((f) => f.code)).toContain('owner_export_seal_mismatch');
  });
});

describe('the v1 manifest schema', () => {
  it('is what scripts/manifest-v1-schema.mjs derives from the v0 schema', () => {
    expect(() =>
      execFileSync(process.execPath, [join(REPO, 'scripts/manifest-v1-schema.mjs'), '--check'], { stdio: 'pipe' }),
    ).not.toThrow();
  });
});

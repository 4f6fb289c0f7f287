/**
 * The verifier's manifest validators are generated ahead of time (scripts/manifest-validators.mjs,
 * Ajv standalone code) from the published schemas: they must be what the script writes from the
 * schemas as they are now, and refuse what a validator compiled from the schema refuses.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { describe, expect, it } from 'vitest';
import { validate as validateV1 } from '../../src/recovery/gen/manifest-v1.js';
import { REPO } from '../support/cli.js';

describe('the generated manifest validators', () => {
  it('are what scripts/manifest-validators.mjs writes from docs/schemas', () => {
    expect(() =>
      execFileSync(process.execPath, [join(REPO, 'scripts/manifest-validators.mjs'), '--check'], { stdio: 'pipe' }),
    ).not.toThrow();
  });

  it('report the first error a validator compiled from the schema at run time reports', () => {
    const schema = JSON.parse(
      readFileSync(join(REPO, 'docs/schemas/state-backup-manifest-v1.schema.json'), 'utf8'),
    ) as object;
    const compiled = new Ajv2020({ strict: true, allErrors: false }).compile(schema);
    for (const doc of [
      {},
      { schema_version: 'loopx_state_backup_v1' },
      { schema_version: 'loopx_state_backup_v1', backup_id: 7 },
      [],
    ]) {
      const generated = validateV1 as unknown as typeof compiled;
      expect(generated(doc)).toBe(compiled(doc));
      expect(generated.errors?.[0]).toEqual(compiled.errors?.[0]);
    }
  });
});

/**
 * The UI's audit, job and workspace types are generated from the published JSON Schemas
 * (`npm run schemas:types`, scripts/schema-types.mjs) and committed: regenerated into a scratch
 * directory, they must equal the committed files byte for byte, so a schema change that is not
 * regenerated — or a hand edit of a generated file — fails here.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { generate, OUT_DIR, TYPES } from '../../scripts/schema-types.mjs';

const scratch = mkdtempSync(join(tmpdir(), 'loopx-schema-types-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('generated UI types', () => {
  it('the committed ui/src/generated/ files are what the schemas generate now', async () => {
    const written = await generate(scratch);
    expect(written.sort()).toEqual(Object.keys(TYPES).sort());
    // Nothing stale or hand-made beside them either.
    expect(readdirSync(OUT_DIR).sort()).toEqual(written);
    for (const file of written)
      expect(readFileSync(join(OUT_DIR, file), 'utf8'), file).toBe(readFileSync(join(scratch, file), 'utf8'));
  });
});

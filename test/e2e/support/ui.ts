/**
 * What every browser test builds and keeps: the UI's production bundle, as `npm run build` makes
 * it (vitest sets NODE_ENV=test, which would select React's development build), and the folder
 * screenshots go to — docs/screenshots/ only when asked (`LOOPX_SCREENSHOTS=1`), else a scratch one.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'vite';
import { REPO } from '../../support/cli.js';

export const SCREENSHOTS = process.env.LOOPX_SCREENSHOTS === '1' ? join(REPO, 'docs', 'screenshots') : mkdtempSync(join(tmpdir(), 'loopx-e2e-shots-'));

/** Builds the UI into `outDir` (default: a new temporary folder) and returns it. */
export async function buildUi(outDir: string = mkdtempSync(join(tmpdir(), 'loopx-e2e-ui-'))): Promise<string> {
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  try {
    await build({ configFile: join(REPO, 'ui', 'vite.config.ts'), root: join(REPO, 'ui'), mode: 'production', logLevel: 'warn', build: { outDir, emptyOutDir: true } });
  } finally {
    process.env.NODE_ENV = nodeEnv;
  }
  return outDir;
}

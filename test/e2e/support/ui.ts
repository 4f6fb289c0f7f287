/**
 * What every browser test builds and keeps: the UI's production bundle, as `npm run build` makes
 * it (vitest sets NODE_ENV=test, which would select React's development build), and the folder
 * screenshots go to — docs/screenshots/ only when asked (`LOOPX_SCREENSHOTS=1`), else a scratch one;
 * and, for a test that needs nothing else, a daemon serving it with a browser signed in.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { build } from 'vite';
import { startDaemon, type RunningDaemon } from '../../../src/daemon/index.js';
import { REPO } from '../../support/cli.js';
import { launchBrowser, type BrowserSession } from './browser.js';

export const SCREENSHOTS =
  process.env.LOOPX_SCREENSHOTS === '1'
    ? join(REPO, 'docs', 'screenshots')
    : mkdtempSync(join(tmpdir(), 'loopx-e2e-shots-'));

/** Builds the UI into `outDir` (default: a new temporary folder) and returns it. */
export async function buildUi(outDir: string = mkdtempSync(join(tmpdir(), 'loopx-e2e-ui-'))): Promise<string> {
  const nodeEnv = process.env.NODE_ENV;
  process.env.NODE_ENV = 'production';
  try {
    await build({
      configFile: join(REPO, 'ui', 'vite.config.ts'),
      root: join(REPO, 'ui'),
      mode: 'production',
      logLevel: 'warn',
      build: { outDir, emptyOutDir: true },
    });
  } finally {
    process.env.NODE_ENV = nodeEnv;
  }
  return outDir;
}

/** A daemon on `root` serving a freshly built UI, and a browser signed in to it (on the Backup & recovery page). */
export interface SignedInDaemon {
  readonly daemon: RunningDaemon;
  readonly session: BrowserSession;
  /** Close the browser and the daemon, and remove the built UI. */
  close(): Promise<void>;
}

export async function signedInDaemon(root: string, authorityDir: string): Promise<SignedInDaemon> {
  const uiDir = await buildUi();
  const daemon = await startDaemon({ root, port: 0, uiDir, authorityDir, logger: false });
  const session = await launchBrowser();
  await session.page.goto(daemon.loginUrl);
  await session.page.getByRole('heading', { level: 1, name: 'Backup & recovery' }).waitFor();
  return {
    daemon,
    session,
    async close() {
      await session.close();
      await daemon.close();
      rmSync(uiDir, { recursive: true, force: true });
    },
  };
}

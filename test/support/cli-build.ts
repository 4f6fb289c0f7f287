/**
 * Vitest global setup: the CLI children the tests start run the built CLI (`bin/loopx.js`, as
 * installed), not the sources through tsx — a child then starts in a third of the time, which is
 * most of what the process-level tests spend. The build is brought up to date here once per run:
 * a no-op after `npm run build` (CI builds first), one `tsc` and the bundle of the CLI
 * (scripts/bundle-cli.mjs, which bin/loopx.js runs) otherwise. `LOOPX_TEST_CLI=source` runs the
 * children from sources instead, without building.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';

const REPO = resolve(import.meta.dirname, '../..');
const BUILT = join(REPO, 'dist/src/cli/main.js');
const BUNDLED = join(REPO, 'dist/cli/main.js');

function newestSource(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) newest = Math.max(newest, newestSource(path));
    else if (entry.name.endsWith('.ts') || entry.name.endsWith('.json'))
      newest = Math.max(newest, statSync(path).mtimeMs);
  }
  return newest;
}

function builtAt(path: string): number {
  try {
    return statSync(path).mtimeMs;
  } catch {
    return 0;
  }
}

export default function setup(): void {
  if (process.env['LOOPX_TEST_CLI'] === 'source') return;
  const sources = Math.max(
    newestSource(join(REPO, 'src')),
    statSync(join(REPO, 'tsconfig.json')).mtimeMs,
    statSync(join(REPO, 'tsconfig.build.json')).mtimeMs,
  );
  if (builtAt(BUILT) < sources) {
    const tsc = spawnSync(
      process.execPath,
      [join(REPO, 'node_modules/typescript/bin/tsc'), '-p', 'tsconfig.build.json'],
      { cwd: REPO, encoding: 'utf8' },
    );
    if (tsc.status !== 0) throw new Error(`building the CLI for the tests failed:\n${tsc.stdout}${tsc.stderr}`);
  }
  if (builtAt(BUNDLED) >= builtAt(BUILT)) return;
  const bundle = spawnSync(process.execPath, [join(REPO, 'scripts/bundle-cli.mjs')], { cwd: REPO, encoding: 'utf8' });
  if (bundle.status !== 0) throw new Error(`bundling the CLI for the tests failed:\n${bundle.stdout}${bundle.stderr}`);
}

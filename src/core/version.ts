/** loopx's own version and package root, read once from the package.json above this module (src/ or dist/src/). */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findPackage(): { root: string; version: string } | undefined {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, 'package.json');
    if (existsSync(candidate)) {
      const pkg = JSON.parse(readFileSync(candidate, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'loopx' && pkg.version) return { root: dir, version: pkg.version };
    }
    dir = dirname(dir);
  }
  return undefined;
}

const found = findPackage();
export const LOOPX_VERSION = found?.version ?? '0.0.0-unknown';
/** The installed package's root directory (examples/, docs/ live there). */
export const PACKAGE_ROOT: string | undefined = found?.root;

/** loopx's own version, read once from the package.json above this module (src/ or dist/src/). */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findVersion(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    const candidate = join(dir, 'package.json');
    if (existsSync(candidate)) {
      const pkg = JSON.parse(readFileSync(candidate, 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'loopx' && pkg.version) return pkg.version;
    }
    dir = dirname(dir);
  }
  return '0.0.0-unknown';
}

export const LOOPX_VERSION = findVersion();

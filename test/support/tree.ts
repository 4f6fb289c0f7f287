/**
 * What a test compares to prove "nothing changed": every entry below (and including) `dir` by its
 * relative path — type, permission bits, size, mtime and the content's SHA-256 (a link: its
 * target) — or "absent" when `dir` does not exist. Two equal results mean no entry was added,
 * removed, rewritten, re-moded or touched.
 */
import { createHash } from 'node:crypto';
import { existsSync, lstatSync, readdirSync, readFileSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';

export function treeState(dir: string): Record<string, string> | 'absent' {
  if (!existsSync(dir)) return 'absent';
  const out: Record<string, string> = {};
  const stamp = (p: string): string => {
    const st = lstatSync(p);
    const what = st.isDirectory()
      ? 'dir'
      : st.isSymbolicLink()
        ? `link ${readlinkSync(p)}`
        : st.isFile()
          ? `file ${createHash('sha256').update(readFileSync(p)).digest('hex')}`
          : 'other';
    return `${what} ${(st.mode & 0o7777).toString(8)} ${st.size} ${st.mtimeMs}`;
  };
  const walk = (d: string, rel: string): void => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      const r = rel ? `${rel}/${name}` : name;
      out[r] = stamp(p);
      if (lstatSync(p).isDirectory()) walk(p, r);
    }
  };
  out['.'] = stamp(dir);
  walk(dir, '');
  return out;
}

/**
 * Helpers shared by the registry, config and goal owner suites: private temp roots, error codes
 * as values, and directory snapshots (to prove a historical read wrote nothing).
 */
import { lstatSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { isLoopxError } from '../../../src/core/errors.js';

export const REPO = resolve(import.meta.dirname, '../../..');

const roots: string[] = [];

/** A fresh 0700 runtime root. */
export function tempRoot(): string {
  const dir = mkdtempSync(join(tmpdir(), 'loopx-owner-'));
  roots.push(dir);
  return dir;
}

export function cleanup(): void {
  for (const r of roots.splice(0)) rmSync(r, { recursive: true, force: true });
}

/** The LoopxError code a call throws, `undefined` when it returns, or `non-loopx:<errno or text>`. */
export function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    if (isLoopxError(e)) return e.code;
    return `non-loopx:${(e as NodeJS.ErrnoException | undefined)?.code ?? String(e)}`;
  }
  return undefined;
}

/** Every entry below `dir` with its type, mode and exact bytes (files) or target (links). */
export function snapshotTree(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string, rel: string): void => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      const r = rel ? `${rel}/${name}` : name;
      const st = lstatSync(p);
      if (st.isSymbolicLink()) out[r] = `link:${readlinkSync(p)}`;
      else if (st.isDirectory()) {
        out[r] = `dir:${(st.mode & 0o7777).toString(8)}:${st.mtimeMs}`;
        walk(p, r);
      } else out[r] = `file:${(st.mode & 0o7777).toString(8)}:${st.mtimeMs}:${readFileSync(p).toString('hex')}`;
    }
  };
  walk(dir, '');
  return out;
}

export const utf8 = (s: string): Uint8Array => new TextEncoder().encode(s);
export const text = (b: Uint8Array | null): string => (b === null ? '<absent>' : new TextDecoder().decode(b));

/** A well-formed goal_instance_id from a small number. */
export const inst = (n: number): string => `ginst_${n.toString(16).padStart(32, '0')}`;

/**
 * Every open validates the complete ancestry (RFC 0007): each component owned by root or the
 * current user, not writable by others unless sticky (then the entry below must be root's or
 * ours), no symbolic links anywhere, and a missing parent is refused rather than created.
 */
import {
  chmodSync,
  chownSync,
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { validateAncestry } from '../../src/run-authority/index.js';
import { cleanup, codeOf, FOREIGN_UID, modeOf, open, tempBase } from './support.js';

afterAll(cleanup);

const dirWithMode = (path: string, mode: number): string => {
  mkdirSync(path);
  chmodSync(path, mode);
  return path;
};

describe('ancestor permissions', () => {
  it('the root-owned sticky 1777 temp directory on the path is accepted', () => {
    const st = lstatSync(tmpdir());
    expect([st.uid, st.mode & 0o7777]).toEqual([0, 0o1777]); // precondition of this environment
    const dir = join(tempBase(), 'authority');
    expect(validateAncestry(dir)).toBeUndefined(); // leaf missing, every ancestor valid
    open(dir);
    expect(modeOf(dir)).toBe(0o700);
  });

  it.each([
    ['world-writable', 0o777],
    ['group-writable', 0o770],
    ['other-writable only', 0o757],
  ])('a non-sticky %s ancestor is refused with authority_ancestor_writable and nothing is created', (_label, mode) => {
    const parent = dirWithMode(join(tempBase(), 'shared'), mode);
    const dir = join(parent, 'authority');
    expect(codeOf(() => open(dir))).toBe('authority_ancestor_writable');
    expect(readdirSync(parent)).toEqual([]);
    expect(modeOf(parent)).toBe(mode);
  });

  it('a non-sticky writable ancestor higher up is refused too', () => {
    const top = dirWithMode(join(tempBase(), 'top'), 0o777);
    const mid = dirWithMode(join(top, 'mid'), 0o700);
    expect(codeOf(() => open(join(mid, 'authority')))).toBe('authority_ancestor_writable');
    expect(existsSync(join(mid, 'authority'))).toBe(false);
  });

  it.each([
    ['1777', 0o1777],
    ['1770', 0o1770],
  ])('a sticky %s ancestor is accepted when the entries below it are ours', (_label, mode) => {
    const sticky = dirWithMode(join(tempBase(), 'sticky'), mode);
    const mine = dirWithMode(join(sticky, 'mine'), 0o700);
    open(join(sticky, 'authority'));
    open(join(mine, 'authority'));
    expect(modeOf(join(sticky, 'authority'))).toBe(0o700);
    expect(modeOf(join(mine, 'authority'))).toBe(0o700);
  });

  it('below a sticky ancestor, an entry owned by another uid is refused with authority_ancestor_foreign_owner', () => {
    const sticky = dirWithMode(join(tempBase(), 'sticky'), 0o1777);
    const theirs = dirWithMode(join(sticky, 'theirs'), 0o755);
    chownSync(theirs, FOREIGN_UID, FOREIGN_UID);
    expect(codeOf(() => open(join(theirs, 'authority')))).toBe('authority_ancestor_foreign_owner');
    expect(readdirSync(theirs)).toEqual([]);
  });

  it('an ancestor owned by another uid (even 0755) is refused with authority_ancestor_foreign_owner', () => {
    const theirs = dirWithMode(join(tempBase(), 'theirs'), 0o755);
    const below = dirWithMode(join(theirs, 'below'), 0o700);
    chownSync(theirs, FOREIGN_UID, FOREIGN_UID);
    expect(codeOf(() => open(join(below, 'authority')))).toBe('authority_ancestor_foreign_owner');
    expect(readdirSync(below)).toEqual([]);
    expect(lstatSync(theirs).uid).toBe(FOREIGN_UID);
  });
});

describe('symbolic links and missing components', () => {
  it('a symlink as an ancestor is refused with authority_path_symlink, even to a valid directory', () => {
    const base = tempBase();
    const real = dirWithMode(join(base, 'real'), 0o700);
    symlinkSync(real, join(base, 'link'));
    expect(codeOf(() => open(join(base, 'link', 'authority')))).toBe('authority_path_symlink');
    expect(readdirSync(real)).toEqual([]);
  });

  it('a symlink as the leaf is refused with authority_path_symlink, even to a valid authority', async () => {
    const base = tempBase();
    const real = join(base, 'real-authority');
    await open(real).close();
    symlinkSync(real, join(base, 'authority'));
    expect(codeOf(() => open(join(base, 'authority')))).toBe('authority_path_symlink');
  });

  it('a dangling symlink as the leaf is refused with authority_path_symlink and its target is not created', () => {
    const base = tempBase();
    symlinkSync(join(base, 'target'), join(base, 'authority'));
    expect(codeOf(() => open(join(base, 'authority')))).toBe('authority_path_symlink');
    expect(existsSync(join(base, 'target'))).toBe(false);
  });

  it('a missing parent is refused with authority_parent_missing and is not created', () => {
    const base = tempBase();
    expect(codeOf(() => open(join(base, 'missing', 'authority')))).toBe('authority_parent_missing');
    expect(existsSync(join(base, 'missing'))).toBe(false);
  });

  it('a regular file on the path is refused with authority_path_not_directory', () => {
    const base = tempBase();
    writeFileSync(join(base, 'file'), 'x');
    expect(codeOf(() => open(join(base, 'file')))).toBe('authority_path_not_directory');
    expect(codeOf(() => open(join(base, 'file', 'authority')))).toBe('authority_path_not_directory');
  });
});

/**
 * Creating and re-opening the authority directory (RFC 0007: "Authority creation sets a newly
 * created Unix leaf to 0700; opening an existing leaf is validation-only and requires it already
 * be exactly 0700"), its random scope id and first key, and the default location.
 */
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ConfinedDir, defaultAuthorityDir } from '../../src/run-authority/index.js';
import { cleanup, codeOf, FOREIGN_UID, modeOf, open, snapshotTree, tempBase } from './support.js';

afterAll(cleanup);

const openDescriptors = (): number => readdirSync('/proc/self/fd').length;

const withUmask = <T>(mask: number, fn: () => T): T => {
  const previous = process.umask(mask);
  try {
    return fn();
  } finally {
    process.umask(previous);
  }
};

describe('the confined directory writes entries atomically', () => {
  it('write() creates a 0600 entry through a temp name and a rename, and read() returns its bytes', () => {
    const dir = join(tempBase(), 'confined');
    const d = ConfinedDir.open(dir, { create: true });
    try {
      expect(codeOf(() => d.write('entry', 'bytes\n'))).toBeUndefined();
      expect(readFileSync(join(dir, 'entry'), 'utf8')).toBe('bytes\n');
      expect(modeOf(join(dir, 'entry'))).toBe(0o600);
      expect(d.read('entry')?.toString('utf8')).toBe('bytes\n');
      expect(readdirSync(dir)).toEqual(['entry']); // the temp name is gone after the rename
    } finally {
      d.close();
    }
  });
});

describe('creating a new authority', () => {
  it.each([
    ['0', 0o000],
    ['077', 0o077],
    ['022', 0o022],
  ])('a new leaf is created 0700 whatever the umask (umask %s), and so are its subdirectories', (_label, mask) => {
    const dir = join(tempBase(), 'authority');
    withUmask(mask, () => open(dir));
    expect(modeOf(dir)).toBe(0o700);
    for (const sub of ['keys', 'locks', 'runs', 'roots', 'lifetimes']) expect(modeOf(join(dir, sub))).toBe(0o700);
  });

  it('the scope file and the first key are 0600 even with umask 0, and hold distinct random 32-byte values', () => {
    const dir = join(tempBase(), 'authority');
    const a = withUmask(0, () => open(dir));
    const scopePath = join(dir, 'scope');
    const keyPath = join(dir, 'keys', '1.key');
    expect(modeOf(scopePath)).toBe(0o600);
    expect(modeOf(keyPath)).toBe(0o600);
    const scopeHex = readFileSync(scopePath, 'utf8').trim();
    const keyHex = readFileSync(keyPath, 'utf8').trim();
    expect(scopeHex).toMatch(/^[0-9a-f]{64}$/);
    expect(keyHex).toMatch(/^[0-9a-f]{64}$/);
    expect(scopeHex).not.toBe(keyHex);
    expect(Buffer.from(a.scopeId).toString('hex')).toBe(scopeHex);
    expect(a.scopeId.byteLength).toBe(32);
    expect(a.currentKeyGeneration()).toBe(1);
    expect(a.keyGenerations()).toEqual([{ generation: 1, retired: false }]);
    // The key lives apart from the scope, and the authority holds nothing else at its top level.
    expect(readdirSync(dir).sort()).toEqual([
      'keys',
      'lifetimes',
      'locks',
      'roots',
      'runs',
      'scope',
      'settings',
      'works',
    ]);
    expect(readdirSync(join(dir, 'keys'))).toEqual(['1.key']);
  });

  it('two new authorities get different scope ids and different keys', () => {
    const d1 = join(tempBase(), 'authority');
    const d2 = join(tempBase(), 'authority');
    const a = open(d1);
    const b = open(d2);
    expect(Buffer.from(a.scopeId).equals(Buffer.from(b.scopeId))).toBe(false);
    expect(readFileSync(join(d1, 'keys/1.key'), 'utf8')).not.toBe(readFileSync(join(d2, 'keys/1.key'), 'utf8'));
  });

  it('re-opening reuses the scope id and key: same scopeId, files untouched, claims still verify', async () => {
    const dir = join(tempBase(), 'authority');
    const a = open(dir);
    const input = { keyGeneration: 1, runId: 'run-1', transitionGeneration: 1, macInput: new Uint8Array([1, 2, 3]) };
    const hmac = a.claim(input);
    await a.close();
    const before = snapshotTree(dir);
    const b = open(dir, false);
    expect(Buffer.from(b.scopeId).equals(Buffer.from(a.scopeId))).toBe(true);
    expect(b.currentKeyGeneration()).toBe(1);
    expect(b.verifyClaim(b.scopeId, input, hmac)).toBe(true);
    expect(snapshotTree(dir)).toEqual(before);
  });

  it('opening a missing directory without create is refused with authority_missing and creates nothing', () => {
    const base = tempBase();
    expect(codeOf(() => open(join(base, 'authority'), false))).toBe('authority_missing');
    expect(existsSync(join(base, 'authority'))).toBe(false);
  });

  it('a malformed scope file is refused with authority_corrupt, not replaced', () => {
    const dir = join(tempBase(), 'authority');
    mkdirSync(dir, { mode: 0o700 });
    writeFileSync(join(dir, 'scope'), 'not-hex\n', { mode: 0o600 });
    expect(codeOf(() => open(dir))).toBe('authority_corrupt');
    expect(readFileSync(join(dir, 'scope'), 'utf8')).toBe('not-hex\n');
  });

  it('open then close leaves no descriptor behind', async () => {
    const dir = join(tempBase(), 'authority');
    await open(dir).close();
    const before = openDescriptors();
    await open(dir, false).close();
    expect(openDescriptors()).toBe(before);
  });

  it('a refused open (malformed scope) leaves no descriptor behind', () => {
    const dir = join(tempBase(), 'authority');
    mkdirSync(dir, { mode: 0o700 });
    writeFileSync(join(dir, 'scope'), 'not-hex\n', { mode: 0o600 });
    const before = openDescriptors();
    expect(codeOf(() => open(dir))).toBe('authority_corrupt');
    expect(openDescriptors()).toBe(before);
  });

  it('a symlinked scope file is refused with authority_entry_symlink at open', () => {
    const base = tempBase();
    const dir = join(base, 'authority');
    mkdirSync(dir, { mode: 0o700 });
    writeFileSync(join(base, 'elsewhere'), `${'ab'.repeat(32)}\n`, { mode: 0o600 });
    symlinkSync(join(base, 'elsewhere'), join(dir, 'scope'));
    expect(codeOf(() => open(dir))).toBe('authority_entry_symlink');
  });
});

describe('opening an existing leaf only validates it', () => {
  it.each([
    ['0755', 0o755],
    ['0750', 0o750],
    ['0777', 0o777],
    ['0711', 0o711],
    ['1700', 0o1700],
  ])(
    'an existing leaf with mode %s is refused with authority_mode_unsafe and is not chmodded or filled',
    (_label, mode) => {
      const dir = join(tempBase(), 'authority');
      mkdirSync(dir);
      chmodSync(dir, mode);
      expect(codeOf(() => open(dir))).toBe('authority_mode_unsafe');
      expect(modeOf(dir)).toBe(mode);
      expect(readdirSync(dir)).toEqual([]);
    },
  );

  it('an existing 0700 leaf owned by another uid is refused with authority_not_owned and left untouched', () => {
    const dir = join(tempBase(), 'authority');
    mkdirSync(dir, { mode: 0o700 });
    chownSync(dir, FOREIGN_UID, FOREIGN_UID);
    expect(codeOf(() => open(dir))).toBe('authority_not_owned');
    const st = statSync(dir);
    expect([st.uid, st.mode & 0o7777]).toEqual([FOREIGN_UID, 0o700]);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('an existing 0700 leaf of ours is accepted as is', () => {
    const dir = join(tempBase(), 'authority');
    mkdirSync(dir, { mode: 0o700 });
    open(dir, false);
    expect(modeOf(dir)).toBe(0o700);
  });
});

describe('defaultAuthorityDir', () => {
  it('honours an absolute XDG_STATE_HOME', () => {
    expect(defaultAuthorityDir({ XDG_STATE_HOME: '/srv/state' })).toBe('/srv/state/loopx/run-authority');
  });

  it('falls back to ~/.local/state/loopx/run-authority when XDG_STATE_HOME is unset, empty or relative', () => {
    const fallback = join(homedir(), '.local', 'state', 'loopx', 'run-authority');
    expect(defaultAuthorityDir({})).toBe(fallback);
    expect(defaultAuthorityDir({ XDG_STATE_HOME: '' })).toBe(fallback);
    expect(defaultAuthorityDir({ XDG_STATE_HOME: 'relative/state' })).toBe(fallback);
  });
});

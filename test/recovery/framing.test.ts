/**
 * backup-state verify: tar framing and SQLite sidecars (issue 10, items 7 and 14).
 *
 * - A tar stream is whole 512-byte blocks, and only whole zero blocks may follow its
 *   end-of-archive marker: a manifest that declares another length is refused before anything is
 *   decoded, and a partial block after the marker is refused while streaming.
 * - A `-wal`, `-shm` or `-journal` name beside another file or link member is what SQLite would
 *   read as part of that member opened as a database; the producer never archives one, and the
 *   member checker refuses it — on the plan, before anything is written, and on every header.
 *
 * Cases re-pack one real backup (support/corpus.ts), as the corpus does, and assert the code and
 * that no destination was published.
 */
import { existsSync, lstatSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { create, plan } from '../../src/backup/index.js';
import { isLoopxError } from '../../src/core/errors.js';
import { executeVerify, planVerify } from '../../src/recovery/index.js';
import { TarScanner } from '../../src/recovery/tar-scan.js';
import { makeRoot } from '../backup/support/fixtures.js';
import { dirEntry, fileEntry, insertAfter, linkEntry, type BuildOptions, type ManifestDoc } from './support/corpus.js';
import { RawTar } from './support/raw-tar.js';
import { useBaseBackup } from './support/base-fixture.js';

const FAKE = 'runtime-root/fake.db';
const fx = useBaseBackup('loopx-framing-');

const codeOf = (e: unknown): string =>
  e === undefined ? 'resolved (no refusal)' : isLoopxError(e) ? e.code : `not a LoopxError: ${String(e)}`;

const stage = (options: BuildOptions) => fx.stage(options);

/** Run verify --execute; the code of its refusal (undefined when it published), and that nothing was left on refusal. */
async function verifyCode(s: ReturnType<typeof stage>): Promise<string | undefined> {
  const err = await executeVerify(s).then(
    () => undefined,
    (e: unknown) => e,
  );
  if (err !== undefined) expect(existsSync(s.destination), 'a refused run publishes nothing').toBe(false);
  return err === undefined ? undefined : codeOf(err);
}

const planCode = async (s: ReturnType<typeof stage>): Promise<string | undefined> => {
  try {
    await planVerify(s);
    return undefined;
  } catch (e) {
    return codeOf(e);
  }
};

const exec = (m: ManifestDoc) => m.execution as unknown as Record<'archive_expanded_bytes', number>;

// ────────────────────────────────────────────────────────────────────────────────────────────
describe('tar framing', () => {
  it('refuses 100 zero bytes after the end-of-archive marker when the manifest declares that odd length (tar_framing_invalid)', async () => {
    // A consistent pair: the tar really is 100 bytes longer than its blocks, and the manifest says so.
    const s = stage({ end: (t) => t.end().raw(Buffer.alloc(100)) });
    expect(await verifyCode(s)).toBe('tar_framing_invalid');
  });

  it('refuses a partial zero block after the end-of-archive marker while streaming, even when the manifest declares whole blocks', async () => {
    const s = stage({
      end: (t) => t.end().raw(Buffer.alloc(100)),
      external: (m) => (exec(m).archive_expanded_bytes -= 100),
    });
    expect(await planCode(s)).toBeUndefined();
    expect(await verifyCode(s)).toBe('tar_framing_invalid');
  });

  it('accepts whole zero blocks after the end-of-archive marker (tar record padding)', async () => {
    const s = stage({ end: (t) => t.end(20) });
    expect(await verifyCode(s)).toBeUndefined();
  }, 60_000);

  it('the scanner refuses 1 to 511 zero bytes after the marker and accepts any whole number of zero blocks', () => {
    const scan = (tail: number): string | undefined => {
      const tar = new RawTar().file('runtime-root', Buffer.from('x')).end().raw(Buffer.alloc(tail)).bytes();
      const scanner = new TarScanner({
        onEntry: () => undefined,
        onData: () => undefined,
        onEntryEnd: () => undefined,
      });
      try {
        // Byte-sized pushes: a block boundary that falls between chunks must not matter.
        for (let i = 0; i < tar.length; i += 97) scanner.push(tar.subarray(i, i + 97));
        scanner.finish();
        return undefined;
      } catch (e) {
        return codeOf(e);
      }
    };
    for (const tail of [1, 100, 511, 513, 1023])
      expect(scan(tail), `${tail} trailing zero bytes`).toBe('tar_framing_invalid');
    for (const tail of [0, 512, 9216]) expect(scan(tail), `${tail} trailing zero bytes`).toBeUndefined();
  });
});

// ────────────────────────────────────────────────────────────────────────────────────────────
describe('SQLite sidecars', () => {
  const wal = Buffer.from('\x37\x7f\x06\x82 not checked by anyone', 'latin1');

  it.each(['-wal', '-shm', '-journal'])(
    'refuses a planned %s beside its database before anything is written',
    async (suffix) => {
      const s = stage({ entries: insertAfter(fx.base.entries, FAKE, fileEntry(`${FAKE}${suffix}`, wal)) });
      expect(await planCode(s)).toBe('member_sqlite_sidecar');
      expect(await verifyCode(s)).toBe('member_sqlite_sidecar');
      expect(existsSync(join(s.destination, 'workspace', `${FAKE}${suffix}`))).toBe(false);
    },
  );

  it('refuses a sidecar whose name differs from its database only in case (a case-insensitive workspace pairs them)', async () => {
    const s = stage({ entries: insertAfter(fx.base.entries, FAKE, fileEntry('runtime-root/FAKE.DB-Wal', wal)) });
    expect(await planCode(s)).toBe('member_sqlite_sidecar');
  });

  it('refuses a sidecar listed before its database (order does not matter)', async () => {
    const i = fx.base.entries.findIndex((e) => e.path === FAKE);
    const entries = [...fx.base.entries.slice(0, i), fileEntry(`${FAKE}-journal`, wal), ...fx.base.entries.slice(i)];
    expect(await planCode(stage({ entries }))).toBe('member_sqlite_sidecar');
  });

  it('refuses a sidecar of a file without a .db name (any file can be opened as a database)', async () => {
    const entries = [
      ...fx.base.entries,
      fileEntry('runtime-root/store', 'plain bytes'),
      fileEntry('runtime-root/store-wal', wal),
    ];
    expect(await planCode(stage({ entries }))).toBe('member_sqlite_sidecar');
  });

  it('refuses a sidecar beside a symbolic-link member', async () => {
    const entries = [
      ...fx.base.entries,
      linkEntry('runtime-root/link.db', 'fake.db'),
      fileEntry('runtime-root/link.db-wal', wal),
    ];
    expect(await planCode(stage({ entries }))).toBe('member_sqlite_sidecar');
  });

  it('refuses a sidecar in the tar that the manifest does not list, at its header', async () => {
    const s = stage({ entries: insertAfter(fx.base.entries, FAKE, fileEntry(`${FAKE}-wal`, wal, { planned: false })) });
    expect(await planCode(s)).toBeUndefined();
    expect(await verifyCode(s)).toBe('member_sqlite_sidecar');
  });

  it('accepts sidecar-like names with no file or link of the base name: an orphan -wal, a directory base, a -wal directory', async () => {
    const entries = [
      ...fx.base.entries,
      fileEntry('runtime-root/orphan-wal', 'no database of that name'),
      fileEntry('runtime-root/goals-journal', 'goals is a directory, never a database'),
      dirEntry(`${FAKE}-shm`),
    ];
    const s = stage({ entries });
    expect(await verifyCode(s)).toBeUndefined();
    expect(readdirSync(join(s.destination, 'workspace', 'runtime-root'))).toEqual(
      expect.arrayContaining(['orphan-wal', 'goals-journal', 'fake.db-shm']),
    );
    expect(lstatSync(join(s.destination, 'workspace', `${FAKE}-shm`)).isDirectory()).toBe(true);
  }, 60_000);

  it('the producer leaves sidecar names beside any file out (also a plain file, also in another case), so its backup verifies', async () => {
    const root = join(fx.work, 'sidecar-root');
    await makeRoot(root, { specials: false });
    rmSync(join(root, 'big.bin'));
    writeFileSync(join(root, 'notes'), 'plain text, not a database');
    writeFileSync(join(root, 'notes-wal'), wal);
    writeFileSync(join(root, 'FAKE.DB-journal'), wal);
    writeFileSync(join(root, 'orphan.txt-wal'), 'kept: no file of that name');
    const p = plan(root, { outputDir: join(fx.work, 'sidecar-out'), backupId: 'sc' });
    const excluded = Object.fromEntries(p.excluded.map((x) => [x.source_path, x.reason]));
    expect(excluded).toMatchObject({ 'notes-wal': 'sqlite_sidecar', 'FAKE.DB-journal': 'sqlite_sidecar' });
    expect(p.members.map((m) => m.path)).toEqual(expect.arrayContaining(['notes', 'orphan.txt-wal']));
    await create(p);
    const destination = join(fx.work, 'sidecar-dest');
    await executeVerify({
      archive: join(fx.work, 'sidecar-out', 'sc.tar.gz'),
      manifest: join(fx.work, 'sidecar-out', 'sc.manifest.json'),
      destination,
    });
    expect(existsSync(join(destination, 'workspace', 'runtime-root', 'notes'))).toBe(true);
    expect(existsSync(join(destination, 'workspace', 'runtime-root', 'notes-wal'))).toBe(false);
  }, 60_000);
});

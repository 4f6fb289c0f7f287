/**
 * backup-state verify: the malicious-archive corpus (RFC complete-state-recovery §5, §7, §12).
 *
 * One real backup of a small fixture root is made by the real producer once; every case re-packs
 * its members with the hand-rolled tar builder (support/raw-tar.ts) into a consistent archive +
 * external manifest pair (support/corpus.ts) and breaks exactly one rule. Each refusal asserts
 * (a) the stable code of src/recovery/codes.ts, (b) that the destination does not exist
 * afterwards, and (c) that nothing was written outside it: the case directory (the destination's
 * parent), the corpus base's top level and every escape target the case aims at are the same
 * before and after. A few cases must pass (the faithful re-pack, modes and ownership not carried
 * over, an internal symlink, exactly 20,000 members).
 */
import { randomBytes } from 'node:crypto';
import {
  chmodSync,
  chownSync,
  closeSync,
  ftruncateSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { create, plan } from '../../src/backup/index.js';
import { isLoopxError, type LoopxError } from '../../src/core/errors.js';
import { executeVerify } from '../../src/recovery/index.js';
import { makeRoot, tempBase, treeFingerprint } from '../backup/support/fixtures.js';
import {
  buildCorpus,
  buildZeroFileCorpus,
  dirEntry,
  emitEntry,
  fileEntry,
  insertAfter,
  linkEntry,
  loadBase,
  replaceEntry,
  serialize,
  writeCorpus,
  type BaseBackup,
  type BuildOptions,
  type Corpus,
  type CorpusEntry,
  type ManifestDoc,
} from './support/corpus.js';
import { RawTar, base256Field, gzip } from './support/raw-tar.js';

const MiB = 1024 * 1024;
const FAKE = 'runtime-root/fake.db';

let work: string;
let outside: string;
let base: BaseBackup;
let baseArchive: string;
let seq = 0;

beforeAll(async () => {
  work = tempBase('loopx-corpus-');
  // An escape target outside the corpus base (absolute-path members aim here).
  outside = mkdtempSync(join(tmpdir(), 'loopx-corpus-outside-'));
  const root = join(work, 'root');
  await makeRoot(root, { specials: false });
  rmSync(join(root, 'big.bin')); // keep every case small and fast
  const out = join(work, 'out');
  const result = await create(plan(root, { outputDir: out, backupId: 'base' }), { format: 'v0' });
  baseArchive = join(out, 'base.tar.gz');
  base = await loadBase(baseArchive, result.manifest_doc);
}, 60_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
  if (outside) rmSync(outside, { recursive: true, force: true });
});

interface Staged {
  readonly dir: string;
  readonly archive: string;
  readonly manifest: string;
  readonly destination: string;
}

/** A fresh private case directory holding the pair; the destination is `<dir>/dest`. */
function stage(corpus: Pick<Corpus, 'archive' | 'manifest'>): Staged {
  const dir = join(work, `case-${++seq}`);
  const paths = writeCorpus(dir, corpus);
  return { dir, ...paths, destination: join(dir, 'dest') };
}

const build = (options: BuildOptions = {}): Staged => stage(buildCorpus(base, options));
const entries = (): readonly CorpusEntry[] => base.entries;
/** The external manifest's numeric archive facts, to lie about. */
const exec = (m: ManifestDoc) =>
  m.execution as unknown as Record<'archive_size_bytes' | 'archive_expanded_bytes', number>;
const dataOf = (path: string): Buffer => base.entries.find((e) => e.path === path)!.data!;

function lexists(path: string): boolean {
  try {
    lstatSync(path);
    return true;
  } catch {
    return false;
  }
}

/** What a path is and everything beneath it (type, mode, size, mtime, inode); its own mtime only when it is not a directory. */
function snapshot(path: string): string[] {
  if (!lexists(path)) return [`${path} absent`];
  const st = lstatSync(path);
  const self = `${path} ${st.mode.toString(8)} ${st.uid}:${st.gid} ${st.ino}${st.isDirectory() ? '' : ` ${st.size} ${st.mtimeMs}`}`;
  return st.isDirectory() ? [self, ...treeFingerprint(path)] : [self];
}

const codeOf = (e: unknown): string =>
  e === undefined ? 'resolved (no refusal)' : isLoopxError(e) ? e.code : `not a LoopxError: ${String(e)}`;

/**
 * Run verify and expect refusal `code`; the destination must not exist afterwards (or, when it
 * existed, be unchanged) and nothing outside it may change: the case directory, the destination's
 * parent, the corpus base's top level and `watch`.
 */
async function expectRefusal(s: Staged, code: string, watch: readonly string[] = []): Promise<LoopxError> {
  const parent = dirname(s.destination);
  const watched = [...new Set([s.dir, parent, ...watch])];
  const existed = lexists(s.destination);
  const before = watched.map(snapshot);
  const top = readdirSync(work).sort();
  const err = await executeVerify({ archive: s.archive, manifest: s.manifest, destination: s.destination }).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(codeOf(err)).toBe(code);
  if (!existed) expect(lexists(s.destination), 'the destination exists after a refusal').toBe(false);
  expect(watched.map(snapshot)).toEqual(before);
  expect(readdirSync(work).sort()).toEqual(top);
  return err as LoopxError;
}

async function expectVerified(s: Staged): Promise<string> {
  try {
    await executeVerify({ archive: s.archive, manifest: s.manifest, destination: s.destination });
  } catch (e) {
    throw new Error(`verify refused a benign archive: ${codeOf(e)} ${(e as Error).message}`);
  }
  expect(lstatSync(s.destination).mode & 0o7777).toBe(0o700);
  expect(lstatSync(join(s.destination, 'workspace')).isDirectory()).toBe(true);
  expect(lstatSync(join(s.destination, 'recovery-audit.json')).isFile()).toBe(true);
  return join(s.destination, 'workspace');
}

/** Where the entry at `path` starts in the default tar of `list`. */
function offsetOf(list: readonly CorpusEntry[], path: string): number {
  const t = new RawTar({ mtime: base.mtime });
  for (const e of list) {
    if (e.path === path) return t.length;
    emitEntry(t, e);
  }
  throw new Error(`no entry ${path}`);
}

// ────────────────────────────────────────────────────────────────────────────────────────────
describe('the corpus builder', () => {
  it('re-packs the real backup byte for byte: the same tar stream, the same embedded manifest, a schema-valid pair', async () => {
    const corpus = buildCorpus(base);
    const original = gunzipSync(readFileSync(baseArchive));
    expect(corpus.tar.length).toBe(original.length);
    expect(corpus.tar.equals(original)).toBe(true);
    expect(corpus.doc.execution.archive_expanded_bytes).toBe(base.manifest.execution.archive_expanded_bytes);
    expect(corpus.doc.execution.embedded_manifest).toEqual(base.manifest.execution.embedded_manifest);
    expect({
      ...corpus.doc,
      execution: {
        ...corpus.doc.execution,
        archive_sha256: null,
        archive_size_bytes: null,
        archive_to_logical_ratio: null,
      },
    }).toEqual({
      ...base.manifest,
      execution: {
        ...base.manifest.execution,
        archive_sha256: null,
        archive_size_bytes: null,
        archive_to_logical_ratio: null,
      },
    });
    // The external manifest, and one planning an internal symlink, are valid v0 manifests.
    const schema = JSON.parse(
      readFileSync(new URL('../../docs/schemas/state-backup-manifest-v0.schema.json', import.meta.url), 'utf8'),
    ) as object;
    const validate = new Ajv2020({ strict: true, allErrors: true }).compile(schema);
    expect(validate(JSON.parse(corpus.manifest.toString('utf8'))), JSON.stringify(validate.errors)).toBe(true);
    const linked = buildCorpus(base, { entries: [...entries(), linkEntry('runtime-root/goals-link', 'goals')] });
    expect(validate(JSON.parse(linked.manifest.toString('utf8'))), JSON.stringify(validate.errors)).toBe(true);
  });

  it('the unmodified re-pack verifies: destination 0700 with workspace/ and recovery-audit.json', async () => {
    const s = build();
    const workspace = await expectVerified(s);
    expect(readdirSync(workspace).sort()).toEqual(['configuration-backup.json', 'manifest.json', 'runtime-root']);
    expect(readFileSync(join(workspace, FAKE))).toEqual(dataOf(FAKE));
    // Nothing but the destination appeared next to the inputs.
    expect(readdirSync(s.dir).sort()).toEqual(['corpus.manifest.json', 'corpus.tar.gz', 'dest']);
  }, 60_000);
});

// ────────────────────────────────────────────────────────────────────────────────────────────
describe('inputs', () => {
  it('refuses an archive that is a symbolic link', async () => {
    const s = build();
    const link = join(s.dir, 'link.tar.gz');
    symlinkSync(s.archive, link);
    await expectRefusal({ ...s, archive: link }, 'verify_input_not_regular');
  });

  it('refuses a manifest that is a directory', async () => {
    const s = build();
    const dir = join(s.dir, 'manifest-dir');
    mkdirSync(dir, { mode: 0o700 });
    await expectRefusal({ ...s, manifest: dir }, 'verify_input_not_regular');
  });

  it('refuses a manifest over 16 MiB (valid JSON padded with whitespace)', async () => {
    const s = build({ manifestBytes: (b) => Buffer.concat([b, Buffer.alloc(16 * MiB, 0x20)]) });
    await expectRefusal(s, 'verify_capacity_manifest_bytes');
  });

  it('refuses JSON nested deeper than 64 before parsing it', async () => {
    const deep = `${'['.repeat(100)}${']'.repeat(100)}`;
    const s = build({
      manifestBytes: (b) => Buffer.from(b.toString('utf8').replace(/^\{/, `{"deep": ${deep},`), 'utf8'),
    });
    await expectRefusal(s, 'verify_capacity_json_depth');
  });

  it('refuses a manifest that is not JSON', async () => {
    const s = build({ manifestBytes: (b) => b.subarray(0, Math.floor(b.length / 2)) });
    await expectRefusal(s, 'verify_manifest_invalid');
  });

  it('refuses a manifest whose member path is absolute (the schema refuses it before any member check)', async () => {
    const s = build({ external: (m) => (m.members[1]!.path = '/etc/passwd') });
    await expectRefusal(s, 'verify_manifest_invalid');
  });

  it('refuses an embedded copy passed as the external manifest (archive facts null)', async () => {
    const s = build({
      external: (m) => {
        const ex = m.execution as unknown as Record<string, unknown>;
        for (const f of [
          'archive_sha256',
          'archive_size_bytes',
          'archive_expanded_bytes',
          'archive_to_logical_ratio',
          'embedded_manifest',
        ])
          ex[f] = null;
      },
    });
    await expectRefusal(s, 'verify_manifest_invalid');
  });

  it('refuses an unknown schema_version before schema validation', async () => {
    const s = build({ external: (m) => ((m as Record<string, unknown>).schema_version = 'loopx_state_backup_v9') });
    await expectRefusal(s, 'verify_manifest_schema_unknown');
  });

  it('refuses an archive over 128 MiB (before hashing it)', async () => {
    const s = build();
    const fd = openSync(s.archive, 'r+');
    ftruncateSync(fd, 128 * MiB + 1); // sparse: no 128 MiB write
    closeSync(fd);
    await expectRefusal(s, 'verify_capacity_archive_bytes');
  });

  it('refuses an archive with one flipped byte (digest, before any decoding)', async () => {
    const corpus = buildCorpus(base);
    const archive = Buffer.from(corpus.archive);
    archive[Math.floor(archive.length / 2)]! ^= 0x01;
    await expectRefusal(stage({ archive, manifest: corpus.manifest }), 'verify_archive_digest_mismatch');
  });

  it('refuses an archive whose size differs from the manifest', async () => {
    const s = build({ external: (m) => (exec(m).archive_size_bytes += 1) });
    await expectRefusal(s, 'verify_archive_digest_mismatch');
  });
});

// ────────────────────────────────────────────────────────────────────────────────────────────
describe('destination', () => {
  it('refuses an existing (empty) destination and leaves it untouched', async () => {
    const s = build();
    mkdirSync(s.destination, { mode: 0o700 });
    await expectRefusal(s, 'verify_destination_exists');
    expect(readdirSync(s.destination)).toEqual([]);
  });

  it('refuses a destination that is a dangling symbolic link, creating nothing at its target', async () => {
    const s = build();
    const target = join(s.dir, 'link-target');
    symlinkSync(target, s.destination);
    await expectRefusal(s, 'verify_destination_exists', [target]);
    expect(lexists(target)).toBe(false);
  });

  it('refuses a destination whose parent does not exist', async () => {
    const s = build();
    await expectRefusal({ ...s, destination: join(s.dir, 'missing', 'dest') }, 'verify_destination_parent_invalid');
  });

  it('refuses a destination whose parent is reached through a symbolic link', async () => {
    const s = build();
    const real = join(s.dir, 'real');
    mkdirSync(real, { mode: 0o700 });
    symlinkSync(real, join(s.dir, 'via'));
    await expectRefusal({ ...s, destination: join(s.dir, 'via', 'dest') }, 'verify_destination_parent_invalid', [real]);
    expect(readdirSync(real)).toEqual([]);
  });

  it('refuses a destination whose parent is a regular file', async () => {
    const s = build();
    writeFileSync(join(s.dir, 'plain'), 'x', { mode: 0o600 });
    await expectRefusal({ ...s, destination: join(s.dir, 'plain', 'dest') }, 'verify_destination_parent_invalid');
  });

  it('refuses a world-writable parent without the sticky bit', async () => {
    const s = build();
    const parent = join(s.dir, 'open');
    mkdirSync(parent);
    chmodSync(parent, 0o777);
    await expectRefusal({ ...s, destination: join(parent, 'dest') }, 'verify_destination_parent_not_private');
  });

  it('refuses a group-writable parent', async () => {
    const s = build();
    const parent = join(s.dir, 'group');
    mkdirSync(parent);
    chmodSync(parent, 0o770);
    await expectRefusal({ ...s, destination: join(parent, 'dest') }, 'verify_destination_parent_not_private');
  });

  it('refuses a private parent below an ancestor another user could rename entries in', async () => {
    const s = build();
    const open = join(s.dir, 'open');
    mkdirSync(open);
    chmodSync(open, 0o777);
    const parent = join(open, 'private');
    mkdirSync(parent, { mode: 0o700 });
    await expectRefusal({ ...s, destination: join(parent, 'dest') }, 'verify_destination_parent_not_private');
  });

  // Making a directory owned by another user needs root (CI runs as root); as another user, the
  // group- and world-writable cases above still cover the ownership/permission rule.
  it.skipIf(process.getuid?.() !== 0)('refuses a parent owned by another user', async () => {
    const s = build();
    const parent = join(s.dir, 'foreign');
    mkdirSync(parent, { mode: 0o700 });
    chownSync(parent, 1234, 1234);
    await expectRefusal({ ...s, destination: join(parent, 'dest') }, 'verify_destination_parent_not_private');
  });
});

// ────────────────────────────────────────────────────────────────────────────────────────────
describe('capacity', () => {
  /** The base plus a directory of `n` empty files: base members + 1 + n + manifest.json in all. */
  const withFillers = (n: number): CorpusEntry[] => {
    const fillers: CorpusEntry[] = [dirEntry('runtime-root/filler')];
    const empty = Buffer.alloc(0);
    for (let i = 0; i < n; i++) fillers.push(fileEntry(`runtime-root/filler/f${String(i).padStart(5, '0')}`, empty));
    return [...entries(), ...fillers];
  };
  const fillersFor = (total: number): number => total - 1 - base.entries.length - 1;

  it('verifies exactly 20,000 members (manifest.json included)', async () => {
    const list = withFillers(fillersFor(20_000));
    expect(list.length + 1).toBe(20_000);
    const s = build({ entries: list });
    const workspace = await expectVerified(s);
    expect(readdirSync(join(workspace, 'runtime-root/filler')).length).toBe(fillersFor(20_000));
    rmSync(s.destination, { recursive: true, force: true });
  }, 120_000);

  it('refuses 20,001 members', async () => {
    const list = withFillers(fillersFor(20_001));
    expect(list.length + 1).toBe(20_001);
    await expectRefusal(build({ entries: list }), 'verify_capacity_members');
  }, 60_000);

  /** An incompressible member so that a declared 512 MiB stays under the 2,000 expansion ratio. */
  const noisy = (): CorpusEntry[] => [...entries(), fileEntry('runtime-root/noise.bin', randomBytes(400 * 1024))];

  it('refuses declared expanded bytes over 512 MiB', async () => {
    const s = build({ entries: noisy(), external: (m) => (exec(m).archive_expanded_bytes = 512 * MiB + 1) });
    await expectRefusal(s, 'verify_capacity_expanded_bytes');
  });

  it('refuses declared regular-file bytes over 512 MiB', async () => {
    const s = build({
      plan: (members) => {
        const others = members
          .filter((m) => m.type === 'file' && m.path !== FAKE)
          .reduce((n, m) => n + m.size_bytes, 0);
        return members.map((m) => (m.path === FAKE ? { ...m, size_bytes: 512 * MiB + 1 - others } : m));
      },
    });
    await expectRefusal(s, 'verify_capacity_regular_file_bytes');
  });

  it('refuses a declared expansion ratio over 2,000', async () => {
    const s = build({
      external: (m) => {
        const ex = exec(m);
        ex.archive_expanded_bytes = ex.archive_size_bytes * 2_001;
      },
    });
    await expectRefusal(s, 'verify_capacity_expansion_ratio');
  });

  it('refuses when free space is below the regular-file bytes plus 16 MiB', async () => {
    const corpus = buildCorpus(base);
    const regular = corpus.doc.execution.file_members.reduce((n, f) => n + f.size_bytes, 0);
    const s = stage(corpus);
    const saved = process.env.LOOPX_TEST_FREE_BYTES;
    process.env.LOOPX_TEST_FREE_BYTES = String(regular + 16 * MiB - 1);
    try {
      await expectRefusal(s, 'verify_capacity_free_space');
    } finally {
      if (saved === undefined) delete process.env.LOOPX_TEST_FREE_BYTES;
      else process.env.LOOPX_TEST_FREE_BYTES = saved;
    }
  });

  it('refuses a gzip bomb while streaming: a planned 512 MiB zero file whose tar stream exceeds 512 MiB', async () => {
    const others = base.entries.reduce((n, e) => n + (e.type === 'file' ? e.data!.length : 0), 0);
    // Declared regular bytes (file members and the embedded manifest) are exactly 512 MiB; the tar stream, with its headers, is more.
    const corpus = await buildZeroFileCorpus(base, {
      path: 'runtime-root/zeros.bin',
      sizeFor: (embedded) => 512 * MiB - others - embedded,
      // The manifest understates the stream (a lie only the streaming bound can catch).
      external: (m) => (exec(m).archive_expanded_bytes = 512 * MiB),
    });
    expect(corpus.expanded).toBeGreaterThan(512 * MiB);
    expect(corpus.archive.length).toBeLessThan(MiB);
    await expectRefusal(stage(corpus), 'verify_capacity_expanded_bytes');
  }, 60_000);

  it('refuses one PAX header over 128 KiB', async () => {
    const list = replaceEntry(entries(), FAKE, (e) => ({
      ...e,
      tar: { pax: [['mtime', `1700000000.${'0'.repeat(128 * 1024)}`]] },
    }));
    await expectRefusal(build({ entries: list }), 'verify_capacity_pax_header_bytes');
  });

  it('refuses PAX headers adding up to more than 16 MiB (each under 128 KiB)', async () => {
    const pad = `1700000000.${'0'.repeat(127 * 1024)}`;
    const extra: CorpusEntry[] = [dirEntry('runtime-root/pax')];
    for (let i = 0; i < 132; i++)
      extra.push(fileEntry(`runtime-root/pax/f${i}`, `${i}`, { tar: { pax: [['mtime', pad]] } }));
    await expectRefusal(build({ entries: [...entries(), ...extra] }), 'verify_capacity_pax_total_bytes');
  });

  it('refuses a planned path of more than 64 components', async () => {
    const deep = `runtime-root/${'d/'.repeat(64)}f`;
    await expectRefusal(build({ entries: [...entries(), fileEntry(deep, 'x')] }), 'verify_capacity_path_components');
  });

  it('refuses a planned path of more than 1,024 characters', async () => {
    const long = `runtime-root/${Array.from({ length: 6 }, () => 'c'.repeat(200)).join('/')}/f`;
    expect([...long].length).toBeGreaterThan(1024);
    await expectRefusal(build({ entries: [...entries(), fileEntry(long, 'x')] }), 'verify_capacity_path_chars');
  });

  it('refuses a component over 255 UTF-8 bytes (128 characters)', async () => {
    const name = `runtime-root/${'é'.repeat(128)}`;
    await expectRefusal(
      build({ entries: [...entries(), fileEntry(name, 'x')] }),
      'verify_capacity_path_component_bytes',
    );
  });

  it('refuses a tar header path of more than 64 components (not in the manifest)', async () => {
    const deep = `runtime-root/${'d/'.repeat(64)}f`;
    const list = insertAfter(entries(), FAKE, fileEntry(deep, 'x', { planned: false }));
    await expectRefusal(build({ entries: list }), 'verify_capacity_path_components');
  });
});

// ────────────────────────────────────────────────────────────────────────────────────────────
describe('paths', () => {
  it('refuses an absolute tar member path, writing nothing at its target', async () => {
    const target = join(outside, 'escaped');
    const list = insertAfter(entries(), FAKE, fileEntry(target, 'pwned', { planned: false }));
    await expectRefusal(build({ entries: list }), 'member_path_absolute', [outside]);
    expect(lexists(target)).toBe(false);
  });

  it('refuses a planned path with ".." (plan check, before decoding)', async () => {
    const list = [...entries(), fileEntry('runtime-root/../../../escaped', 'pwned')];
    const s = build({ entries: list });
    await expectRefusal(s, 'member_path_traversal', [join(s.dir, 'escaped')]);
  });

  it('refuses a tar member path with ".." that the manifest does not list', async () => {
    const list = insertAfter(entries(), FAKE, fileEntry('runtime-root/../../../escaped', 'pwned', { planned: false }));
    const s = build({ entries: list });
    await expectRefusal(s, 'member_path_traversal', [join(s.dir, 'escaped')]);
  });

  it('refuses a PAX path record that smuggles ".." under a benign ustar name', async () => {
    const list = insertAfter(
      entries(),
      FAKE,
      fileEntry('runtime-root/ok.txt', 'pwned', { tar: { pax: [['path', '../../escaped']] } }),
    );
    const s = build({ entries: list });
    await expectRefusal(s, 'member_path_traversal', [join(s.dir, 'escaped')]);
  });

  it('refuses ".." hidden in the ustar prefix field', async () => {
    const list = insertAfter(
      entries(),
      FAKE,
      fileEntry('runtime-root/escaped', 'pwned', {
        planned: false,
        tar: { prefix: 'runtime-root/../..', name: 'escaped' },
      }),
    );
    const s = build({ entries: list });
    await expectRefusal(s, 'member_path_traversal', [join(s.dir, 'escaped')]);
  });

  it('refuses a planned "." component', async () => {
    await expectRefusal(
      build({ entries: [...entries(), fileEntry('runtime-root/./dot.txt', 'x')] }),
      'member_path_invalid',
    );
  });

  it('refuses a planned empty component', async () => {
    await expectRefusal(
      build({ entries: [...entries(), fileEntry('runtime-root//empty.txt', 'x')] }),
      'member_path_invalid',
    );
  });

  it('refuses a planned backslash path', async () => {
    const s = build({ entries: [...entries(), fileEntry('runtime-root/..\\..\\escaped', 'x')] });
    await expectRefusal(s, 'member_path_invalid', [join(s.dir, 'escaped')]);
  });

  it('refuses a planned path with NUL', async () => {
    await expectRefusal(
      build({ entries: [...entries(), fileEntry('runtime-root/a\u0000.txt', 'x')] }),
      'member_path_invalid',
    );
  });

  it('refuses a control character in a tar member name', async () => {
    const list = insertAfter(entries(), FAKE, fileEntry('runtime-root/bell\u0007.txt', 'x', { planned: false }));
    await expectRefusal(build({ entries: list }), 'member_path_invalid');
  });

  it('refuses a tar member outside the top-level names', async () => {
    const list = insertAfter(entries(), FAKE, fileEntry('evil.sh', '#!/bin/sh\n', { planned: false }));
    await expectRefusal(build({ entries: list }), 'member_path_invalid');
  });

  it('refuses a "./"-prefixed tar member name', async () => {
    const list = insertAfter(entries(), FAKE, fileEntry('./runtime-root/dotted.txt', 'x', { planned: false }));
    await expectRefusal(build({ entries: list }), 'member_path_invalid');
  });

  it('refuses a tar member name that is not valid UTF-8', async () => {
    const name = Buffer.concat([Buffer.from('runtime-root/'), Buffer.from([0xff, 0xfe, 0x2e, 0x74])]);
    const extra: CorpusEntry = {
      path: 'runtime-root/not-utf8',
      type: 'file',
      planned: false,
      emit: (t) => t.header({ name, typeflag: '0', size: 1 }).data(Buffer.from('x')),
    };
    await expectRefusal(build({ entries: insertAfter(entries(), FAKE, extra) }), 'member_path_invalid');
  });
});

// ────────────────────────────────────────────────────────────────────────────────────────────
describe('collisions', () => {
  it('refuses a path the manifest lists twice', async () => {
    await expectRefusal(build({ plan: (m) => [...m, { ...m.find((x) => x.path === FAKE)! }] }), 'member_duplicate');
  });

  it('refuses a tar member that repeats an earlier path (an overwrite)', async () => {
    const list = insertAfter(entries(), FAKE, fileEntry(FAKE, 'overwritten', { planned: false }));
    await expectRefusal(build({ entries: list }), 'member_duplicate');
  });

  it('refuses planned NFC/NFD twins', async () => {
    const nfc = 'runtime-root/caf\u00e9.md';
    const nfd = 'runtime-root/cafe\u0301.md';
    expect(nfd.normalize('NFC')).toBe(nfc);
    await expectRefusal(
      build({ entries: [...entries(), fileEntry(nfc, 'one'), fileEntry(nfd, 'two')] }),
      'member_unicode_collision',
    );
  });

  it('refuses planned case twins', async () => {
    await expectRefusal(
      build({
        entries: [...entries(), fileEntry('runtime-root/Readme.md', 'one'), fileEntry('runtime-root/README.md', 'two')],
      }),
      'member_case_collision',
    );
  });

  it('refuses a tar member that case-collides with an earlier one (not in the manifest)', async () => {
    const list = insertAfter(entries(), FAKE, fileEntry('runtime-root/FAKE.DB', 'twin', { planned: false }));
    await expectRefusal(build({ entries: list }), 'member_case_collision');
  });

  it('refuses a tar member that is the NFD twin of an earlier NFC one (not in the manifest)', async () => {
    const nfc = 'runtime-root/goals/alpha/docs/notes-é.md';
    const nfd = nfc.normalize('NFD');
    expect(nfd).not.toBe(nfc);
    const list = insertAfter(entries(), nfc, fileEntry(nfd, 'twin', { planned: false }));
    await expectRefusal(build({ entries: list }), 'member_unicode_collision');
  });
});

// ────────────────────────────────────────────────────────────────────────────────────────────
describe('links', () => {
  it('refuses a symlink to an absolute target', async () => {
    await expectRefusal(
      build({ entries: [...entries(), linkEntry('runtime-root/etc', '/etc')] }),
      'member_link_escapes',
    );
  });

  it('refuses a symlink whose relative target leaves the workspace', async () => {
    const s = build({ entries: [...entries(), linkEntry('runtime-root/out', '../../escaped')] });
    await expectRefusal(s, 'member_link_escapes', [join(s.dir, 'escaped')]);
  });

  it('refuses a symlink that escapes only through another symlink (lexically inside)', async () => {
    // a/l2 → ".." is runtime-root; l1 → "a/l2/../.." is the top lexically but outside once l2 is followed.
    const list = [
      ...entries(),
      dirEntry('runtime-root/a'),
      linkEntry('runtime-root/a/l2', '..'),
      linkEntry('runtime-root/l1', 'a/l2/../..'),
    ];
    await expectRefusal(build({ entries: list }), 'member_link_escapes');
  });

  it('refuses links that escape only once a LATER link is known (order cannot defeat the check)', async () => {
    // In archive order each looks inside: a's target walks b/b/… before b exists; b → "." then
    // makes a resolve to the file system root, and configuration-backup.json reach /dev/zero.
    const a = `${'b/'.repeat(12)}${'../'.repeat(12)}..`;
    const list = [...entries(), linkEntry('runtime-root/a', a), linkEntry('runtime-root/b', '.')];
    await expectRefusal(build({ entries: list }), 'member_link_escapes');
  });

  it('refuses a link whose target walks through a name the archive does not hold', async () => {
    const list = [...entries(), linkEntry('runtime-root/l', 'nothere/../goals')];
    await expectRefusal(build({ entries: list }), 'member_link_escapes');
  });

  it('refuses bidi overrides, C1 controls and byte-order marks in names and link targets', async () => {
    await expectRefusal(
      build({ entries: [...entries(), fileEntry('runtime-root/evil\u202etxt.sh', 'x')] }),
      'member_path_invalid',
    );
    await expectRefusal(
      build({ entries: [...entries(), fileEntry('runtime-root/\ufeffname', 'x')] }),
      'member_path_invalid',
    );
    await expectRefusal(
      build({ entries: [...entries(), linkEntry('runtime-root/l', 'goals\u0085')] }),
      'member_path_invalid',
    );
  });

  it('refuses a member beneath a symlink member', async () => {
    const list = [...entries(), linkEntry('runtime-root/lnk', 'goals'), fileEntry('runtime-root/lnk/evil.txt', 'x')];
    await expectRefusal(build({ entries: list }), 'member_through_link');
  });

  it('refuses a symlink chain longer than 40 hops', async () => {
    const chain: CorpusEntry[] = [];
    for (let i = 44; i >= 0; i--) chain.push(linkEntry(`runtime-root/l${i}`, i === 44 ? 'goals' : `l${i + 1}`));
    await expectRefusal(build({ entries: [...entries(), ...chain] }), 'verify_capacity_link_hops');
  });

  it('refuses a symlink loop', async () => {
    const list = [...entries(), linkEntry('runtime-root/la', 'lb'), linkEntry('runtime-root/lb', 'la')];
    await expectRefusal(build({ entries: list }), 'verify_capacity_link_hops');
  });

  it('refuses a PAX linkpath that points a planned internal symlink outside', async () => {
    const list = [...entries(), linkEntry('runtime-root/lnk', 'goals', { tar: { pax: [['linkpath', '/etc']] } })];
    await expectRefusal(build({ entries: list }), 'member_link_escapes');
  });

  it('refuses a symlink whose target differs from the plan', async () => {
    const list = [
      ...entries(),
      linkEntry('runtime-root/lnk', 'goals', { emit: (t) => t.symlink('runtime-root/lnk', 'machine') }),
    ];
    await expectRefusal(build({ entries: list }), 'member_plan_mismatch');
  });

  it('extracts a planned internal symlink as an inert link', async () => {
    const s = build({ entries: [...entries(), linkEntry('runtime-root/goals-link', 'goals')] });
    const workspace = await expectVerified(s);
    expect(lstatSync(join(workspace, 'runtime-root/goals-link')).isSymbolicLink()).toBe(true);
    expect(readlinkSync(join(workspace, 'runtime-root/goals-link'))).toBe('goals');
  }, 60_000);

  const hardlink = (name: string, target: string): CorpusEntry => ({
    path: name,
    type: 'file',
    planned: false,
    emit: (t) => t.hardlink(name, target),
  });

  it('refuses a hard link to a path outside the workspace', async () => {
    const list = insertAfter(entries(), 'runtime-root', hardlink('runtime-root/passwd', '/etc/passwd'));
    await expectRefusal(build({ entries: list }), 'member_link_escapes');
  });

  it('refuses a hard link to a directory member', async () => {
    const list = insertAfter(entries(), FAKE, hardlink('runtime-root/hl', 'runtime-root'));
    await expectRefusal(build({ entries: list }), 'member_hardlink_ambiguous');
  });

  it('refuses a hard link to a file that comes later', async () => {
    const list = insertAfter(entries(), 'runtime-root', hardlink('runtime-root/hl', 'runtime-root/registry.json'));
    await expectRefusal(build({ entries: list }), 'member_hardlink_ambiguous');
  });

  it('refuses a hard link to an earlier regular file', async () => {
    const list = insertAfter(entries(), FAKE, hardlink('runtime-root/hl', 'configuration-backup.json'));
    await expectRefusal(build({ entries: list }), 'member_hardlink_unsupported');
  });

  it('refuses a planned member listed before its parent directory', async () => {
    const list = [...entries(), fileEntry('runtime-root/newdir/x', 'x'), dirEntry('runtime-root/newdir')];
    await expectRefusal(build({ entries: list }), 'member_parent_missing');
  });

  it('refuses a planned member whose parent is a file', async () => {
    await expectRefusal(build({ entries: [...entries(), fileEntry(`${FAKE}/x`, 'x')] }), 'member_parent_missing');
  });

  it('refuses a tar that writes a member before its (planned, earlier) parent directory', async () => {
    const child = fileEntry('runtime-root/newdir/x', 'x');
    const list: CorpusEntry[] = [
      ...entries(),
      { ...dirEntry('runtime-root/newdir'), emit: (t) => t.file('runtime-root/newdir/x', Buffer.from('x')) },
      { ...child, emit: (t) => t.dir('runtime-root/newdir') },
    ];
    await expectRefusal(build({ entries: list }), 'member_parent_missing');
  });
});

// ────────────────────────────────────────────────────────────────────────────────────────────
describe('special members', () => {
  const special = (flag: string): CorpusEntry => ({
    path: 'runtime-root/special',
    type: 'file',
    planned: false,
    emit: (t) => t.header({ name: 'runtime-root/special', typeflag: flag, size: 0, devmajor: 1, devminor: 3 }),
  });

  it.each([
    ['3', 'character device'],
    ['4', 'block device'],
    ['6', 'FIFO'],
    ['Z', 'unknown type flag'],
  ])('refuses typeflag %s (%s)', async (flag) => {
    await expectRefusal(build({ entries: insertAfter(entries(), FAKE, special(flag)) }), 'member_special_type');
  });

  it("refuses a GNU sparse member (typeflag 'S')", async () => {
    await expectRefusal(build({ entries: insertAfter(entries(), FAKE, special('S')) }), 'member_sparse');
  });

  it('refuses PAX GNU.sparse.* records', async () => {
    const pax = [
      ['GNU.sparse.major', '1'],
      ['GNU.sparse.minor', '0'],
      ['GNU.sparse.name', FAKE],
      ['GNU.sparse.realsize', '1073741824'],
    ] as const;
    await expectRefusal(
      build({ entries: replaceEntry(entries(), FAKE, (e) => ({ ...e, tar: { pax } })) }),
      'member_sparse',
    );
  });

  it('ignores setuid/setgid/sticky bits, foreign uid/gid and odd modes: files 0600, directories 0700, owned by this user', async () => {
    const list = [
      ...entries(),
      dirEntry('runtime-root/wide', { tar: { mode: 0o7777, uid: 1234, gid: 1234, uname: 'evil', gname: 'evil' } }),
      fileEntry('runtime-root/wide/suid.bin', '#!/bin/sh\nid\n', {
        tar: { mode: 0o6755, uid: 1234, gid: 1234, uname: 'evil', gname: 'evil' },
      }),
    ];
    const workspace = await expectVerified(build({ entries: list }));
    const dir = lstatSync(join(workspace, 'runtime-root/wide'));
    const file = lstatSync(join(workspace, 'runtime-root/wide/suid.bin'));
    expect(dir.mode & 0o7777).toBe(0o700);
    expect(file.mode & 0o7777).toBe(0o600);
    for (const st of [dir, file]) expect([st.uid, st.gid]).toEqual([process.getuid!(), process.getgid!()]);
  }, 60_000);
});

// ────────────────────────────────────────────────────────────────────────────────────────────
describe('tar format', () => {
  const fakeWith = (tar: NonNullable<CorpusEntry['tar']>): BuildOptions => ({
    entries: replaceEntry(entries(), FAKE, (e) => ({ ...e, tar })),
  });
  const before = (emit: (t: RawTar) => void): BuildOptions => ({
    entries: replaceEntry(entries(), FAKE, (e) => ({ ...e, emit: (t) => (emit(t), t.file(FAKE, e.data!)) })),
  });

  it('refuses a corrupt header checksum', async () => {
    await expectRefusal(build(fakeWith({ checksum: 'corrupt' })), 'tar_header_invalid');
  });

  it('refuses old-GNU magic ("ustar  \\0")', async () => {
    await expectRefusal(build(fakeWith({ magic: 'ustar ', version: ' \0' })), 'tar_header_invalid');
  });

  it('refuses a size field that is not octal', async () => {
    await expectRefusal(
      build(fakeWith({ raw: { size: Buffer.from('00000000033x', 'latin1') } })),
      'tar_header_invalid',
    );
  });

  it('refuses a base-256 size field', async () => {
    await expectRefusal(
      build(fakeWith({ raw: { size: base256Field(dataOf(FAKE).length, 12) } })),
      'tar_header_invalid',
    );
  });

  it("refuses a PAX global header ('g')", async () => {
    await expectRefusal(
      build(before((t) => t.pax([['path', 'runtime-root/../../escaped']], { typeflag: 'g' }))),
      'tar_header_unsupported',
    );
  });

  it("refuses a GNU long name ('L')", async () => {
    await expectRefusal(build(before((t) => t.gnuLong('L', 'runtime-root/../../escaped'))), 'tar_header_unsupported');
  });

  it("refuses a GNU long link name ('K')", async () => {
    const list = [
      ...entries(),
      linkEntry('runtime-root/lnk', 'goals', {
        emit: (t) => (t.gnuLong('K', '/etc/shadow'), t.symlink('runtime-root/lnk', 'goals')),
      }),
    ];
    await expectRefusal(build({ entries: list }), 'tar_header_unsupported');
  });

  it('refuses a PAX size record (a size override)', async () => {
    await expectRefusal(build(fakeWith({ pax: [['size', '1024']] })), 'tar_header_unsupported');
  });

  it('refuses PAX SCHILY.xattr.* records', async () => {
    await expectRefusal(
      build(fakeWith({ pax: [['SCHILY.xattr.security.selinux', 'system_u:object_r:shadow_t:s0']] })),
      'tar_header_unsupported',
    );
  });

  it('refuses a PAX charset record', async () => {
    await expectRefusal(build(fakeWith({ pax: [['hdrcharset', 'BINARY']] })), 'tar_header_unsupported');
  });

  it('refuses an arbitrary PAX key', async () => {
    await expectRefusal(build(fakeWith({ pax: [['LOOPX.authority', 'granted']] })), 'tar_header_unsupported');
  });

  it('refuses a PAX record whose length does not match its bytes', async () => {
    await expectRefusal(
      build(before((t) => t.pax([], { raw: Buffer.from(`99 path=${FAKE}\n`) }))),
      'tar_header_invalid',
    );
  });

  it('refuses a stream that ends in the middle of a member', async () => {
    const work = 'runtime-root/goals/alpha/work.db';
    const cut = offsetOf(entries(), work) + 512 + 1000;
    await expectRefusal(build({ tar: (b) => b.subarray(0, cut) }), 'archive_truncated');
  });

  it('refuses a stream without end-of-archive blocks', async () => {
    await expectRefusal(build({ end: () => undefined }), 'archive_truncated');
  });

  it('refuses a stream with a single end-of-archive block', async () => {
    await expectRefusal(build({ end: (t) => t.end(1) }), 'archive_truncated');
  });

  it('refuses a member smuggled after the end-of-archive blocks', async () => {
    const s = build({ end: (t) => t.end().file('runtime-root/smuggled.txt', Buffer.from('payload')).end() });
    await expectRefusal(s, 'archive_trailing_data');
  });
});

// ────────────────────────────────────────────────────────────────────────────────────────────
describe('gzip', () => {
  const smuggled = new RawTar().file('runtime-root/smuggled.txt', Buffer.from('payload')).end().bytes();
  /** Declare the whole decompressed stream (every member) so that only the trailing-data rule applies. */
  const declareAll = (extra: number) => (m: ManifestDoc) => (exec(m).archive_expanded_bytes += extra);

  it('refuses an archive that is not gzip (a bare tar)', async () => {
    await expectRefusal(build({ gzip: (tar) => tar }), 'archive_gzip_invalid');
  });

  it('refuses a gzip header with an unknown compression method', async () => {
    await expectRefusal(build({ gzip: (tar) => ((g) => ((g[2] = 7), g))(gzip(tar)) }), 'archive_gzip_invalid');
  });

  it('refuses a gzip stream whose CRC does not match', async () => {
    await expectRefusal(
      build({ gzip: (tar) => ((g) => ((g[g.length - 8]! ^= 0xff), g))(gzip(tar)) }),
      'archive_gzip_invalid',
    );
  });

  it('refuses a gzip stream cut before its trailer', async () => {
    await expectRefusal(build({ gzip: (tar) => gzip(tar).subarray(0, -8) }), 'archive_gzip_invalid');
  });

  it('refuses bytes after the gzip stream', async () => {
    await expectRefusal(
      build({ gzip: (tar) => gzip(tar, { trailing: Buffer.from('GARBAGE!') }) }),
      'archive_trailing_data',
    );
  });

  it('refuses megabytes after the gzip stream without stalling (more than the stream buffers hold)', async () => {
    const started = Date.now();
    await expectRefusal(
      build({ gzip: (tar) => gzip(tar, { trailing: Buffer.alloc(3 * 1024 * 1024, 0x41) }) }),
      'archive_trailing_data',
    );
    expect(Date.now() - started).toBeLessThan(20_000);
  }, 30_000);

  it('refuses zero bytes after the gzip stream', async () => {
    await expectRefusal(build({ gzip: (tar) => gzip(tar, { trailing: Buffer.alloc(1024) }) }), 'archive_trailing_data');
  });

  it('refuses a concatenated gzip member that smuggles a tar member', async () => {
    const s = build({ gzip: (tar) => gzip(tar, { members: [smuggled] }), external: declareAll(smuggled.length) });
    await expectRefusal(s, 'archive_trailing_data');
  });

  it('refuses a concatenated gzip member of zero blocks', async () => {
    const s = build({ gzip: (tar) => gzip(tar, { members: [Buffer.alloc(10240)] }), external: declareAll(10240) });
    await expectRefusal(s, 'archive_trailing_data');
  });
});

// ────────────────────────────────────────────────────────────────────────────────────────────
describe('plan agreement', () => {
  it('refuses a tar member the manifest does not list', async () => {
    await expectRefusal(
      build({
        entries: insertAfter(entries(), FAKE, fileEntry('runtime-root/smuggled.txt', 'payload', { planned: false })),
      }),
      'member_unplanned',
    );
  });

  it('refuses a manifest member the tar does not hold', async () => {
    await expectRefusal(
      build({
        entries: insertAfter(entries(), FAKE, fileEntry('runtime-root/ghost.txt', 'ghost', { archived: false })),
      }),
      'member_missing',
    );
  });

  it('refuses a planned file that the tar writes as a directory', async () => {
    await expectRefusal(
      build({ entries: replaceEntry(entries(), FAKE, (e) => ({ ...e, emit: (t) => t.dir(FAKE) })) }),
      'member_plan_mismatch',
    );
  });

  it('refuses a planned directory that the tar writes as a file', async () => {
    const dir = 'runtime-root/goals/beta/empty';
    await expectRefusal(
      build({ entries: replaceEntry(entries(), dir, (e) => ({ ...e, emit: (t) => t.file(dir, Buffer.alloc(0)) })) }),
      'member_plan_mismatch',
    );
  });

  it('refuses a member whose size differs from the plan', async () => {
    const list = replaceEntry(entries(), FAKE, (e) => ({
      ...e,
      emit: (t) => t.file(FAKE, Buffer.concat([e.data!, Buffer.from('!')])),
    }));
    await expectRefusal(build({ entries: list }), 'member_plan_mismatch');
  });

  it('refuses a member whose bytes differ from the plan (same size)', async () => {
    const reg = 'runtime-root/registry.json';
    const forged = Buffer.from(dataOf(reg));
    forged[forged.length - 2]! ^= 0x01;
    const list = replaceEntry(entries(), reg, (e) => ({ ...e, emit: (t) => t.file(reg, forged) }));
    await expectRefusal(build({ entries: list }), 'member_digest_mismatch');
  });

  it('refuses an archive without manifest.json', async () => {
    await expectRefusal(build({ embedded: { omit: true } }), 'verify_embedded_manifest_missing');
  });

  it('refuses an embedded manifest whose document differs (its digest recorded)', async () => {
    const s = build({
      embedded: {
        recordActual: true,
        bytes: (b) => {
          const doc = JSON.parse(b.toString('utf8')) as Record<string, unknown>;
          doc.created_at = '2000-01-01T00:00:00.000Z';
          return serialize(doc);
        },
      },
    });
    await expectRefusal(s, 'verify_embedded_manifest_mismatch');
  });

  it('refuses embedded manifest bytes that differ from the recorded digest (same document)', async () => {
    const s = build({ embedded: { bytes: (b) => Buffer.from(`${JSON.stringify(JSON.parse(b.toString('utf8')))}\n`) } });
    await expectRefusal(s, 'verify_embedded_manifest_mismatch');
  });

  it('refuses a tar stream whose length differs from archive_expanded_bytes', async () => {
    await expectRefusal(
      build({ external: (m) => (exec(m).archive_expanded_bytes += 512) }),
      'verify_archive_expanded_mismatch',
    );
  });
});

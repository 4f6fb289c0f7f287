/**
 * Step 1 of verification (RFC §5): a regular archive and external manifest, bounded, the manifest
 * decoded and schema-checked, and the archive's digest and size compared with the manifest's —
 * all before a single byte is decompressed. The archive stays bound: the later scan reads the same
 * file description (or its source again: archive-source.ts), and its own witness of the bytes it
 * consumed must equal this preflight's.
 */
import { createHash } from 'node:crypto';
import { closeSync, constants, fstatSync, lstatSync, openSync, readSync } from 'node:fs';
import { statSync } from 'node:fs';
import { readRegularFileOnce, notFound, rejected, type LoopxError } from '../core/index.js';
import type { ValidateFunction } from 'ajv/dist/2020.js';
import { BACKUP_SCHEMA, BACKUP_SCHEMA_V1, type BackupManifest } from '../backup/index.js';
import { INPUT_CODES } from './codes.js';
import { RECOVERY_LIMITS } from './limits.js';
import { capacityRefusal } from './members.js';
import { fileArchive, sourceArchive, type ArchiveSource, type BoundArchive } from './archive-source.js';

export interface BoundInputs {
  readonly archive: BoundArchive;
  readonly archiveSize: number;
  readonly archiveSha256: string;
  readonly manifest: BackupManifest;
  readonly manifestSha256: string;
  readonly manifestSize: number;
}

/** Large reads: hashing the archive runs at SHA-256's own speed, not at a syscall per small chunk. */
const READ_CHUNK = 4 * 1024 * 1024;

/** The archive or the manifest is missing, a link, or not a regular file. */
const notRegular = (input: 'archive' | 'manifest'): LoopxError =>
  notFound(INPUT_CODES.notRegular, `The ${input} is missing or is not a regular file.`, {
    nextAction: `pass the ${input} file itself (not a link or directory)`,
    details: { input },
  });

const manifestInvalid = (why: string, revision = BACKUP_SCHEMA): LoopxError =>
  rejected(INPUT_CODES.manifestInvalid, `The manifest is not a valid ${revision} manifest (${why}).`, {
    nextAction: 'pass the .manifest.json that backup-state published with this archive',
  });

/** Opens `path` without following a final link and requires a regular file. */
function openRegular(path: string, input: 'archive' | 'manifest'): number {
  const refuse = (): never => {
    throw notRegular(input);
  };
  try {
    if (!lstatSync(path).isFile()) refuse();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code) refuse();
    throw e;
  }
  let fd: number;
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch {
    return refuse();
  }
  if (!fstatSync(fd).isFile()) {
    closeSync(fd);
    refuse();
  }
  return fd;
}

const TOO_LARGE = 'too large';

/**
 * A bounded regular file read once without following a link (core/read-once): a missing path or
 * a non-regular file is `verify_input_not_regular`, a file over `max` the named capacity refusal.
 */
export function readBounded(
  path: string,
  input: 'archive' | 'manifest',
  max: number,
  limit: 'manifestBytes',
): Uint8Array {
  const bytes = readRegularFileOnce(path, max, {
    tooLarge: TOO_LARGE,
    unreadable: (what) => (what === TOO_LARGE ? capacityRefusal(limit, statSync(path).size, max) : notRegular(input)),
  });
  if (bytes === null) throw notRegular(input);
  return bytes;
}

/** Maximum nesting of a JSON text, found without parsing it (so a deep document never reaches JSON.parse). */
export function jsonDepthExceeds(bytes: Uint8Array, limit: number): number | undefined {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const c = bytes[i]!;
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x7b || c === 0x5b) {
      if (++depth > limit) return depth;
    } else if (c === 0x7d || c === 0x5d) depth--;
  }
  return undefined;
}

/** Decode a manifest's bytes: size, depth, JSON. Schema checks are the caller's. */
export function decodeManifestBytes(bytes: Uint8Array): unknown {
  if (bytes.byteLength > RECOVERY_LIMITS.manifestBytes)
    throw capacityRefusal('manifestBytes', bytes.byteLength, RECOVERY_LIMITS.manifestBytes);
  const depth = jsonDepthExceeds(bytes, RECOVERY_LIMITS.jsonDepth);
  if (depth !== undefined) throw capacityRefusal('jsonDepth', depth, RECOVERY_LIMITS.jsonDepth);
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes)) as unknown;
  } catch {
    throw manifestInvalid('not valid UTF-8 JSON');
  }
}

/**
 * The manifest revisions this verifier reads (dual-read), each with the validator of its published
 * schema (docs/schemas/state-backup-manifest-v{0,1}.schema.json), generated ahead of time as Ajv
 * standalone code by scripts/manifest-validators.mjs: compiling the schema here cost ~0.5 s per run.
 * The generated code is 1.4 MB that only a verification uses, and loading it costs ~50 ms, so it is
 * imported on the first verification rather than by every command that loads the runtime.
 */
type ManifestValidators = Readonly<Record<string, ValidateFunction>>;
let validators: Promise<ManifestValidators> | undefined;
export function manifestValidators(): Promise<ManifestValidators> {
  validators ??= Promise.all([import('./gen/manifest-v0.js'), import('./gen/manifest-v1.js')]).then(([v0, v1]) => ({
    [BACKUP_SCHEMA]: v0.validate as unknown as ValidateFunction,
    [BACKUP_SCHEMA_V1]: v1.validate as unknown as ValidateFunction,
  }));
  return validators;
}

/** Schema and internal consistency of a decoded external manifest. */
export function checkManifest(doc: unknown, validatorOf: ManifestValidators): BackupManifest {
  let revision = BACKUP_SCHEMA;
  const invalid = (why: string): never => {
    throw manifestInvalid(why, revision);
  };
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) invalid('not an object');
  const schema = (doc as { schema_version?: unknown }).schema_version;
  if (typeof schema !== 'string' || !Object.hasOwn(validatorOf, schema)) {
    throw rejected(
      INPUT_CODES.manifestSchemaUnknown,
      'The manifest has a schema_version this verifier does not read.',
      {
        nextAction: 'verify it with the loopx version that produced it',
        details: { schema_version: typeof schema === 'string' && /^[a-z0-9_]{1,64}$/.test(schema) ? schema : null },
      },
    );
  }
  revision = schema as string;
  const validate = validatorOf[schema as string]!;
  if (!validate(doc)) {
    const first = validate.errors?.[0];
    invalid(`${first?.instancePath || '/'} ${first?.message ?? ''}`.replace(/[^\x20-\x7e]/g, '?').slice(0, 160));
  }
  const m = doc as BackupManifest;
  const files = m.members.filter((x) => x.type === 'file');
  if (m.execution.member_count !== m.members.length + 1) invalid('member_count disagrees with members');
  if (m.execution.file_members.length !== files.length) invalid('file_members disagrees with members');
  m.execution.file_members.forEach((f, i) => {
    const x = files[i]!;
    if (f.archive_path !== x.path || f.size_bytes !== x.size_bytes || f.sha256 !== x.sha256)
      invalid('file_members disagrees with members');
  });
  if (
    m.execution.archive_sha256 === null ||
    m.execution.archive_size_bytes === null ||
    m.execution.embedded_manifest === null ||
    m.execution.archive_expanded_bytes === null
  ) {
    invalid('it is an embedded copy, not the external manifest');
  }
  return m;
}

/** The archive's size and SHA-256, read once: a local file in large synchronous reads, a source in its own chunks. */
async function digestPass(
  archive: string | ArchiveSource,
): Promise<{ bound: BoundArchive; total: number; sha: string }> {
  const hash = createHash('sha256');
  let total = 0;
  const add = (chunk: Uint8Array): void => {
    hash.update(chunk);
    total += chunk.byteLength;
    if (total > RECOVERY_LIMITS.archiveBytes)
      throw capacityRefusal('archiveBytes', total, RECOVERY_LIMITS.archiveBytes);
  };
  if (typeof archive !== 'string') {
    const bound = sourceArchive(archive);
    const pass = bound.pass();
    try {
      for (let r = await pass.next(); r.done !== true; r = await pass.next()) add(r.value);
    } finally {
      await pass.return?.(undefined);
    }
    return { bound, total, sha: hash.digest('hex') };
  }
  const fd = openRegular(archive, 'archive');
  const bound = fileArchive(fd);
  try {
    const size = fstatSync(fd).size;
    if (size > RECOVERY_LIMITS.archiveBytes) throw capacityRefusal('archiveBytes', size, RECOVERY_LIMITS.archiveBytes);
    const buf = Buffer.allocUnsafe(READ_CHUNK);
    for (let n = readSync(fd, buf, 0, READ_CHUNK, 0); n > 0; n = readSync(fd, buf, 0, READ_CHUNK, total))
      add(buf.subarray(0, n));
    return { bound, total, sha: hash.digest('hex') };
  } catch (e) {
    bound.close();
    throw e;
  }
}

/** The external manifest's bytes: a regular file read once, bounded, or bytes already read (from a repository). */
function manifestBytes(manifest: string | Uint8Array): Uint8Array {
  if (typeof manifest === 'string')
    return readBounded(manifest, 'manifest', RECOVERY_LIMITS.manifestBytes, 'manifestBytes');
  if (manifest.byteLength > RECOVERY_LIMITS.manifestBytes)
    throw capacityRefusal('manifestBytes', manifest.byteLength, RECOVERY_LIMITS.manifestBytes);
  return manifest;
}

/**
 * Step 1. On success the archive is bound (the caller closes `archive`): a local file's path, or a
 * source read twice (this digest pass, then the scan) — never decoded before the digest matches.
 */
export async function bindInputs(archive: string | ArchiveSource, manifest: string | Uint8Array): Promise<BoundInputs> {
  const bytes = manifestBytes(manifest);
  const checked = checkManifest(decodeManifestBytes(bytes), await manifestValidators());
  const manifestSha256 = createHash('sha256').update(bytes).digest('hex');
  const { bound, total, sha } = await digestPass(archive);
  if (total !== checked.execution.archive_size_bytes || sha !== checked.execution.archive_sha256) {
    bound.close();
    throw rejected(INPUT_CODES.archiveDigestMismatch, "The archive's SHA-256 or size differs from the manifest's.", {
      nextAction: 'pass the archive and manifest of the same backup, both unmodified',
    });
  }
  return {
    archive: bound,
    archiveSize: total,
    archiveSha256: sha,
    manifest: checked,
    manifestSha256,
    manifestSize: bytes.byteLength,
  };
}

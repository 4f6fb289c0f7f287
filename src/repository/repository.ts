/**
 * The repository format (`loopx.repository/v1`) over any provider's objects (contract.ts):
 *
 *   loopx-repository.json            the configuration: format, repository id, creation time
 *   backups/<id>/<id>.tar.gz         a backup's archive          } published in this order, each
 *   backups/<id>/<id>.manifest.json  its external manifest       } by a conditional create that
 *   backups/<id>/entry.json          the entry: what the backup  } never overwrites; the entry
 *                                    is and the digests of both  } last
 *   locks/maintenance.json           the maintenance lock (forget, prune), with an expiry
 *
 * A backup exists when its entry does: an interrupted publication leaves objects without an entry,
 * which `ls` never shows as a backup and `check` reports as incomplete. Nothing read from a
 * repository is trusted: the entry's digests only select what to fetch; a backup is verified like
 * any archive (backup-state verify). The repository never learns what a backup holds beyond the
 * entry's cleartext facts (ids, times, sizes, digests, profile).
 */
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { mkdtemp, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { canonicalJson } from '../core/index.js';
import type { ObjectBody, ObjectInfo, RepositoryLocation, RepositoryObjects } from './contract.js';
import { hasCode } from '../core/index.js';
import {
  REPO_CODES,
  alreadyInitialized,
  backupExists,
  backupNotFound,
  conditionalWriteUnsupported,
  encryptionRequired,
  keyRequired,
  entryInvalid,
  formatUnknown,
  locked,
  notInitialized,
  objectDigestMismatch,
  objectMissing,
} from './codes.js';
import { download, readAll } from './read.js';
import type { Recipient } from './seal.js';
import {
  checkSealedObjects,
  checkSealedPair,
  openSealedPair,
  readSealed,
  sealPair,
  sealedOpener,
} from './sealed-pair.js';
import { openRepositoryObjects } from './table.js';
import {
  BACKUPS,
  BACKUP_ID,
  CONFIG_KEY,
  LOCK_KEY,
  SMALL_OBJECT_MAX,
  backupIdOfKey,
  keySetKey,
  keysOf,
  verifiedKey,
} from './layout.js';

export const REPOSITORY_FORMAT = 'loopx.repository/v1';
export const ENTRY_FORMAT = 'loopx.repository-entry/v1';

export interface RepositoryConfig {
  readonly format: typeof REPOSITORY_FORMAT;
  readonly repository_id: string;
  readonly created_at: string;
  /** `required`: every backup published here is encrypted (a plaintext one is refused). */
  readonly encryption: 'required' | 'optional';
}

/** One object of a backup as its entry records it. */
export interface EntryObject {
  readonly role: 'archive' | 'manifest';
  readonly key: string;
  readonly size_bytes: number;
  readonly sha256: string;
}

/** What a repository says of one backup (cleartext, published last). */
export interface BackupEntry {
  readonly format: typeof ENTRY_FORMAT;
  readonly backup_id: string;
  /** When the backup was captured (its manifest's created_at). */
  readonly created_at: string;
  readonly published_at: string;
  /** The root it protects (its opaque id), when the root had one. */
  readonly root_id: string | null;
  readonly producer_version: string;
  readonly capture_profile: string | null;
  readonly encrypted: boolean;
  /** Encrypted: the objects are sealed; their envelope (cleartext, authenticated under the data key) is here. Key sets are under `backups/<id>/keys/`. */
  readonly encryption?: { readonly envelope: Omit<EntryObject, 'role'> };
  readonly objects: readonly EntryObject[];
}

/** A local file of a backup to publish. */
export interface LocalObject {
  readonly path: string;
  readonly size_bytes: number;
  readonly sha256: string;
}

const digestOf = (bytes: Uint8Array) => ({
  size_bytes: bytes.byteLength,
  sha256: createHash('sha256').update(bytes).digest('hex'),
});
const bytesOfJson = (doc: unknown): Uint8Array => new TextEncoder().encode(`${canonicalJson(doc)}\n`);
const parseJson = (bytes: Uint8Array): unknown => JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));

export class Repository {
  private constructor(
    readonly location: RepositoryLocation,
    /** The repository's public name (never a credential or an absolute path). */
    readonly label: string,
    readonly objects: RepositoryObjects,
    readonly config: RepositoryConfig,
  ) {}

  /**
   * Create a repository at `url`: the location must hold no object; the server must honour
   * conditional creates and replaces (probed with a scratch object, removed after); then the
   * configuration is created — conditionally, so two concurrent inits make one repository.
   */
  static async init(
    url: string | RepositoryLocation,
    options: { env?: NodeJS.ProcessEnv; encrypt?: boolean } = {},
  ): Promise<Repository> {
    const { location, label, objects } = await openRepositoryObjects(url, { create: true, ...options });
    try {
      for await (const _ of objects.list('')) throw alreadyInitialized(label);
      await probeConditionalWrites(objects, label);
      const config: RepositoryConfig = {
        format: REPOSITORY_FORMAT,
        repository_id: `repo_${randomBytes(12).toString('hex')}`,
        created_at: new Date().toISOString(),
        encryption: options.encrypt === true ? 'required' : 'optional',
      };
      await objects.create(CONFIG_KEY, bytesOfJson(config)).catch((e: unknown) => {
        throw hasCode(e, REPO_CODES.objectExists) ? alreadyInitialized(label) : e;
      });
      return new Repository(location, label, objects, config);
    } catch (e) {
      await objects.close();
      throw e;
    }
  }

  /** Open the repository at `url`; `repo_not_initialized` when it holds no configuration. */
  static async open(url: string | RepositoryLocation, options: { env?: NodeJS.ProcessEnv } = {}): Promise<Repository> {
    const { location, label, objects } = await openRepositoryObjects(url, options);
    try {
      const bytes = await readAll(objects, CONFIG_KEY, SMALL_OBJECT_MAX).catch((e: unknown) => {
        throw hasCode(e, REPO_CODES.objectMissing) ? notInitialized(label) : e;
      });
      let config: RepositoryConfig;
      try {
        config = parseJson(bytes) as RepositoryConfig;
      } catch {
        throw formatUnknown(label);
      }
      if (
        config?.format !== REPOSITORY_FORMAT ||
        typeof config.repository_id !== 'string' ||
        (config.encryption !== 'required' && config.encryption !== 'optional')
      )
        throw formatUnknown(label);
      return new Repository(location, label, objects, config);
    } catch (e) {
      await objects.close();
      throw e;
    }
  }

  close(): Promise<void> {
    return this.objects.close();
  }

  /**
   * Publish a backup: archive, manifest, then the entry — each a conditional create, so nothing is
   * overwritten and an interrupted publication leaves no entry (no backup). `repo_backup_exists`
   * when the id is taken, by a backup or by the remains of an interrupted publication of it.
   */
  async publish(
    backupId: string,
    files: { readonly archive: LocalObject; readonly manifest: LocalObject },
    facts: Pick<BackupEntry, 'created_at' | 'root_id' | 'producer_version' | 'capture_profile'>,
    options: { readonly recipients?: readonly Recipient[] } = {},
  ): Promise<BackupEntry> {
    if (!BACKUP_ID.test(backupId)) throw entryInvalid(backupId.slice(0, 40), 'the backup id is not a simple name');
    const sealing = options.recipients !== undefined;
    if (this.config.encryption === 'required' && !sealing) throw encryptionRequired();
    const keys = keysOf(backupId, sealing);
    if ((await this.objects.head(keys.entry)) !== undefined) throw backupExists(backupId);
    const put = async (key: string, body: ObjectBody) => {
      await this.objects.create(key, body).catch((e: unknown) => {
        throw hasCode(e, REPO_CODES.objectExists) ? backupExists(backupId) : e;
      });
    };
    const file = (local: LocalObject): ObjectBody => ({ path: local.path, size: local.size_bytes });
    let pair = files;
    let encryption: BackupEntry['encryption'];
    const scratch = sealing ? await mkdtemp(join(dirname(files.archive.path), '.sealing-')) : undefined;
    try {
      if (scratch !== undefined) {
        // Sealed before anything is published: a recipient that does not resolve leaves the repository untouched.
        const sealed = await sealPair(backupId, files, options.recipients!, scratch);
        pair = sealed;
        await put(keys.archive, file(sealed.archive));
        await put(keys.manifest, file(sealed.manifest));
        await put(keySetKey(backupId, 1), sealed.keySet);
        await put(keys.envelope, sealed.envelope);
        encryption = { envelope: { key: keys.envelope, ...digestOf(sealed.envelope) } };
      } else {
        await put(keys.archive, file(files.archive));
        await put(keys.manifest, file(files.manifest));
      }
    } finally {
      if (scratch !== undefined) await rm(scratch, { recursive: true, force: true });
    }
    const entry: BackupEntry = {
      format: ENTRY_FORMAT,
      backup_id: backupId,
      ...facts,
      published_at: new Date().toISOString(),
      encrypted: sealing,
      ...(encryption ? { encryption } : {}),
      objects: [
        { role: 'archive', key: keys.archive, size_bytes: pair.archive.size_bytes, sha256: pair.archive.sha256 },
        { role: 'manifest', key: keys.manifest, size_bytes: pair.manifest.size_bytes, sha256: pair.manifest.sha256 },
      ],
    };
    await put(keys.entry, bytesOfJson(entry));
    return entry;
  }

  /** The entry of one backup; `repo_backup_not_found` when it has none. */
  async entry(backupId: string): Promise<BackupEntry> {
    if (!BACKUP_ID.test(backupId)) throw backupNotFound(backupId.slice(0, 40));
    const bytes = await readAll(this.objects, keysOf(backupId).entry, SMALL_OBJECT_MAX).catch((e: unknown) => {
      throw hasCode(e, REPO_CODES.objectMissing) ? backupNotFound(backupId) : e;
    });
    return checkEntry(backupId, bytes);
  }

  /**
   * Every backup (by entry, oldest first by capture time), when each was last verified from the
   * repository, the ids of incomplete publications (objects without an entry) and of unreadable
   * entries, and every object of each id (what prune reads).
   */
  async list(): Promise<RepositoryList> {
    const ids = new Map<string, ObjectInfo[]>();
    for await (const o of this.objects.list(BACKUPS)) {
      const id = backupIdOfKey(o.key);
      ids.set(id, [...(ids.get(id) ?? []), o]);
    }
    const backups: BackupEntry[] = [];
    const incomplete: string[] = [];
    const bad: string[] = [];
    const verified: Record<string, string> = {};
    for (const [id, objects] of [...ids].sort(([a], [b]) => (a < b ? -1 : 1))) {
      if (!objects.some((o) => o.key === keysOf(id).entry)) {
        incomplete.push(id);
        continue;
      }
      await this.entry(id).then(
        (e) => backups.push(e),
        () => bad.push(id),
      );
      const marks = objects.filter((o) => o.key.startsWith(`${BACKUPS}${id}/verified/`)).map((o) => o.modified);
      if (marks.length > 0) verified[id] = marks.sort().at(-1)!;
    }
    backups.sort((a, b) => (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0));
    return { backups, incomplete, bad, verified, objects: ids };
  }

  /** Record a successful verification of `backupId` from this repository (a hint for retention, never authority). */
  async markVerified(backupId: string, recoveryId: string): Promise<void> {
    const at = new Date();
    await this.objects.create(
      verifiedKey(backupId, at, randomBytes(4).toString('hex')),
      bytesOfJson({ backup_id: backupId, recovery_id: recoveryId, verified_at: at.toISOString() }),
    );
  }

  /**
   * The backup's plaintext pair as local files, checked against its entry: read in place from a
   * directory repository, else streamed into `spoolDir` (a private directory the caller owns). An
   * encrypted backup's sealed objects are checked whole against their envelope first; with `key`
   * (a reference) they are opened into the spool, without it `repo_key_required` says the
   * ciphertext checked out and nothing was extracted.
   */
  async fetch(
    entry: BackupEntry,
    spoolDir: string,
    options: { readonly key?: string; readonly env?: NodeJS.ProcessEnv } = {},
  ): Promise<{ readonly archive: string; readonly manifest: string }> {
    const paths: Record<string, string> = {};
    for (const o of entry.objects) {
      const local = await this.objects.localPath?.(o.key);
      if (local === undefined) {
        paths[o.role] = join(spoolDir, o.key.split('/').pop()!);
        await download(this.objects, o.key, paths[o.role]!, o);
      } else {
        paths[o.role] = local;
        // The manifest is small: its digest is checked here; the archive's is the verifier's first step.
        if (o.role === 'manifest') await this.readChecked(o);
      }
    }
    const pair = { archive: paths.archive!, manifest: paths.manifest! };
    if (!entry.encrypted) return pair;
    const sealed = readSealed(
      await this.readChecked(entry.encryption!.envelope),
      (await this.keySets(entry.backup_id)).newest.bytes,
    );
    if (options.key === undefined) {
      await checkSealedPair(entry.backup_id, sealed, pair);
      throw keyRequired(entry.backup_id);
    }
    const opened = await mkdtemp(join(spoolDir, 'opened-'));
    return openSealedPair(entry.backup_id, sealed, pair, options.key, opened, options.env);
  }

  /**
   * The backup's plaintext pair read straight from the repository, nothing of it written locally:
   * the manifest's bytes (checked against the entry) and the archive as a source whose every read
   * is a fresh read of its object — opened on the fly, segment by segment, when sealed. The
   * verifier reads that source twice (its digest, then the witnessed scan). Without `key` an
   * encrypted backup's sealed objects are checked whole and `repo_key_required` says so.
   */
  async stream(
    entry: BackupEntry,
    options: { readonly key?: string; readonly env?: NodeJS.ProcessEnv } = {},
  ): Promise<{ readonly archive: { read(): AsyncIterable<Uint8Array> }; readonly manifest: Uint8Array }> {
    const objects = this.objects;
    const of = (role: 'archive' | 'manifest') => entry.objects.find((o) => o.role === role)!;
    const bytes = (role: 'archive' | 'manifest') => () => objects.read(of(role).key);
    const manifest = await this.readChecked(of('manifest'));
    if (!entry.encrypted) return { manifest, archive: { read: () => objectChunks(bytes('archive')) } };
    const sealed = readSealed(
      await this.readChecked(entry.encryption!.envelope),
      (await this.keySets(entry.backup_id)).newest.bytes,
    );
    const sealedManifest = () => Promise.resolve([manifest]);
    if (options.key === undefined) {
      await checkSealedObjects(entry.backup_id, sealed, { archive: bytes('archive'), manifest: sealedManifest });
      throw keyRequired(entry.backup_id);
    }
    const open = await sealedOpener(entry.backup_id, sealed, options.key, options.env);
    const plain: Buffer[] = [];
    for await (const chunk of open('manifest', sealedManifest)) plain.push(chunk);
    return { manifest: Buffer.concat(plain), archive: { read: () => open('archive', bytes('archive')) } };
  }

  /** A small object's bytes, refused unless they are the size and SHA-256 recorded for it. */
  async readChecked(o: Omit<EntryObject, 'role'>): Promise<Uint8Array> {
    const bytes = await readAll(this.objects, o.key, o.size_bytes);
    if (bytes.byteLength !== o.size_bytes || createHash('sha256').update(bytes).digest('hex') !== o.sha256)
      throw objectDigestMismatch(o.key);
    return bytes;
  }

  /** The key set objects of an encrypted backup, oldest generation first. */
  private async keySetObjects(backupId: string): Promise<ObjectInfo[]> {
    const keys: ObjectInfo[] = [];
    for await (const o of this.objects.list(keysOf(backupId).keySets)) if (/\/\d{6}\.json$/.test(o.key)) keys.push(o);
    return keys.sort((a, b) => (a.key < b.key ? -1 : 1));
  }

  /**
   * Every key set object of an encrypted backup, and the bytes and generation of the newest
   * (rotation adds generations; the envelope's commitment decides which key is right).
   */
  async keySets(backupId: string): Promise<{
    readonly keys: readonly ObjectInfo[];
    readonly newest: { readonly key: string; readonly generation: number; readonly bytes: Uint8Array };
  }> {
    const keys = await this.keySetObjects(backupId);
    const newest = keys.at(-1);
    if (newest === undefined) throw objectMissing(keySetKey(backupId, 1));
    const generation = Number(newest.key.slice(-11, -5));
    return {
      keys,
      newest: { key: newest.key, generation, bytes: await readAll(this.objects, newest.key, SMALL_OBJECT_MAX) },
    };
  }

  /**
   * Check the repository (restic's `check`): every entry reads and names objects that exist with
   * the recorded sizes — with `readData`, that also stream to the recorded SHA-256 — and every
   * incomplete publication is reported. Findings are data: all of them are returned.
   */
  async check(options: { readonly readData?: boolean } = {}): Promise<RepositoryCheck> {
    const { backups, incomplete, bad } = await this.list();
    const findings: CheckFinding[] = [
      ...incomplete.map((id) => finding(CHECK_FINDINGS.incomplete, 'warning', id)),
      ...bad.map((id) => finding(CHECK_FINDINGS.entryInvalid, 'error', id)),
    ];
    let bytesRead = 0;
    for (const b of backups) {
      if (b.encrypted) {
        const envelope = await this.objects.head(b.encryption!.envelope.key);
        const keySets = await this.keySetObjects(b.backup_id);
        if (envelope?.size !== b.encryption!.envelope.size_bytes || keySets.length === 0)
          findings.push(finding(CHECK_FINDINGS.objectMissing, 'error', b.backup_id));
      }
      for (const o of b.objects) {
        const head = await this.objects.head(o.key);
        if (head === undefined) findings.push(finding(CHECK_FINDINGS.objectMissing, 'error', b.backup_id, o.role));
        else if (head.size !== o.size_bytes)
          findings.push(finding(CHECK_FINDINGS.objectDiffers, 'error', b.backup_id, o.role));
        else if (options.readData) {
          const hash = createHash('sha256');
          for await (const chunk of await this.objects.read(o.key)) hash.update(chunk as Buffer);
          bytesRead += o.size_bytes;
          if (hash.digest('hex') !== o.sha256)
            findings.push(finding(CHECK_FINDINGS.objectDiffers, 'error', b.backup_id, o.role));
        }
      }
    }
    return {
      ok: !findings.some((f) => f.severity === 'error'),
      backups: backups.length,
      read_data: options.readData === true,
      bytes_read: bytesRead,
      findings,
    };
  }

  /** Take the maintenance lock (forget, prune) for `ttlMs`; an expired holder's lock is taken over by its tag. */
  async lock(command: string, ttlMs: number): Promise<MaintenanceLock> {
    const mine = () => ({
      lock_id: randomUUID(),
      holder: `${hostname().slice(0, 64)} pid ${process.pid} (${command})`,
      acquired_at: new Date().toISOString(),
      expires_at: new Date(Date.now() + ttlMs).toISOString(),
    });
    const body = mine();
    try {
      const info = await this.objects.create(LOCK_KEY, bytesOfJson(body));
      return new MaintenanceLock(this.objects, info.etag);
    } catch (e) {
      if (!hasCode(e, REPO_CODES.objectExists)) throw e;
    }
    const head = await this.objects.head(LOCK_KEY);
    if (head === undefined) return this.lock(command, ttlMs); // released meanwhile
    const held = parseJson(await readAll(this.objects, LOCK_KEY, SMALL_OBJECT_MAX)) as ReturnType<typeof mine>;
    if (Date.parse(held.expires_at) > Date.now()) throw locked(held.holder, held.expires_at);
    // Expired: take it over by its tag, so of two processes taking it over one wins.
    const info = await this.objects.replace(LOCK_KEY, head.etag, bytesOfJson(body)).catch((e: unknown) => {
      throw hasCode(e, REPO_CODES.objectChanged) ? locked(held.holder, held.expires_at) : e;
    });
    return new MaintenanceLock(this.objects, info.etag);
  }
}

/** The codes of `repo check`'s findings (data, not refusals). */
export const CHECK_FINDINGS = {
  /** Objects of a publication that did not finish (no entry): not a backup; `repo prune` removes them. */
  incomplete: 'repo_backup_incomplete',
  /** A backup's entry does not read as an entry of this format. */
  entryInvalid: 'repo_entry_invalid',
  /** An object a backup's entry names is missing. */
  objectMissing: 'repo_object_missing',
  /** An object's size (or, with --read-data, SHA-256) differs from its entry's record. */
  objectDiffers: 'repo_object_digest_mismatch',
} as const;

const NEXT: Record<string, string> = {
  [CHECK_FINDINGS.incomplete]: 'nothing to restore from it; remove it with loopx repo prune',
  [CHECK_FINDINGS.entryInvalid]: 'do not recover from this backup; use another one from loopx repo ls',
  [CHECK_FINDINGS.objectMissing]: 'do not recover from this backup; use another one from loopx repo ls',
  [CHECK_FINDINGS.objectDiffers]: 'do not recover from this backup; use another one from loopx repo ls',
};

export interface CheckFinding {
  readonly code: string;
  readonly severity: 'error' | 'warning';
  readonly backup_id: string;
  readonly object: 'archive' | 'manifest' | null;
  readonly next_action: string;
}

export interface RepositoryCheck {
  readonly ok: boolean;
  readonly backups: number;
  readonly read_data: boolean;
  readonly bytes_read: number;
  readonly findings: readonly CheckFinding[];
}

const finding = (
  code: string,
  severity: CheckFinding['severity'],
  backupId: string,
  object: CheckFinding['object'] = null,
): CheckFinding => ({ code, severity, backup_id: backupId, object, next_action: NEXT[code]! });

export interface RepositoryList {
  readonly backups: BackupEntry[];
  readonly incomplete: string[];
  readonly bad: string[];
  /** Backup id → when it was last verified from this repository. */
  readonly verified: Readonly<Record<string, string>>;
  /** Backup id → every object stored under it. */
  readonly objects: ReadonlyMap<string, readonly ObjectInfo[]>;
}

export class MaintenanceLock {
  constructor(
    private readonly objects: RepositoryObjects,
    private etag: string,
  ) {}
  /** Release the lock if it is still ours (a holder whose lock was taken over removes nothing). */
  async release(): Promise<void> {
    await this.objects.remove(LOCK_KEY, this.etag).catch(() => {});
  }
}

function checkEntry(backupId: string, bytes: Uint8Array): BackupEntry {
  let e: BackupEntry;
  try {
    e = parseJson(bytes) as BackupEntry;
  } catch {
    throw entryInvalid(backupId, 'it is not JSON');
  }
  const hex = /^[0-9a-f]{64}$/;
  const keys = keysOf(backupId, e?.encrypted === true);
  if (e?.format !== ENTRY_FORMAT) throw entryInvalid(backupId, 'its format is not known');
  if (e.backup_id !== backupId) throw entryInvalid(backupId, 'it names another backup');
  if (typeof e.created_at !== 'string' || Number.isNaN(Date.parse(e.created_at)))
    throw entryInvalid(backupId, 'its capture time is not a time');
  if (!Array.isArray(e.objects) || e.objects.length !== 2) throw entryInvalid(backupId, 'it lists no archive pair');
  if (typeof e.encrypted !== 'boolean') throw entryInvalid(backupId, 'it does not say whether it is encrypted');
  const envelope = e.encryption?.envelope;
  if (
    e.encrypted &&
    (envelope?.key !== keys.envelope ||
      !Number.isSafeInteger(envelope.size_bytes) ||
      envelope.size_bytes < 0 ||
      !hex.test(envelope.sha256))
  )
    throw entryInvalid(backupId, 'it names no valid envelope for its encrypted objects');
  for (const o of e.objects)
    if (
      (o.role !== 'archive' && o.role !== 'manifest') ||
      o.key !== keys[o.role as 'archive' | 'manifest'] ||
      !Number.isSafeInteger(o.size_bytes) ||
      o.size_bytes < 0 ||
      !hex.test(o.sha256)
    )
      throw entryInvalid(backupId, 'an object it lists is malformed');
  return e;
}

/**
 * Probe that the storage honours conditional writes, with a scratch object: a second create of one
 * key must be refused and leave the first bytes; a replace under a stale tag must be refused.
 */
async function probeConditionalWrites(objects: RepositoryObjects, label: string): Promise<void> {
  const key = `probe-${randomBytes(8).toString('hex')}`;
  const first = new TextEncoder().encode('loopx conditional write probe: first\n');
  const created = await objects.create(key, first);
  try {
    const overwrote = await objects.create(key, new TextEncoder().encode('second\n')).then(
      () => true,
      (e: unknown) => (hasCode(e, REPO_CODES.objectExists) ? false : Promise.reject(e)),
    );
    const now = await readAll(objects, key, SMALL_OBJECT_MAX);
    if (
      overwrote ||
      createHash('sha256').update(now).digest('hex') !== createHash('sha256').update(first).digest('hex')
    )
      throw conditionalWriteUnsupported(label);
    const stale = `${created.etag}-stale`;
    const replaced = await objects.replace(key, stale, first).then(
      () => true,
      (e: unknown) => (hasCode(e, REPO_CODES.objectChanged) ? false : Promise.reject(e)),
    );
    if (replaced) throw conditionalWriteUnsupported(label);
  } finally {
    await objects.remove(key).catch(() => {});
  }
}

/** An object's bytes as they arrive, read afresh on every call. */
async function* objectChunks(body: () => Promise<AsyncIterable<unknown>>): AsyncGenerator<Uint8Array> {
  for await (const chunk of await body()) yield chunk as Uint8Array;
}

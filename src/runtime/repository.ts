/**
 * Backup repositories, composed for the CLI and the daemon: create one, list and check it, back a
 * root up into it, and verify one of its backups into a new inert workspace.
 *
 *   - a backup into a repository is made exactly as a local one (backup/create), into a private
 *     staging directory beside the root's default backups folder, then published by the repository
 *     (archive, manifest, entry last) and the staging removed: the repository receives only a
 *     finished, self-checked pair;
 *   - a verification from a repository fetches the pair (a directory repository's files are read
 *     in place; an S3 repository's are streamed into a private spool, each checked against the
 *     entry while it streams) and hands it to the verifier unchanged: a repository is storage,
 *     never authority, and what comes out of it is verified like any archive.
 */
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { plan, type BackupResult, type PlanOptions } from '../backup/index.js';
import { LAYOUT } from '../owners/index.js';
import { executeVerify, planVerify, type VerifyInputs, type VerifyOptions } from '../recovery/index.js';
import {
  Repository,
  encryptionRequired,
  generateIdentity,
  changeKeys,
  checkPolicy,
  forget,
  describeRepository,
  keyFileExists,
  parseRepositoryUrl,
  pin,
  prune,
  unpin,
  recipientFingerprint,
  recipientsOf,
  resolveKeyReference,
  resolveRecipient,
  type Identity,
  type BackupEntry,
  type RepositoryPin,
  type RetentionPolicy,
} from '../repository/index.js';
import { backupPlacement, type BackupPlacement } from './backup.js';
import { withRootEngine, type RootAccess } from './root.js';

export interface RepositoryListing {
  readonly repository: {
    readonly id: string;
    readonly location: string;
    readonly format: string;
    readonly encryption: 'required' | 'optional';
  };
  readonly backups: readonly BackupEntry[];
  /** Ids whose publication did not finish (objects without an entry): never backups. */
  readonly incomplete: readonly string[];
  /** Ids whose entry does not read: `repo check` says more. */
  readonly unreadable: readonly string[];
  /** Backup id → when it was last verified from this repository (retention never forgets a root's newest verified backup). */
  readonly verified: Readonly<Record<string, string>>;
}

const describe = (r: Repository) => ({
  id: r.config.repository_id,
  location: r.label,
  format: r.config.format,
  encryption: r.config.encryption,
});

async function withRepository<T>(url: string, fn: (r: Repository) => Promise<T>): Promise<T> {
  const r = await Repository.open(url);
  try {
    return await fn(r);
  } finally {
    await r.close();
  }
}

/** `loopx repo init [--encrypt]`: a new repository at `url` (probed for conditional writes first). */
export async function initRepository(
  url: string,
  options: { readonly encrypt?: boolean } = {},
): Promise<RepositoryListing['repository']> {
  const r = await Repository.init(url, options);
  try {
    return describe(r);
  } finally {
    await r.close();
  }
}

/** How the repository at `url` is named in public output, as the process whose working directory is `cwd` names it. */
export const repositoryLabel = (url: string, cwd?: string): string =>
  describeRepository(parseRepositoryUrl(url, {}), cwd);

/** `loopx repo key new --out FILE`: an X25519 identity written to a new 0600 file; only its public recipient is returned. */
export function newRepositoryKey(file: string): { readonly recipient: string; readonly fingerprint: string } {
  const { recipient, identity } = generateIdentity();
  try {
    // A directory that is not there yet is made private (0700), as the key file itself is (0600).
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    writeFileSync(file, `${identity}\n`, { flag: 'wx', mode: 0o600 });
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw keyFileExists();
    throw e;
  }
  return { recipient, fingerprint: recipientFingerprint(recipient) };
}

/** `loopx repo ls`: the repository's backups by capture time, and what is not a backup. */
export const listRepository = (url: string): Promise<RepositoryListing> =>
  withRepository(url, async (r) => {
    const { backups, incomplete, bad, verified } = await r.list();
    return { repository: describe(r), backups, incomplete, unreadable: bad, verified };
  });

/** `loopx repo forget --keep-… [--dry-run]`: the retention policy applied (entries removed), or only planned. */
export const forgetInRepository = (
  url: string,
  policy: RetentionPolicy,
  options: { readonly dryRun?: boolean } = {},
) => {
  checkPolicy(policy); // before the repository is opened: a policy that keeps nothing never reaches it
  return withRepository(url, async (r) => ({ repository: describe(r), ...(await forget(r, policy, options)) }));
};

/** `loopx repo prune [--dry-run] [--grace SECONDS]`: what is not a backup, removed once older than the grace period. */
export const pruneRepository = (url: string, options: { readonly dryRun?: boolean; readonly graceMs?: number } = {}) =>
  withRepository(url, async (r) => ({ repository: describe(r), ...(await prune(r, options)) }));

/**
 * `loopx repo key add|remove|rotate`: re-wrap every encrypted backup's data key for the new set
 * of recipients (no data is re-encrypted). `remove` names X25519 recipients by public key or
 * fingerprint, or a passphrase or key by reference; `key` opens the backups (needed to add).
 */
export function changeRepositoryKeys(
  url: string,
  change: { readonly add: readonly string[]; readonly remove: readonly string[]; readonly key?: string },
  options: { readonly execute: boolean },
) {
  const add = change.add.map((t) => resolveRecipient(t));
  const removeRecipients: string[] = [];
  const removePassphrases: Identity[] = [];
  for (const t of change.remove) {
    if (/^[0-9a-f]{32}$/.test(t)) removeRecipients.push(t);
    else {
      const r = resolveRecipient(t);
      if (r.kind === 'x25519') removeRecipients.push(recipientFingerprint(r.publicKey));
      else removePassphrases.push(r);
    }
  }
  const key = change.key === undefined ? undefined : resolveKeyReference(change.key);
  return withRepository(url, async (r) => ({
    repository: describe(r),
    ...(await changeKeys(r, { add, removeRecipients, removePassphrases, ...(key ? { key } : {}) }, options)),
  }));
}

/** Where a recovery planned from a repository's backup records the pin it wrote (inside its destination's recovery files). */
const PIN_RECORD = 'repository-pin.json';

/**
 * `recover plan --repo R`: pin the backup a recovery uses, so no forget on any host lets it go
 * while the recovery runs; the pin's place is recorded in the destination's recovery files.
 */
export async function pinForRecovery(
  url: string,
  recoveryDir: string,
  backupId: string,
  recoveryId: string,
): Promise<RepositoryPin> {
  return withRepository(url, async (r) => {
    const p = await pin(r, backupId, `recovery ${recoveryId} planned`);
    writeFileSync(join(recoveryDir, PIN_RECORD), `${JSON.stringify({ repository: url, ...p })}\n`, {
      flag: 'wx',
      mode: 0o600,
    });
    return p;
  });
}

/**
 * A recovery that completed or was abandoned releases its pin. A repository that cannot be reached
 * now keeps the pin (the backup is then kept longer, never lost); the record stays so that a later
 * status, resolve or abort releases it.
 */
export async function releaseRecoveryPin(recoveryDir: string): Promise<void> {
  const path = join(recoveryDir, PIN_RECORD);
  if (!existsSync(path)) return;
  const record = JSON.parse(readFileSync(path, 'utf8')) as RepositoryPin & { repository: string };
  try {
    await withRepository(record.repository, (r) => unpin(r, record.backup_id, record.pin_id));
    rmSync(path, { force: true });
  } catch {
    /* kept: see above */
  }
}

/** `loopx repo check [--read-data]`: every finding about the repository's backups. */
export const checkRepository = (url: string, options: { readonly readData?: boolean } = {}) =>
  withRepository(url, async (r) => ({ repository: describe(r), ...(await r.check(options)) }));

/** The root's id for the entry (the retention policy groups by it), or null for a root that has none yet. */
async function rootIdOf(a: RootAccess): Promise<string | null> {
  if (!existsSync(join(a.root, LAYOUT.engineDb))) return null;
  try {
    return await withRootEngine(a, (e) => e.rootId(), { readOnly: true });
  } catch {
    return null;
  }
}

export interface RepositoryBackup {
  readonly result: BackupResult;
  /** Where the backup lies against the root: a directory repository's disk; an S3 repository is elsewhere. */
  readonly placement: BackupPlacement;
  readonly entry: BackupEntry;
  readonly repository: RepositoryListing['repository'];
}

/**
 * `backup-state --execute --repo R`: `make` creates the backup of `planOptions` (the caller's
 * capture, e.g. with a profile) into a private staging directory; the finished pair is then
 * published into the repository and the staging directory removed, whatever happened.
 */
export async function backupToRepository(
  a: RootAccess,
  url: string,
  planOptions: Omit<PlanOptions, 'outputDir'>,
  make: (p: ReturnType<typeof plan>) => Promise<BackupResult>,
  options: { readonly encryptFor?: readonly string[] } = {},
): Promise<RepositoryBackup> {
  // Every recipient resolves before anything is captured: asked to encrypt and unable to, nothing is written.
  const recipients = options.encryptFor === undefined ? undefined : recipientsOf(options.encryptFor);
  return withRepository(url, async (r) => {
    if (r.config.encryption === 'required' && recipients === undefined) throw encryptionRequired();
    const stagingParent = join(a.root, 'backups');
    mkdirSync(stagingParent, { recursive: true, mode: 0o700 });
    const staging = mkdtempSync(join(stagingParent, '.repository-'));
    try {
      const p = plan(a.root, { ...planOptions, outputDir: staging });
      const result = await make(p);
      const m = result.manifest_doc;
      const profile = 'achieved_profile' in m.capture ? m.capture.achieved_profile : null;
      const entry = await r.publish(
        result.backup_id,
        {
          archive: { path: join(staging, result.archive.name), ...pick(result.archive) },
          manifest: { path: join(staging, result.manifest.name), ...pick(result.manifest) },
        },
        {
          created_at: m.created_at,
          root_id: await rootIdOf(a),
          producer_version: m.producer_version,
          capture_profile: profile,
        },
        recipients === undefined ? {} : { recipients },
      );
      const placement =
        r.location.provider === 'dir'
          ? backupPlacement(a.root, r.location.path)
          : { inside_root: false, same_filesystem: false };
      return { result, entry, placement, repository: describe(r) };
    } finally {
      rmSync(staging, { recursive: true, force: true });
    }
  });
}

const pick = (o: { size_bytes: number; sha256: string }) => ({ size_bytes: o.size_bytes, sha256: o.sha256 });

export interface RepositoryVerifyOptions extends VerifyOptions {
  /** A directory for the private spool (default: the system's temporary directory). */
  readonly spool?: string;
  /** An encrypted backup's key, by reference (`env:NAME`, or a 0600 file). */
  readonly key?: string;
}

/**
 * `backup-state verify --repo R --backup-id B`: the plan (`execute` false) or the whole
 * verification of a repository's backup into `inputs.destination`, through the same verifier as a
 * local pair. A plaintext backup in a directory repository is read in place; any other is read
 * straight from the repository, twice (the digest pass, then the witnessed scan), sealed objects
 * opened on the fly — nothing of it written locally but what the verification extracts. With
 * `spool` it is instead copied (and opened) once into a private spool there, removed afterwards.
 */
export async function verifyFromRepository(
  url: string,
  backupId: string,
  inputs: Omit<VerifyInputs, 'archive' | 'manifest'>,
  options: RepositoryVerifyOptions & { readonly execute: boolean },
) {
  return withRepository(url, async (r) => {
    const entry = await r.entry(backupId);
    const key = options.key === undefined ? {} : { key: options.key };
    const inPlace = !entry.encrypted && r.objects.localPath !== undefined;
    const spool =
      options.spool !== undefined || inPlace ? mkdtempSync(join(options.spool ?? tmpdir(), 'loopx-spool-')) : undefined;
    try {
      const pair = spool !== undefined ? await r.fetch(entry, spool, key) : await r.stream(entry, key);
      const all: VerifyInputs = {
        ...inputs,
        archive: pair.archive,
        manifest: pair.manifest,
        repository: { repository_id: r.config.repository_id, encrypted: entry.encrypted },
      };
      if (!options.execute) return { executed: false as const, plan: await planVerify(all) };
      const outcome = await executeVerify(all, options);
      // Verified (an audit that holds is a successful verification too). A retention hint only — the
      // newest verified backup of a root is never forgotten — so a repository this host may only
      // read (a restore host's credentials) does not fail the verification.
      await r.markVerified(backupId, outcome.summary.recovery_id).catch(() => undefined);
      return { executed: true as const, outcome };
    } finally {
      if (spool !== undefined) rmSync(spool, { recursive: true, force: true });
    }
  });
}

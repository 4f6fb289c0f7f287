/**
 * Repository maintenance: pins, `forget` (the retention policy) and `prune`, each holding the
 * maintenance lock (repository.ts) so two maintainers never interleave.
 *
 *   - forget removes the *entries* of the backups the policy lets go (retention.ts): from then on
 *     they are not backups. It never lets go of a root's newest verified backup or a pinned one,
 *     and with `dryRun` changes nothing and says what would go and why.
 *   - prune removes what is not a backup: the objects of an id without an entry — a forgotten
 *     backup's, or an interrupted publication's — once they are older than the grace period. A
 *     publication in progress has no entry yet either; the grace period (default 6 hours, much
 *     longer than any publication) is what keeps a concurrent create safe.
 *   - pins are written by a recovery planned from a backup and removed when it completes or is
 *     abandoned: the repository cannot see recoveries on other hosts, so the pin is how it knows.
 */
import { randomBytes } from 'node:crypto';
import { canonicalJson } from '../core/index.js';
import type { ObjectInfo } from './contract.js';
import { PINS, SMALL_OBJECT_MAX, keysOf, pinKey } from './layout.js';
import { readAll } from './read.js';
import type { Repository } from './repository.js';
import { planForget, type ForgetPlan, type RepositoryPin, type RetentionPolicy } from './retention.js';

/** How long a maintainer may hold the lock before another may take it over. */
const LOCK_TTL_MS = 15 * 60 * 1000;
export const DEFAULT_PRUNE_GRACE_MS = 6 * 60 * 60 * 1000;
const json = (doc: unknown) => new TextEncoder().encode(`${canonicalJson(doc)}\n`);

/** Pin `backupId` for `reason` (a recovery planned from it); the pin's id is returned for `unpin`. */
export async function pin(r: Repository, backupId: string, reason: string): Promise<RepositoryPin> {
  await r.entry(backupId); // only a backup can be pinned
  const p: RepositoryPin = { backup_id: backupId, pin_id: `pin_${randomBytes(8).toString('hex')}`, reason };
  await r.objects.create(pinKey(backupId, p.pin_id), json({ ...p, created_at: new Date().toISOString() }));
  return p;
}

export async function unpin(r: Repository, backupId: string, pinId: string): Promise<void> {
  await r.objects.remove(pinKey(backupId, pinId));
}

export async function pins(r: Repository): Promise<RepositoryPin[]> {
  const out: RepositoryPin[] = [];
  for await (const o of r.objects.list(PINS)) {
    try {
      const p = JSON.parse(
        Buffer.from(await readAll(r.objects, o.key, SMALL_OBJECT_MAX)).toString('utf8'),
      ) as RepositoryPin;
      if (o.key === pinKey(p.backup_id, p.pin_id))
        out.push({ backup_id: p.backup_id, pin_id: p.pin_id, reason: p.reason });
    } catch {
      // An unreadable pin still pins its backup: keep it by its key, never forget on a guess.
      const [, backupId, file] = o.key.split('/');
      out.push({ backup_id: backupId!, pin_id: file!.replace(/\.json$/, ''), reason: 'unreadable pin' });
    }
  }
  return out;
}

export interface ForgetReport extends ForgetPlan {
  readonly dry_run: boolean;
  readonly pins: readonly RepositoryPin[];
}

export async function forget(
  r: Repository,
  policy: RetentionPolicy,
  options: { readonly dryRun?: boolean } = {},
): Promise<ForgetReport> {
  const lock = options.dryRun ? undefined : await r.lock('repo forget', LOCK_TTL_MS);
  try {
    const listed = await r.list();
    const pinned = await pins(r);
    const plan = planForget(
      listed.backups.map((b) => ({
        backup_id: b.backup_id,
        root_id: b.root_id ?? 'unknown',
        created_at: b.created_at,
        verified: listed.verified[b.backup_id] !== undefined,
      })),
      policy,
      pinned,
    );
    if (!options.dryRun) for (const f of plan.forget) await r.objects.remove(keysOf(f.backup_id).entry);
    return { ...plan, dry_run: options.dryRun === true, pins: pinned };
  } finally {
    await lock?.release();
  }
}

export interface PruneReport {
  readonly dry_run: boolean;
  /** Ids whose objects were (or would be) removed: forgotten backups and interrupted publications. */
  readonly removed: readonly { readonly backup_id: string; readonly objects: number; readonly bytes: number }[];
  /** Ids without an entry left alone because an object is younger than the grace period (a publication may be running). */
  readonly too_recent: readonly string[];
  readonly grace_seconds: number;
}

export async function prune(
  r: Repository,
  options: { readonly dryRun?: boolean; readonly graceMs?: number; readonly now?: Date } = {},
): Promise<PruneReport> {
  const graceMs = options.graceMs ?? DEFAULT_PRUNE_GRACE_MS;
  const lock = options.dryRun ? undefined : await r.lock('repo prune', LOCK_TTL_MS);
  try {
    const listed = await r.list();
    const pinned = new Set((await pins(r)).map((p) => p.backup_id));
    const cutoff = (options.now ?? new Date()).getTime() - graceMs;
    const removed: PruneReport['removed'][number][] = [];
    const tooRecent: string[] = [];
    for (const id of listed.incomplete) {
      const objects: readonly ObjectInfo[] = listed.objects.get(id) ?? [];
      if (pinned.has(id) || objects.some((o) => Date.parse(o.modified) > cutoff)) {
        tooRecent.push(id);
        continue;
      }
      // The largest first: an interrupted prune leaves the small objects, which the next one removes.
      if (!options.dryRun) for (const o of [...objects].sort((a, b) => b.size - a.size)) await r.objects.remove(o.key);
      removed.push({ backup_id: id, objects: objects.length, bytes: objects.reduce((n, o) => n + o.size, 0) });
    }
    return { dry_run: options.dryRun === true, removed, too_recent: tooRecent, grace_seconds: graceMs / 1000 };
  } finally {
    await lock?.release();
  }
}

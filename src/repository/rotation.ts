/**
 * Key rotation of an encrypted repository (`loopx repo key add|remove|rotate`): each encrypted
 * backup's data key is re-wrapped in a new key set generation — never its data re-encrypted — and
 * the older generations are removed, so a removed key no longer opens the backup from the
 * repository (a copy someone kept of an old key set is outside what rotation can reach; see the
 * threat model in docs/repository-encryption.md).
 *
 *   - add: the data key is unwrapped with a key that opens the backup now (`--key`), checked
 *     against the envelope's commitment, and wrapped for the new recipients beside the stanzas
 *     already there. A backup that key cannot open is reported and left as it is.
 *   - remove: the stanzas of the removed X25519 recipients (by fingerprint) and of the removed
 *     passphrases (the stanzas they open) are dropped. No key is needed. A removal that would leave
 *     a backup with no stanza — unreadable by anyone — is refused, and those backups are named.
 *   - without `execute`, nothing is written: the report says what each backup would become.
 *
 * Every change holds the maintenance lock; each new generation is created conditionally, so two
 * rotations racing on one backup make one generation.
 */
import { canonicalJson } from '../core/index.js';
import { keyRemovalStrands } from './codes.js';
import { keySetKey } from './layout.js';
import type { Repository } from './repository.js';
import {
  keySetFingerprints,
  parseEnvelope,
  parseKeySet,
  recipientFingerprint,
  rewrap,
  unwrapDataKey,
  type Identity,
  type KeySet,
  type Recipient,
  type Stanza,
} from './seal.js';

const LOCK_TTL_MS = 15 * 60 * 1000;

export interface KeyChange {
  readonly add: readonly Recipient[];
  /** X25519 recipients to remove, by public key text (`loopx-x25519-pub:…`) or fingerprint. */
  readonly removeRecipients: readonly string[];
  /** Passphrases to remove (resolved from references): the stanzas they open are dropped. */
  readonly removePassphrases: readonly Identity[];
  /** A key that opens the backups now: needed to add a recipient. */
  readonly key?: Identity;
}

export interface KeyChangeReport {
  readonly execute: boolean;
  readonly backups: readonly {
    readonly backup_id: string;
    /** changed: a new generation (written with execute); unchanged: nothing to do; not_opened: the key does not open it, so nothing was added. */
    readonly outcome: 'changed' | 'unchanged' | 'not_opened';
    readonly generation: number;
    readonly recipients: { readonly x25519: readonly string[]; readonly passphrases: number };
  }[];
}

/** The fingerprint a removal names: a public key's, or the fingerprint itself. */
const fingerprintOf = (text: string): string =>
  text.startsWith('loopx-x25519-pub:') ? recipientFingerprint(text) : text;

/** Whether `passphrase` opens this one stanza (tried alone, so no other stanza answers for it). */
async function opens(stanza: Stanza, keySet: KeySet, passphrase: Identity): Promise<boolean> {
  return unwrapDataKey({ ...keySet, stanzas: [stanza] }, keySet.backup_id, passphrase).then(
    () => true,
    () => false,
  );
}

export async function changeKeys(
  r: Repository,
  change: KeyChange,
  options: { readonly execute: boolean },
): Promise<KeyChangeReport> {
  const lock = options.execute ? await r.lock('repo key', LOCK_TTL_MS) : undefined;
  try {
    const { backups } = await r.list();
    const report: KeyChangeReport['backups'][number][] = [];
    const stranded: string[] = [];
    const writes: Array<() => Promise<void>> = [];
    const removed = new Set(change.removeRecipients.map(fingerprintOf));
    for (const b of backups.filter((x) => x.encrypted)) {
      const sets = await r.keySets(b.backup_id);
      const keySet = parseKeySet(sets.newest.bytes);
      const kept: Stanza[] = [];
      for (const s of keySet.stanzas) {
        if (s.type === 'x25519' && removed.has(s.recipient)) continue;
        if (s.type === 'scrypt' && (await anyOpens(s, keySet, change.removePassphrases))) continue;
        kept.push(s);
      }
      let added: readonly Stanza[] = [];
      let outcome: 'changed' | 'unchanged' | 'not_opened' =
        kept.length === keySet.stanzas.length ? 'unchanged' : 'changed';
      if (change.add.length > 0) {
        const envelope = parseEnvelope(await r.readChecked(b.encryption!.envelope));
        const dataKey =
          change.key === undefined
            ? undefined
            : await unwrapDataKey(keySet, b.backup_id, change.key, { commitment: envelope.key_commitment }).catch(
                () => undefined,
              );
        if (dataKey === undefined) outcome = 'not_opened';
        else {
          added = (await rewrap(keySet, dataKey, change.add, { commitment: envelope.key_commitment })).stanzas;
          outcome = 'changed';
        }
      }
      const next: KeySet = { ...keySet, generation: sets.newest.generation + 1, stanzas: [...kept, ...added] };
      if (outcome === 'changed' && next.stanzas.length === 0) stranded.push(b.backup_id);
      const shown = outcome === 'changed' ? next : keySet;
      report.push({
        backup_id: b.backup_id,
        outcome,
        generation: outcome === 'changed' ? next.generation : keySet.generation,
        recipients: shown.stanzas.length > 0 ? keySetFingerprints(shown) : { x25519: [], passphrases: 0 },
      });
      if (outcome === 'changed')
        writes.push(async () => {
          await r.objects.create(
            keySetKey(b.backup_id, next.generation),
            new TextEncoder().encode(canonicalJson(next)),
          );
          for (const old of sets.keys) await r.objects.remove(old.key);
        });
    }
    // Nothing is written when any backup would be left with no way in.
    if (stranded.length > 0) throw keyRemovalStrands(stranded);
    if (options.execute) for (const w of writes) await w();
    return { execute: options.execute, backups: report };
  } finally {
    await lock?.release();
  }
}

async function anyOpens(stanza: Stanza, keySet: KeySet, passphrases: readonly Identity[]): Promise<boolean> {
  for (const p of passphrases) if (await opens(stanza, keySet, p)) return true;
  return false;
}

/**
 * Where a repository keeps what (the `loopx.repository/v1` layout), in one place:
 *
 *   loopx-repository.json                 the configuration
 *   backups/<id>/<id>.tar.gz[.sealed]     the archive (sealed when encrypted)
 *   backups/<id>/<id>.manifest.json[.sealed]
 *   backups/<id>/envelope.json            encrypted: the envelope of the sealed objects
 *   backups/<id>/keys/NNNNNN.json         encrypted: the key set of each generation
 *   backups/<id>/entry.json               the entry, published last: the backup exists
 *   backups/<id>/verified/<stamp>.json    a successful verification from the repository
 *   pins/<id>/<pin>.json                  a recovery that uses the backup (forget keeps it)
 *   locks/maintenance.json                the maintenance lock (forget, prune)
 */
export const CONFIG_KEY = 'loopx-repository.json';
export const BACKUPS = 'backups/';
export const PINS = 'pins/';
export const LOCK_KEY = 'locks/maintenance.json';
/** Small objects (configuration, entries, locks, pins) are read whole, up to this size. */
export const SMALL_OBJECT_MAX = 1024 * 1024;
export const BACKUP_ID = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/;

export const keysOf = (backupId: string, sealed = false) => ({
  archive: `${BACKUPS}${backupId}/${backupId}.tar.gz${sealed ? '.sealed' : ''}`,
  manifest: `${BACKUPS}${backupId}/${backupId}.manifest.json${sealed ? '.sealed' : ''}`,
  entry: `${BACKUPS}${backupId}/entry.json`,
  envelope: `${BACKUPS}${backupId}/envelope.json`,
  keySets: `${BACKUPS}${backupId}/keys/`,
});
/** The key of a backup's key set of one generation (rotation adds the next). */
export const keySetKey = (backupId: string, generation: number) =>
  `${keysOf(backupId).keySets}${String(generation).padStart(6, '0')}.json`;

/** The backup id an object under backups/ belongs to. */
export const backupIdOfKey = (key: string): string => key.slice(BACKUPS.length).split('/')[0]!;

/** A verification marker's key: its time first, so the newest sorts last. */
export const verifiedKey = (backupId: string, at: Date, nonce: string) =>
  `${BACKUPS}${backupId}/verified/${at.toISOString().replace(/[-:.]/g, '')}-${nonce}.json`;

export const pinKey = (backupId: string, pinId: string) => `${PINS}${backupId}/${pinId}.json`;

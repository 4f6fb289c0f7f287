/**
 * Non-overwriting publication (RFC §7). The archive and manifest are written into a private
 * staging directory inside the output directory and fsynced; then each is published with link(2),
 * which fails instead of replacing an occupied name — the manifest first, then the archive — and
 * the output directory is fsynced. There is no overwrite or copy fallback. This module deletes
 * only what it created: its own staging directory and, when the archive name turns out to be
 * taken after the manifest was linked, its own manifest link (checked by inode). It never deletes
 * or replaces a file it did not create, so a complete pair from an earlier attempt survives.
 */
import {
  closeSync,
  fsyncSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  rmSync,
  statSync,
  unlinkSync,
  writeSync,
  constants,
} from 'node:fs';
import { join } from 'node:path';
import { fsyncDir, faultPoint } from '../core/index.js';
import { destinationOccupied, outputDirInvalid } from './errors.js';

/** Named crash points of publication (LOOPX_TEST_FAULT; tests only). */
export const BACKUP_FAULT_POINTS = {
  beforePublish: 'backup.before_publish',
  afterManifestLink: 'backup.after_manifest_link',
  afterArchiveLink: 'backup.after_archive_link',
} as const;

export function prepareOutputDir(outputDir: string): void {
  try {
    mkdirSync(outputDir, { recursive: true, mode: 0o700 });
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ENOSPC' || code === 'EDQUOT') throw e; // create() answers with its capacity refusal
    if (code !== 'EEXIST') throw outputDirInvalid('it cannot be created');
  }
  if (!statSync(outputDir).isDirectory()) throw outputDirInvalid('it is not a directory');
}

/** Refuse when either published name exists (any file type, a dangling symlink included). */
export function assertNamesFree(outputDir: string, names: readonly string[]): void {
  const taken = names.filter((n) => {
    try {
      lstatSync(join(outputDir, n));
      return true;
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw e;
    }
  });
  if (taken.length > 0) throw destinationOccupied(taken);
}

/** A new private (0700) staging directory in the output directory, on the same filesystem as the published names. */
export const createStaging = (outputDir: string, backupId: string): string =>
  mkdtempSync(join(outputDir, `.${backupId}.staging-`));

/** Write a new file exclusively (0600) and fsync it. */
export function writeNewFile(path: string, data: Uint8Array): void {
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
  try {
    let off = 0;
    while (off < data.byteLength) off += writeSync(fd, data, off, data.byteLength - off);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

function linkExclusive(from: string, to: string, name: string): void {
  try {
    linkSync(from, to);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST') throw destinationOccupied([name]);
    throw e;
  }
}

export interface StagedPair {
  readonly manifestPath: string;
  readonly archivePath: string;
}

/** Publish the staged pair under its names: manifest, then archive; fsync the directory. */
export function publishPair(
  outputDir: string,
  staged: StagedPair,
  names: { readonly manifest: string; readonly archive: string },
): void {
  fsyncDir(join(staged.manifestPath, '..'));
  faultPoint(BACKUP_FAULT_POINTS.beforePublish);
  const manifestTarget = join(outputDir, names.manifest);
  linkExclusive(staged.manifestPath, manifestTarget, names.manifest);
  faultPoint(BACKUP_FAULT_POINTS.afterManifestLink);
  try {
    linkExclusive(staged.archivePath, join(outputDir, names.archive), names.archive);
  } catch (e) {
    // Withdraw our own manifest link (never someone else's file) so no half pair of ours remains.
    const ours = statSync(staged.manifestPath);
    try {
      const there = lstatSync(manifestTarget);
      if (there.ino === ours.ino && there.dev === ours.dev) unlinkSync(manifestTarget);
    } catch {
      /* already gone: nothing of ours to withdraw */
    }
    fsyncDir(outputDir);
    throw e;
  }
  fsyncDir(outputDir);
  faultPoint(BACKUP_FAULT_POINTS.afterArchiveLink);
}

/** Remove a staging directory this process created (its files were published by link, not moved). */
export function removeStaging(staging: string): void {
  rmSync(staging, { recursive: true, force: true });
}

/**
 * An apply reads only what it verified. Before its first step, every apply — the first one and
 * each re-run after a crash — copies the recovery workspace's members that its remaining steps
 * read into private staging in the destination (`recovery/staging/`, directories 0700, files
 * 0600), checking each copy as it is written against the content address the audit verified: the
 * embedded manifest against the plan's digest of it (the one the operator confirmed), each member
 * against the manifest's SHA-256 and size. The steps then read only the staged copies (their
 * context names them, adopt-apply.ts `contextFor`), never the workspace: a member changed in the
 * workspace after the plan, after the freshness check or between a crashed apply and its re-run
 * is refused `recover_workspace_changed` before any step touches a live owner, or never read.
 *
 * What is staged: the members and export of each component of a step still to run that reads the
 * workspace (`readsWorkspace`), and the source's run kernel (engine.db) while the supersession,
 * which names the source root from it, is still to run. Nothing else — the other Goals' stores,
 * the sessions kept as history — is copied.
 *
 * Staging is rebuilt by every apply (a killed apply's leftovers are never trusted, and are
 * removed as the next apply starts) and removed when the apply ends, whatever its outcome; it runs
 * under the recovery's lock, so one apply owns it. Its copies are not fsynced: nothing durable
 * rests on them, a crash discards them. It never writes the workspace. A full destination while
 * staging is `recover_capacity_free_space`, as in any step.
 */
import { createHash } from 'node:crypto';
import {
  closeSync,
  constants,
  fstatSync,
  mkdirSync,
  openSync,
  readSync,
  rmSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { dirname, join } from 'node:path';
import { operatorPath, readRegularFileOnce, sha256Hex } from '../core/index.js';
import { ARCHIVE_ROOT, BACKUP_LIMITS } from '../backup/index.js';
import { ADOPTION, LAYOUT, type CopiedRoot } from '../owners/index.js';
import { isOutOfSpace } from '../store/index.js';
import { WORKSPACE_DIR } from './audit.js';
import { RECOVER_REFUSALS as R } from './adopt-codes.js';
import { RECOVERY_DIR, type AdoptionPlan, type PlannedStep } from './adopt-plan.js';
import { servedExports } from './served-exports.js';

/** The staging directory inside the destination's `recovery/`. */
export const STAGING_DIR = 'staging';
const MANIFEST_FILE = 'manifest.json';
const CHUNK_BYTES = 1024 * 1024;

const stagingOf = (destination: string): string => join(destination, RECOVERY_DIR, STAGING_DIR);

/** Remove the staging of `destination` (what a killed apply left, or the one just used); nothing when there is none. */
export function discardStaging(destination: string): void {
  rmSync(stagingOf(destination), { recursive: true, force: true });
}

/** The apply's staged, verified copy of what its steps read. */
export interface StagedWorkspace {
  /** The staged workspace directory: the manifest and the staged component exports, at their workspace paths. */
  readonly dir: string;
  /** The staged copy of the source root (`<dir>/runtime-root`): only the staged members are there. */
  readonly root: string;
  /** The staged exports of components captured from a database service (undefined when there are none). */
  readonly exports: CopiedRoot['exports'];
  /** Remove the staging (the apply ended, whatever its outcome). */
  close(): void;
}

interface ManifestView {
  readonly components: readonly {
    component_id: string;
    archive_members: readonly string[];
    export_member: string | null;
  }[];
  readonly members: readonly { path: string; type: string; size_bytes: number; sha256: string | null }[];
}

type Member = ManifestView['members'][number];

/** The embedded manifest, read once and checked against the plan's digest of it, staged from the bytes checked. */
function stageManifest(plan: AdoptionPlan, workspace: string, staging: string): ManifestView {
  let bytes: Uint8Array | null;
  try {
    bytes = readRegularFileOnce(join(workspace, MANIFEST_FILE), BACKUP_LIMITS.manifestBytes);
  } catch {
    throw R.workspaceChanged('its manifest is not a readable regular file');
  }
  if (bytes === null) throw R.workspaceChanged('its manifest is missing');
  if (sha256Hex(bytes) !== plan.audit.embedded_manifest_sha256)
    throw R.workspaceChanged('its manifest differs from the one the audit verified');
  writeFileSync(join(staging, MANIFEST_FILE), bytes, { mode: 0o600, flag: 'wx' });
  return JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')) as ManifestView;
}

/** The workspace paths the steps read: their components' members and exports, and the source's run kernel for the supersession. */
function pathsRead(manifest: ManifestView, steps: readonly PlannedStep[]): string[] {
  const paths = new Set<string>();
  for (const step of steps) {
    if (step.action === 'host:supersede') {
      // The supersession names the source root as the source's run kernel names it.
      paths.add(`${ARCHIVE_ROOT}/${LAYOUT.engineDb}`);
      continue;
    }
    const owned = ADOPTION[step.owner as keyof typeof ADOPTION]?.find((s) => s.action === step.action);
    if (!owned || owned.readsWorkspace === false) continue;
    for (const id of step.component_ids) {
      const c = manifest.components.find((x) => x.component_id === id);
      if (!c) throw R.workspaceChanged(`its manifest has no component ${id}`);
      for (const p of c.archive_members) paths.add(p);
      if (c.export_member !== null) paths.add(c.export_member);
    }
  }
  return [...paths].sort();
}

/** A member path the verifier accepted: relative, normalized, confined. */
const confined = (path: string): boolean =>
  path.length > 0 && !path.startsWith('/') && path.split('/').every((p) => p !== '' && p !== '.' && p !== '..');

/**
 * One member copied from the workspace into staging, hashed as it is copied (one read of the
 * workspace's bytes): a copy that is not the member's size and SHA-256 is refused. The workspace
 * file is opened once, never through a link; the copy is written exclusively.
 */
function stageFile(from: string, to: string, m: Member): void {
  const changed = () => R.workspaceChanged(`a member differs from its digest (${m.path})`);
  let src: number;
  try {
    src = openSync(from, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw R.workspaceChanged(`a member is missing (${m.path})`);
    throw changed();
  }
  try {
    if (!fstatSync(src).isFile()) throw changed();
    mkdirSync(dirname(to), { recursive: true, mode: 0o700 });
    const dst = openSync(to, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o600);
    try {
      const hash = createHash('sha256');
      const buf = Buffer.allocUnsafe(CHUNK_BYTES);
      let total = 0;
      for (let n = readSync(src, buf, 0, CHUNK_BYTES, null); n > 0; n = readSync(src, buf, 0, CHUNK_BYTES, null)) {
        total += n;
        if (total > m.size_bytes) throw changed(); // never more than the member's size into the destination
        hash.update(buf.subarray(0, n));
        for (let off = 0; off < n;) off += writeSync(dst, buf, off, n - off);
      }
      if (total !== m.size_bytes || hash.digest('hex') !== m.sha256) throw changed();
    } finally {
      closeSync(dst);
    }
  } finally {
    closeSync(src);
  }
}

/**
 * Stage what `steps` read (see the header) into `<destination>/recovery/staging/`, verified;
 * `recover_workspace_changed` when the workspace no longer holds the audited bytes.
 */
export function stageWorkspace(plan: AdoptionPlan, steps: readonly PlannedStep[]): StagedWorkspace {
  const dir = stagingOf(plan.destination.path);
  const close = (): void => discardStaging(plan.destination.path);
  close(); // a crashed apply's staging is never trusted: rebuilt from the workspace, verified again
  try {
    mkdirSync(dir, { mode: 0o700 });
    const workspace = join(plan.workspace.path, WORKSPACE_DIR);
    const manifest = stageManifest(plan, workspace, dir);
    const members = new Map(manifest.members.map((m) => [m.path, m]));
    mkdirSync(join(dir, ARCHIVE_ROOT), { mode: 0o700 });
    for (const path of pathsRead(manifest, steps)) {
      const m = members.get(path);
      if (m === undefined) {
        // The run kernel is staged only when the backup holds one; its absence names no source root.
        if (path === `${ARCHIVE_ROOT}/${LAYOUT.engineDb}`) continue;
        throw R.workspaceChanged(`a component's member is not in its manifest (${path})`);
      }
      if (!confined(path)) throw R.workspaceChanged(`a member's path is not confined (${path})`);
      if (m.type === 'directory') mkdirSync(join(dir, path), { recursive: true, mode: 0o700 });
      else if (m.type === 'file' && m.sha256 !== null) stageFile(join(workspace, path), join(dir, path), m);
      else throw R.workspaceChanged(`a member is neither a file nor a directory (${path})`);
    }
    return { dir, root: join(dir, ARCHIVE_ROOT), exports: servedExports(dir), close };
  } catch (e) {
    close();
    if (isOutOfSpace(e)) throw R.capacityFreeSpace(operatorPath(plan.destination.path), plan.plan_digest, e);
    throw e;
  }
}

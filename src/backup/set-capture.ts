/**
 * Capture of a `loopx_state_backup_v1` recovery set, before the archive is written: every component
 * through its owner (components.ts), the end re-check of every component, and the profile evidence.
 *
 * - online: components are captured from the live root while it may be written; the skew inventory
 *   says which moved and by how much.
 * - quiescent: the caller (the runtime) has closed admission and drained writers before calling,
 *   and says whether they drained; any movement, undrained writer or effect in flight downgrades
 *   the affected components to online.
 * - crash_consistent: the source must already be stopped. It is proved (no held root lock, no other
 *   process with a file of the root open) or refused; then the exact durable bytes of every
 *   component's members — databases with their WAL or rollback journals — are copied once (the
 *   failure observation) and the owners capture from that copy, so no SQLite recovery ever runs on
 *   the source. The observed bytes are hashed again at the end: a source that moved was not stopped.
 *
 * Everything is written under the attempt's private staging directory; the live root is only read.
 */
import { createHash } from 'node:crypto';
import { copyFileSync, constants, lstatSync, mkdirSync, readFileSync, readdirSync, readlinkSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { faultPoint, tryLockExclusive } from '../core/index.js';
import type { CapturePoint } from '../owners/index.js';
import { captureComponent, describeComponents, exportMemberOf, goalClosures, observeAll, planComponents, type CapturedComponent, type ComponentPlan } from './components.js';
import { crashSourceLive, crashSourceMoved } from './errors.js';
import type { FailureObservation, GoalClosure, ManifestComponent, RecoverySetCapture } from './manifest.js';
import type { CaptureProfile } from './profiles.js';
import { SQLITE_SIDECAR_SUFFIXES, posixPath } from './paths.js';

export interface SetCaptureOptions {
  readonly profile: CaptureProfile;
  /** Quiescent: the epoch admission was closed under, whether writers drained, how long it waited. */
  readonly quiescence?: { readonly epoch: string; readonly drained: boolean; readonly waited_ms: number };
  /** Crash-consistent: the proof that the source is stopped, taken by the caller on the main thread (locks are taken there only); proved here when absent. */
  readonly stopped?: FailureObservation['proof'];
}

/** What a set capture reads: the root and the Goals the plan included. */
export interface SetSource {
  readonly root: string;
  readonly goalIds: readonly string[];
}

/** A component in the set's capture order, with the root-relative paths its owner keeps. */
export interface PlannedComponent {
  readonly component_id: string;
  readonly paths: readonly string[];
}

/** One component as soon as its owner captured it: what the archive needs to carry it. */
export interface ComponentReady {
  readonly component_id: string;
  /** Root-relative member → its captured copy (absolute, under staging). */
  readonly files: readonly (readonly [string, string])[];
  /** Its members that are its owner's databases. */
  readonly databases: readonly string[];
  /** Its members, when its owner could not capture them (never archived raw). */
  readonly withheld: readonly string[];
  readonly export: { readonly archive_path: string; readonly bytes: Uint8Array } | null;
}

/**
 * What a set capture tells its caller while it runs, so the archive can carry each component as
 * soon as it is captured: the plan first, then (crash-consistent) the observed bytes, then each
 * component in order. `component` is awaited before the next component is captured.
 */
export interface SetCaptureEvents {
  plan?(components: readonly PlannedComponent[]): void;
  observation?(files: readonly ObservedMember[]): void;
  component?(ready: ComponentReady): void | Promise<void>;
}

/** A crash-consistent observed file, as the archive carries it: its member and its bytes under staging. */
export interface ObservedMember {
  readonly archive_path: string;
  readonly file: string;
}

export interface CapturedSet {
  readonly components: readonly ManifestComponent[];
  readonly closures: readonly GoalClosure[];
  readonly capture: RecoverySetCapture;
}

/** The journals SQLite recovers a crashed database from (the shared-memory index is rebuilt, never needed). */
const SIDE_JOURNALS = SQLITE_SIDECAR_SUFFIXES.filter((s) => s !== '-shm');

/** Named fault point (tests only): every component captured, the end re-check not yet made. */
export const BACKUP_CAPTURE_FAULT = 'backup.capture.components-captured';

const isFile = (abs: string): boolean => {
  try {
    return lstatSync(abs).isFile();
  } catch {
    return false;
  }
};

/** Every regular file under `rel` (a file or a directory tree), root-relative; links are never followed. */
function filesUnder(root: string, rel: string): string[] {
  let st;
  try {
    st = lstatSync(join(root, rel));
  } catch {
    return [];
  }
  if (st.isFile()) return [rel, ...SIDE_JOURNALS.map((s) => `${rel}${s}`).filter((j) => isFile(join(root, j)))];
  if (!st.isDirectory()) return [];
  return readdirSync(join(root, rel))
    .sort()
    .flatMap((name) => filesUnder(root, join(rel, name)));
}

const sha256File = (abs: string): string => createHash('sha256').update(readFileSync(abs)).digest('hex');

/**
 * The proof that nothing runs on the root: no lock file under locks/ is held (daemon, registry,
 * configuration, Goals, admission) and no other process has a file under the root open (Linux
 * /proc). Refuses with `backup_crash_source_live` otherwise.
 */
export function proveStopped(root: string): FailureObservation['proof'] {
  let locks = 0;
  const lockDir = join(root, 'locks');
  let names: string[] = [];
  try {
    names = readdirSync(lockDir).sort();
  } catch {
    names = [];
  }
  for (const name of names) {
    if (!isFile(join(lockDir, name))) continue;
    const held = tryLockExclusive(join(lockDir, name));
    if (held === undefined) throw crashSourceLive('a lock of the root is held');
    held.release();
    locks++;
  }
  if (otherProcessesWithOpenFiles(root) > 0) throw crashSourceLive('another process has a file of the root open');
  return { root_locks_free: locks, other_processes_with_open_files: 0 };
}

/** Processes other than this one with a descriptor open under `root` (0 where /proc cannot be read for a process). */
function otherProcessesWithOpenFiles(root: string): number {
  const prefix = `${resolve(root)}/`;
  let pids: string[];
  try {
    pids = readdirSync('/proc').filter((n) => /^\d+$/.test(n) && Number(n) !== process.pid);
  } catch {
    throw crashSourceLive('open files cannot be listed on this system, so a stopped source cannot be proved');
  }
  let count = 0;
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    const opens = fds.some((fd) => {
      try {
        const target = readlinkSync(`/proc/${pid}/fd/${fd}`);
        return target === resolve(root) || target.startsWith(prefix);
      } catch {
        return false;
      }
    });
    if (opens) count++;
  }
  return count;
}

export const ARCHIVE_OBSERVATION = 'failure-observation';

/** Per component, the files (databases with their journals) its members are in `root`, root-relative and sorted. */
function filesByComponent(root: string, plans: readonly ComponentPlan[]): Record<string, string[]> {
  return Object.fromEntries(plans.map((c) => [c.component_id, [...new Set(c.owner.members(c.scope).flatMap((m) => filesUnder(root, m.path)))].map(posixPath).sort()]));
}

const allFiles = (byComponent: Record<string, string[]>): string[] => [...new Set(Object.values(byComponent).flat())].sort();

/**
 * Copy the exact durable bytes of every component's members once: into `into` laid out as a root
 * (the owners capture from it — opening a database there may replay its journal) and, untouched,
 * into `raw` under their archive names (what the archive carries). Returns what was observed.
 */
function observeFailure(root: string, plans: readonly ComponentPlan[], into: string, raw: string, proof: FailureObservation['proof']): FailureObservation {
  const byComponent = filesByComponent(root, plans);
  const observed = allFiles(byComponent).map((rel, i) => {
    mkdirSync(dirname(join(into, rel)), { recursive: true, mode: 0o700 });
    const name = `${String(i + 1).padStart(6, '0')}.bin`;
    copyFileSync(join(root, rel), join(raw, name), constants.COPYFILE_EXCL);
    copyFileSync(join(raw, name), join(into, rel), constants.COPYFILE_EXCL);
    const st = lstatSync(join(raw, name));
    return { path: rel, size_bytes: st.size, sha256: sha256File(join(raw, name)), archive_member: `${ARCHIVE_OBSERVATION}/${name}` };
  });
  const componentFiles = Object.fromEntries(Object.entries(byComponent).filter(([, list]) => list.length > 0));
  return { observed_at: new Date().toISOString(), proof, files: observed, component_files: componentFiles };
}

/** The observed bytes are still the source's: a stopped source does not move. */
function checkObservationStill(root: string, obs: FailureObservation, plans: readonly ComponentPlan[]): void {
  const now = allFiles(filesByComponent(root, plans));
  if (now.length !== obs.files.length || now.some((p, i) => p !== obs.files[i]!.path)) throw crashSourceMoved();
  for (const f of obs.files) if (sha256File(join(root, f.path)) !== f.sha256) throw crashSourceMoved();
}

/** A captured component as the archive carries it. */
function readyOf(c: CapturedComponent, into: string): ComponentReady {
  const members = c.plan.owner.members(c.plan.scope);
  return {
    component_id: c.plan.component_id,
    files: (c.capture?.members ?? []).map((m) => [posixPath(m), join(into, m)] as const),
    databases: members.filter((m) => m.kind === 'sqlite').map((m) => posixPath(m.path)),
    withheld: c.state === 'unreadable' ? members.map((m) => posixPath(m.path)) : [],
    export: c.exportBytes === null ? null : { archive_path: exportMemberOf(c.plan.component_id), bytes: c.exportBytes },
  };
}

/**
 * Capture every component of the set into `staging/capture`, with the evidence of the profile
 * requested, telling `events` of each component as soon as it is captured.
 */
export async function captureSet(src: SetSource, staging: string, options: SetCaptureOptions, events: SetCaptureEvents = {}): Promise<CapturedSet> {
  const startedAt = new Date().toISOString();
  const plans = planComponents(src.goalIds);
  events.plan?.(plans.map((c) => ({ component_id: c.component_id, paths: c.owner.members(c.scope).map((m) => posixPath(m.path)) })));
  const into = join(staging, 'capture');
  mkdirSync(into, { mode: 0o700 });

  let source = src.root;
  let failure: FailureObservation | null = null;
  if (options.profile === 'crash_consistent') {
    const proof = options.stopped ?? proveStopped(src.root);
    source = join(staging, 'observation');
    mkdirSync(source, { mode: 0o700 });
    mkdirSync(join(staging, 'observed-bytes'), { mode: 0o700 });
    failure = observeFailure(src.root, plans, source, join(staging, 'observed-bytes'), proof);
  }
  const observation = (failure?.files ?? []).map((f) => ({
    archive_path: f.archive_member,
    file: join(staging, 'observed-bytes', f.archive_member.slice(ARCHIVE_OBSERVATION.length + 1)),
  }));
  events.observation?.(observation);

  const captured: CapturedComponent[] = [];
  for (const plan of plans) {
    const c = await captureComponent(source, plan, into);
    captured.push(c);
    await events.component?.(readyOf(c, into));
  }
  faultPoint(BACKUP_CAPTURE_FAULT);
  const ends: Map<string, CapturePoint | null> = await observeAll(source, plans);
  if (failure !== null) checkObservationStill(src.root, failure, plans);
  const endedAt = new Date().toISOString();

  const { components, downgrades, achieved } = describeComponents(captured, ends, {
    requested: options.profile,
    ...(options.quiescence ? { drained: options.quiescence.drained } : {}),
  });
  return {
    components,
    closures: goalClosures(plans),
    capture: {
      profile: achieved,
      requested_profile: options.profile,
      achieved_profile: achieved,
      cross_owner_point_in_time: achieved !== 'online',
      sqlite: 'owner_capture_online_snapshot',
      files: 'owner_capture_with_traversal_remainder',
      interval: { start: startedAt, end: endedAt },
      quiescence: options.quiescence ?? null,
      failure_observation: failure,
      skew_inventory: components.map((c) => ({
        component_id: c.component_id,
        moved: c.skew.moved_during_capture || c.skew.moved_before_set_end,
        cursor_delta: c.skew.cursor_delta,
      })),
      downgrades,
    },
  };
}

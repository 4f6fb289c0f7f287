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
 *   The archive carries each observed byte once: a file its owner copied unchanged, and a database
 *   observed without a journal (its bytes are a complete state), are archived as the component's
 *   member itself; only a database with its journal, or bytes no component archived, are carried
 *   under opaque names beside the owner's recovered copy.
 *
 * Everything is written under the attempt's private staging directory; the live root is only read.
 */
import { copyFileSync, constants, lstatSync, mkdirSync, readdirSync, readlinkSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { faultPoint, sha256FileHex, tryLockExclusive } from '../core/index.js';
import {
  openGoalWorkSources,
  openServiceSnapshot,
  type CapturePoint,
  type GoalServiceSnapshot,
  type LiveSource,
  type ServiceSnapshot,
} from '../owners/index.js';
import {
  captureComponent,
  describeComponents,
  exportMemberOf,
  goalClosures,
  observeAll,
  planComponents,
  type CapturedComponent,
  type ComponentPlan,
} from './components.js';
import { crashSourceLive, crashSourceMoved } from './errors.js';
import type { FailureObservation, GoalClosure, ManifestComponent, RecoverySetCapture } from './manifest.js';
import type { CaptureProfile } from './profiles.js';
import { SQLITE_SIDECAR_SUFFIXES, archivePathOf, posixPath } from './paths.js';

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
  /** Root-relative member → the bytes archived for it (absolute, under staging). */
  readonly files: readonly (readonly [string, string])[];
  /**
   * Root-relative database → a copy of it to read (count) instead of the archived bytes, where those
   * are the crash-consistent observed bytes (which must not be opened where they lie).
   */
  readonly reads: readonly (readonly [string, string])[];
  /** Its members that are its owner's databases. */
  readonly databases: readonly string[];
  /** Its members, when its owner could not capture them (never archived raw). */
  readonly withheld: readonly string[];
  readonly export: { readonly archive_path: string; readonly bytes: Uint8Array } | null;
}

/**
 * What a set capture tells its caller while it runs, so the archive can carry each component as
 * soon as it is captured: the plan first, then each component in order. `component` is awaited
 * before the next component is captured.
 */
export interface SetCaptureEvents {
  plan?(components: readonly PlannedComponent[]): void;
  component?(ready: ComponentReady): void | Promise<void>;
}

/** A crash-consistent observed file no component archived as it was: its opaque member and its bytes under staging. */
export interface ObservedMember {
  readonly archive_path: string;
  readonly file: string;
}

export interface CapturedSet {
  readonly components: readonly ManifestComponent[];
  readonly closures: readonly GoalClosure[];
  readonly capture: RecoverySetCapture;
  /** Crash-consistent: the observed bytes the archive carries besides the components' members. */
  readonly observed: readonly ObservedMember[];
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
  const names = readdirSync(join(root, rel)).sort();
  // A database's shared-memory index is rebuilt by whoever opens it: never part of an observation.
  const shm = new Set(names.filter((n) => n.endsWith('-shm') && names.includes(n.slice(0, -'-shm'.length))));
  return names.filter((n) => !shm.has(n)).flatMap((name) => filesUnder(root, join(rel, name)));
}

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
  return Object.fromEntries(
    plans.map((c) => [
      c.component_id,
      [...new Set(c.owner.members(c.scope).flatMap((m) => filesUnder(root, m.path)))].map(posixPath).sort(),
    ]),
  );
}

const allFiles = (byComponent: Record<string, string[]>): string[] =>
  [...new Set(Object.values(byComponent).flat())].sort();

/**
 * Copy the exact durable bytes of every component's members once: into `into` laid out as a root
 * (the owners capture from it — opening a database there may replay its journal) and, untouched,
 * into `raw` under their archive names (what the archive carries). Returns what was observed.
 */
function observeFailure(
  root: string,
  plans: readonly ComponentPlan[],
  into: string,
  raw: string,
  proof: FailureObservation['proof'],
): FailureObservation {
  const byComponent = filesByComponent(root, plans);
  const observed = allFiles(byComponent).map((rel, i) => {
    mkdirSync(dirname(join(into, rel)), { recursive: true, mode: 0o700 });
    const name = `${String(i + 1).padStart(6, '0')}.bin`;
    copyFileSync(join(root, rel), join(raw, name), constants.COPYFILE_EXCL);
    copyFileSync(join(raw, name), join(into, rel), constants.COPYFILE_EXCL);
    const st = lstatSync(join(raw, name));
    return {
      path: rel,
      size_bytes: st.size,
      sha256: sha256FileHex(join(raw, name)),
      archive_member: `${ARCHIVE_OBSERVATION}/${name}`,
    };
  });
  const componentFiles = Object.fromEntries(Object.entries(byComponent).filter(([, list]) => list.length > 0));
  return { observed_at: new Date().toISOString(), proof, files: observed, component_files: componentFiles };
}

/** The observed bytes are still the source's: a stopped source does not move. */
function checkObservationStill(root: string, obs: FailureObservation, plans: readonly ComponentPlan[]): void {
  const now = allFiles(filesByComponent(root, plans));
  if (now.length !== obs.files.length || now.some((p, i) => p !== obs.files[i]!.path)) throw crashSourceMoved();
  for (const f of obs.files) if (sha256FileHex(join(root, f.path)) !== f.sha256) throw crashSourceMoved();
}

const holdsDatabase = (plan: ComponentPlan): boolean => plan.owner.members(plan.scope).some((m) => m.kind === 'sqlite');

/** A crash-consistent observation as the components are archived against it. */
interface Observed {
  readonly failure: FailureObservation;
  /** Root-relative path → its observed bytes under staging. */
  readonly raw: ReadonlyMap<string, string>;
  /** Root-relative path → what was observed of it. */
  readonly byPath: ReadonlyMap<string, FailureObservation['files'][number]>;
  /** Observed files that are neither a journal nor a file with a journal observed beside it. */
  readonly whole: ReadonlySet<string>;
  /** Observed files a component archives as they were observed (as its member). */
  readonly asMember: Set<string>;
}

function observedIndex(failure: FailureObservation, rawDir: string): Observed {
  const paths = new Set(failure.files.map((f) => f.path));
  // An empty journal holds nothing to recover: the database beside it is whole on its own.
  const journals = new Set(failure.files.filter((f) => f.size_bytes > 0).map((f) => f.path));
  const journaled = (p: string): boolean =>
    SIDE_JOURNALS.some((s) => journals.has(`${p}${s}`) || (p.endsWith(s) && paths.has(p.slice(0, -s.length))));
  return {
    failure,
    raw: new Map(failure.files.map((f) => [f.path, join(rawDir, basename(f.archive_member))])),
    byPath: new Map(failure.files.map((f) => [f.path, f])),
    whole: new Set([...paths].filter((p) => !journaled(p))),
    asMember: new Set(),
  };
}

/**
 * A captured component's members as the archive carries them: the owner's copies — except, in a
 * crash-consistent set, a database observed without a journal, which is archived as the observed
 * bytes themselves (a complete state; its owner's copy is read instead of them), and a file its
 * owner copied byte for byte, which stands for its observed bytes.
 */
function archivedMembers(
  c: CapturedComponent,
  into: string,
  obs: Observed | null,
  databases: ReadonlySet<string>,
): Pick<ComponentReady, 'files' | 'reads'> {
  const files: (readonly [string, string])[] = [];
  const reads: (readonly [string, string])[] = [];
  for (const m of (c.capture?.members ?? []).map(posixPath)) {
    const copy = join(into, m);
    const observed = obs?.whole.has(m) ? obs.byPath.get(m) : undefined;
    if (observed !== undefined && databases.has(m)) {
      files.push([m, obs!.raw.get(m)!]);
      reads.push([m, copy]);
      obs!.asMember.add(m);
      continue;
    }
    if (observed !== undefined && sha256FileHex(copy) === observed.sha256) obs!.asMember.add(m);
    files.push([m, copy]);
  }
  return { files, reads };
}

/** A captured component as the archive carries it. */
function readyOf(c: CapturedComponent, into: string, obs: Observed | null): ComponentReady {
  const members = c.plan.owner.members(c.plan.scope);
  const databases = members.filter((m) => m.kind === 'sqlite').map((m) => posixPath(m.path));
  return {
    component_id: c.plan.component_id,
    ...archivedMembers(c, into, obs, new Set(databases)),
    databases,
    withheld: c.state === 'unreadable' ? members.map((m) => posixPath(m.path)) : [],
    export: c.exportBytes === null ? null : { archive_path: exportMemberOf(c.plan.component_id), bytes: c.exportBytes },
  };
}

/** The observation as the manifest records it — each file at the member that carries it — and the bytes still to archive. */
function settleObservation(obs: Observed | null): { failure: FailureObservation | null; observed: ObservedMember[] } {
  if (obs === null) return { failure: null, observed: [] };
  const files = obs.failure.files.map((f) =>
    obs.asMember.has(f.path) ? { ...f, archive_member: archivePathOf(f.path) } : f,
  );
  const observed = files
    .filter((f) => !obs.asMember.has(f.path))
    .map((f) => ({ archive_path: f.archive_member, file: obs.raw.get(f.path)! }));
  return { failure: { ...obs.failure, files }, observed };
}

/** The service references the manifest records: the root's (none on SQLite), and those Goals' work was read from apart from it. */
const serviceOf = (
  service: ServiceSnapshot | null,
  apart: readonly GoalServiceSnapshot[],
): Pick<RecoverySetCapture, 'service' | 'goal_services'> => ({
  ...(service === null ? {} : { service: service.reference() }),
  ...(apart.length === 0
    ? {}
    : { goal_services: apart.map((a) => ({ goal_ids: [...a.goal_ids], ...a.snapshot.reference() })) }),
});

/** Closes the root's snapshot when opening the Goals' own failed, and fails as they did. */
const closing =
  (service: ServiceSnapshot | null) =>
  async (e: unknown): Promise<never> => {
    await service?.close();
    throw e;
  };

/**
 * Crash-consistent: prove the source stopped (unless the caller did) and observe its bytes once into
 * staging; the owners then capture from the observation (`source`), never from the live root.
 */
function observeStopped(
  root: string,
  plans: readonly ComponentPlan[],
  staging: string,
  stopped: FailureObservation['proof'] | undefined,
): { source: string; obs: Observed } {
  const proof = stopped ?? proveStopped(root);
  const source = join(staging, 'observation');
  mkdirSync(source, { mode: 0o700 });
  mkdirSync(join(staging, 'observed-bytes'), { mode: 0o700 });
  const obs = observedIndex(
    observeFailure(root, plans, source, join(staging, 'observed-bytes'), proof),
    join(staging, 'observed-bytes'),
  );
  return { source, obs };
}

/**
 * Capture every component of the set into `staging/capture`, with the evidence of the profile
 * requested, telling `events` of each component as soon as it is captured.
 */
export async function captureSet(
  src: SetSource,
  staging: string,
  options: SetCaptureOptions,
  events: SetCaptureEvents = {},
): Promise<CapturedSet> {
  const startedAt = new Date().toISOString();
  const plans = planComponents(src.goalIds);
  // Components holding databases are captured first, so the archive carries them as early as it can
  // (the verifier checks each database as soon as it is extracted, while the rest still streams).
  // The manifest lists them in the plan's (dependency) order all the same.
  const order = [...plans].sort((a, b) => Number(!holdsDatabase(a)) - Number(!holdsDatabase(b)));
  events.plan?.(
    order.map((c) => ({ component_id: c.component_id, paths: c.owner.members(c.scope).map((m) => posixPath(m.path)) })),
  );
  const into = join(staging, 'capture');
  mkdirSync(into, { mode: 0o700 });

  const { source, obs } =
    options.profile === 'crash_consistent'
      ? observeStopped(src.root, plans, staging, options.stopped)
      : { source: src.root, obs: null };

  // A root whose Goal state is in a database service: every served component is read in one snapshot of it.
  const service = obs === null ? await openServiceSnapshot(src.root) : null;
  // A Goal whose work is apart from its root's store: read where it lives (another schema: a snapshot of its own).
  const apart = obs === null ? await openGoalWorkSources(src.root, src.goalIds, service).catch(closing(service)) : null;
  const live: LiveSource = {
    root: source,
    ...(service === null ? {} : { service }),
    ...(apart === null ? {} : { goalWork: apart.sources }),
  };
  const byId = new Map<string, CapturedComponent>();
  try {
    for (const plan of order) {
      const c = await captureComponent(live, plan, into);
      byId.set(plan.component_id, c);
      await events.component?.(readyOf(c, into, obs));
    }
  } finally {
    await service?.close();
    for (const a of apart?.services ?? []) await a.snapshot.close();
  }
  const captured = plans.map((p) => byId.get(p.component_id)!);
  faultPoint(BACKUP_CAPTURE_FAULT);
  // A failure observation is a private copy: nothing moves in it, so each component ends where its
  // capture ended; that the source itself stayed still is what the observation's re-hash proves.
  const ends: Map<string, CapturePoint | null> =
    obs === null
      ? await observeAll(live, plans)
      : new Map(captured.map((c) => [c.plan.component_id, c.capture?.end ?? null]));
  if (obs !== null) checkObservationStill(src.root, obs.failure, plans);
  const { failure, observed } = settleObservation(obs);
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
      ...serviceOf(service, apart?.services ?? []),
      skew_inventory: components.map((c) => ({
        component_id: c.component_id,
        moved: c.skew.moved_during_capture || c.skew.moved_before_set_end,
        cursor_delta: c.skew.cursor_delta,
      })),
      downgrades,
    },
    observed,
  };
}

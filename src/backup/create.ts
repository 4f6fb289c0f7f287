/**
 * backup-state create: capture a plan into `<backup-id>.tar.gz` and `<backup-id>.manifest.json`.
 *
 * Order: refuse early what the plan already breaks (capacity, occupied names); re-read the owner
 * sources and refuse drift (routes, bytes, appearance, removal); stream the configuration
 * checkpoint (built from the plan's exact reads and verified), every planned member (SQLite
 * databases through online snapshots into the private staging directory, other files hashed while
 * copied) and the embedded manifest into the archive; refuse when a copied owner source differs
 * from its exact read (A→B, A→B→A), appeared or vanished, and when a §12 bound is exceeded; then
 * publish without overwriting. Any refusal leaves nothing published and removes only the staging
 * directory this attempt created; a full output file system is `backup_capacity_free_space`. It never truncates history or claims more than CAPTURE_FACTS.
 * Each member's capture is capture-members.ts; this module orders, checks and publishes.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { canonicalJson } from '../core/index.js';
import { isOutOfSpace } from '../store/index.js';
import {
  capacityExceeded,
  configurationCheckpointInvalid,
  outOfSpace,
  routesChanged,
  sourceAppeared,
  sourceChanged,
  sourceRemoved,
} from './errors.js';
import { manifestBytes, withArchiveFacts, type BackupManifest } from './manifest.js';
import { ARCHIVE_CONFIGURATION_BACKUP, ARCHIVE_MANIFEST, archivePathOf } from './paths.js';
import { planCapacityRefusals, type BackupPlan } from './plan.js';
import {
  assertNamesFree,
  createStaging,
  prepareOutputDir,
  publishPair,
  removeStaging,
  writeNewFile,
} from './publish.js';
import {
  WITNESSED_SOURCES,
  type ConfigurationCheckpointVerification,
  type MachineConfigurationRead,
  type RegistryRead,
} from './sources.js';
import { ArchiveWriter } from './tar-writer.js';
import { buildManifest, type Captured } from './manifest-build.js';
import type { BackupFormat } from './manifest.js';
import { profileNotAchieved } from './errors.js';
import type { CaptureProfile } from './profiles.js';
import { proveStopped, type CapturedSet, type SetCaptureOptions } from './set-capture.js';
import { SetCaptureThread } from './capture-thread.js';
import { streamComponents, type ComponentSink } from './component-stream.js';
import {
  captureStep,
  checkLimit,
  newCaptureRun,
  progress,
  watch,
  type CaptureRun,
  type ExactRead,
  type ExactReads,
} from './capture-members.js';
import { refuseNonSqliteRoot } from '../owners/index.js';

/** One step of the capture, as hooks see it. `path` is relative to the root. */
export interface CaptureStep {
  readonly path: string;
  readonly archive_path: string;
  readonly kind: 'directory' | 'file' | 'sqlite' | 'absence_witness';
}

/** Test hooks: mutate sources at exact moments (latches, not sleeps). Never used in production. */
export interface CreateHooks {
  afterPlan?(plan: BackupPlan): void | Promise<void>;
  beforeCopy?(step: CaptureStep): void | Promise<void>;
  afterCopy?(step: CaptureStep): void | Promise<void>;
  beforePublish?(): void | Promise<void>;
  /** v1: after each component's owner capture. */
  afterComponent?(componentId: string): void | Promise<void>;
}

export interface BackupProgress {
  readonly phase: 'capture' | 'publish' | 'done';
  readonly members_done: number;
  readonly members_total: number;
  readonly bytes_done: number;
  readonly bytes_total: number;
}

export interface CreateOptions {
  readonly hooks?: CreateHooks;
  readonly onProgress?: (p: BackupProgress) => void;
  /** gzip level (1–9); default 6, gzip's own default. */
  readonly gzipLevel?: number;
  readonly now?: () => Date;
  /** Manifest revision: `v1` (default) declares components and capture profiles; `v0` is the legacy manifest. */
  readonly format?: BackupFormat;
  /** v1: the capture profile requested (default `online`). */
  readonly profile?: CaptureProfile;
  /** v1: refuse publication when the set achieves less than `profile`. */
  readonly requireProfile?: boolean;
  /** v1 quiescent: the admission epoch the caller closed, and whether every writer drained. */
  readonly quiescence?: SetCaptureOptions['quiescence'];
}

export interface BackupResult {
  readonly backup_id: string;
  readonly archive: { readonly name: string; readonly sha256: string; readonly size_bytes: number };
  readonly manifest: { readonly name: string; readonly sha256: string; readonly size_bytes: number };
  readonly manifest_doc: BackupManifest;
}

const sha256Hex = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex');
const equalBytes = (a: Uint8Array, b: Uint8Array): boolean =>
  Buffer.compare(
    Buffer.from(a.buffer, a.byteOffset, a.byteLength),
    Buffer.from(b.buffer, b.byteOffset, b.byteLength),
  ) === 0;

/** Refuse when the live owner sources no longer say what the plan read (discovery drift). */
function assertNoDrift(p: BackupPlan): void {
  const registryNow: RegistryRead = p.sources.readRegistryExact();
  const machineNow: MachineConfigurationRead = p.sources.readMachineConfigurationExact();
  const during = 'after the plan was made';
  const reg = p.registryRead;
  if (!reg.absent && registryNow.absent) throw sourceRemoved(WITNESSED_SOURCES.registry, during);
  if (reg.absent && !registryNow.absent) throw sourceAppeared(WITNESSED_SOURCES.registry, during);
  if (!reg.absent && !registryNow.absent) {
    const key = (g: { goal_id: string; goal_instance_id?: string; route: string }) =>
      `${g.goal_id}\0${g.goal_instance_id ?? ''}\0${g.route}`;
    const before = new Set(reg.value.goals.map(key));
    const after = new Set(registryNow.value.goals.map(key));
    const changed = [...before].filter((k) => !after.has(k)).length + [...after].filter((k) => !before.has(k)).length;
    if (changed > 0) throw routesChanged(changed);
    if (!equalBytes(reg.bytes, registryNow.bytes)) throw sourceChanged(WITNESSED_SOURCES.registry, during);
  }
  const mac = p.machineRead;
  if (!mac.absent && machineNow.absent) throw sourceRemoved(WITNESSED_SOURCES.machineConfiguration, during);
  if (mac.absent && !machineNow.absent) throw sourceAppeared(WITNESSED_SOURCES.machineConfiguration, during);
  if (!mac.absent && !machineNow.absent && !equalBytes(mac.bytes, machineNow.bytes))
    throw sourceChanged(WITNESSED_SOURCES.machineConfiguration, during);
}

/** Build the configuration checkpoint from the plan's exact reads and check it says exactly what they say. */
function configurationCheckpoint(p: BackupPlan): {
  bytes: Uint8Array;
  verification: ConfigurationCheckpointVerification;
} {
  const bytes = p.sources.buildConfigurationCheckpoint(p.registryRead, p.machineRead);
  const v = p.sources.verifyConfigurationCheckpoint(bytes);
  if (!v.ok) throw configurationCheckpointInvalid(`verification failed (${v.problems.join(', ')})`);
  const goals = p.registryRead.absent ? [] : p.registryRead.value.goals;
  if (v.goal_count !== goals.length) throw configurationCheckpointInvalid('its Goals differ from the registry read');
  if (v.machine_configuration_present !== !p.machineRead.absent)
    throw configurationCheckpointInvalid('its machine configuration presence differs from the read');
  let doc: { data?: { machine_configuration?: unknown; goals?: Array<{ goal_id?: unknown }> } };
  try {
    doc = JSON.parse(new TextDecoder().decode(bytes)) as typeof doc;
  } catch {
    throw configurationCheckpointInvalid('it is not JSON');
  }
  const ids = (doc.data?.goals ?? []).map((g) => g.goal_id);
  // The same Goals, whatever their order (the config owner sorts them; the registry keeps creation order).
  if (canonicalJson([...ids].sort()) !== canonicalJson(goals.map((g) => g.goal_id).sort()))
    throw configurationCheckpointInvalid('its Goals differ from the registry read');
  const machine = p.machineRead.absent ? null : (JSON.parse(new TextDecoder().decode(p.machineRead.bytes)) as unknown);
  if (canonicalJson(doc.data?.machine_configuration ?? null) !== canonicalJson(machine))
    throw configurationCheckpointInvalid('its machine configuration differs from the read');
  return { bytes, verification: v };
}

export async function create(p: BackupPlan, options: CreateOptions = {}): Promise<BackupResult> {
  // A root whose Goal state is in a database service is captured by its owners from one snapshot of
  // it (v1, online or quiescent); the legacy manifest and a failure observation of files would miss it.
  if (options.format === 'v0') refuseNonSqliteRoot(p.root, 'backup-state --format v0');
  if (options.profile === 'crash_consistent') refuseNonSqliteRoot(p.root, 'backup-state --profile crash-consistent');
  try {
    return await capture(p, options);
  } catch (e) {
    // A full output file system, wherever it struck (archive, SQLite snapshot, manifest, link), is
    // the one capacity refusal — never an internal error or a verdict on a source.
    throw isOutOfSpace(e) ? outOfSpace() : e;
  }
}

async function capture(p: BackupPlan, options: CreateOptions): Promise<BackupResult> {
  const hooks = options.hooks ?? {};
  const now = options.now ?? (() => new Date());
  await hooks.afterPlan?.(p);
  refuseEarly(p);

  const started = now();
  const createdAt = started.toISOString();
  // Every member carries the capture's start second as mtime: source mtimes are not recorded.
  const mtime = new Date(Math.floor(started.getTime() / 1000) * 1000);
  const staging = createStaging(p.outputDir, p.backupId);
  const stagedArchive = join(staging, 'archive.tar.gz');
  const stagedManifest = join(staging, 'manifest.json');
  const writer = ArchiveWriter.create(stagedArchive, mtime, options.gzipLevel ?? 6);
  let published = false;
  let thread: SetCaptureThread | undefined;
  try {
    const run = newCaptureRun(p, writer, staging, options.onProgress);
    // v1: the owners capture on their own thread while the archive streams (capture-thread.ts).
    thread = options.format === 'v0' ? undefined : startSetCapture(p, staging, options);
    // The configuration checkpoint first: it depends only on the plan's exact reads.
    const checkpoint = await captureCheckpoint(run);
    const exactReads = exactReadsOf(p);
    const runStep = async (step: CaptureStep): Promise<void> => {
      await hooks.beforeCopy?.(step);
      await captureStep(run, step, exactReads.get(step.path));
      await hooks.afterCopy?.(step);
      checkLimit('expandedBytes', writer.expandedBytes);
      checkLimit('archiveBytes', writer.archiveBytes);
      progress(run, 'capture');
    };
    const steps = captureSteps(p, exactReads);
    let set: CapturedSet | undefined;
    if (thread === undefined) for (const step of steps) await runStep(step);
    else {
      set = await streamComponents(thread, steps, new Set(p.members.map((m) => m.path)), componentSink(run, runStep));
      if (options.requireProfile) assertProfileAchieved(set, options.profile ?? 'online');
    }
    checkCopiedWitnesses(run, exactReads);
    assertGoalRoutesCaptured(run);
    checkLimit('members', run.members.length + 1);

    const ended = now();
    const embedded = buildManifest(p, {
      createdAt,
      endedAt: ended.toISOString(),
      mtime: mtime.toISOString(),
      members: run.members,
      fileMembers: run.fileMembers,
      snapshots: run.snapshots,
      missing: run.missing,
      warnings: run.warnings,
      witnesses: [...run.witnesses.values()].sort((a, b) => (a.source < b.source ? -1 : 1)),
      checkpoint,
      set,
    });
    const { archive, external, externalBytes } = await sealArchive(run, embedded, stagedManifest);

    progress(run, 'publish');
    await hooks.beforePublish?.();
    publishPair(
      p.outputDir,
      { manifestPath: stagedManifest, archivePath: stagedArchive },
      { manifest: p.manifestName, archive: p.archiveName },
    );
    published = true;
    progress(run, 'done');
    return {
      backup_id: p.backupId,
      archive: { name: p.archiveName, sha256: archive.sha256, size_bytes: archive.size_bytes },
      manifest: { name: p.manifestName, sha256: sha256Hex(externalBytes), size_bytes: externalBytes.byteLength },
      manifest_doc: external,
    };
  } finally {
    await thread?.close();
    if (!published) await writer.abort();
    removeStaging(staging);
  }
}

/** Refuse, before anything is staged, what the plan already breaks: capacity, occupied names, discovery drift. */
function refuseEarly(p: BackupPlan): void {
  const early = planCapacityRefusals(p)[0];
  if (early) throw capacityExceeded(early.limit_name, early.observed, early.subject);
  prepareOutputDir(p.outputDir);
  assertNamesFree(p.outputDir, [p.archiveName, p.manifestName]);
  assertNoDrift(p);
}

/** v1 `requireProfile`: refuse publication when the set achieved less than the profile requested. */
function assertProfileAchieved(set: CapturedSet, requested: CaptureProfile): void {
  if (set.capture.achieved_profile !== requested)
    throw profileNotAchieved(
      requested,
      set.capture.achieved_profile,
      set.capture.downgrades.map((d) => d.code),
    );
}

/** The manifest names each included Goal's frozen archive route: it must be in the archive. */
function assertGoalRoutesCaptured(run: CaptureRun): void {
  const capturedDirectories = new Set(run.members.filter((m) => m.type === 'directory').map((m) => m.path));
  for (const g of run.p.goals)
    if (g.archive_route !== null && !capturedDirectories.has(g.archive_route))
      throw sourceRemoved(g.route ?? g.goal_id, 'during capture');
}

/** Write the configuration checkpoint as the first member. */
async function captureCheckpoint(run: CaptureRun): Promise<Captured['checkpoint']> {
  const checkpoint = configurationCheckpoint(run.p);
  const entry = await run.writer.buffer(ARCHIVE_CONFIGURATION_BACKUP, checkpoint.bytes);
  run.regularBytes += entry.size_bytes;
  run.members.push({
    path: ARCHIVE_CONFIGURATION_BACKUP,
    type: 'file',
    size_bytes: entry.size_bytes,
    sha256: entry.sha256,
    origin: 'configuration_checkpoint',
  });
  run.fileMembers.push({
    archive_path: ARCHIVE_CONFIGURATION_BACKUP,
    size_bytes: entry.size_bytes,
    sha256: entry.sha256,
  });
  return { entry, verification: checkpoint.verification };
}

/** The owner sources' exact reads, by root-relative path. */
function exactReadsOf(p: BackupPlan): ExactReads {
  return new Map<string, ExactRead>([
    [WITNESSED_SOURCES.registry, { owner: 'registry', read: p.registryRead }],
    [WITNESSED_SOURCES.machineConfiguration, { owner: 'config', read: p.machineRead }],
  ]);
}

/**
 * The planned members and, for each owner source read as absent, an absence witness, in archive
 * path order. A present read is compared with its copied member; an absent one is re-checked in place.
 */
function captureSteps(p: BackupPlan, exactReads: ExactReads): CaptureStep[] {
  const steps: CaptureStep[] = p.members.map((m) => ({
    path: m.path,
    archive_path: m.archive_path,
    kind: m.type === 'directory' ? 'directory' : m.sqlite ? 'sqlite' : 'file',
  }));
  for (const [source, { read }] of exactReads)
    if (read.absent) steps.push({ path: source, archive_path: archivePathOf(source), kind: 'absence_witness' });
  steps.sort((a, b) => (a.archive_path < b.archive_path ? -1 : a.archive_path > b.archive_path ? 1 : 0));
  return steps;
}

/**
 * Before publication, every exact read is checked against the bytes actually copied into the
 * archive (never against a re-read of the live file, which cannot see A→B→A).
 */
function checkCopiedWitnesses(run: CaptureRun, exactReads: ExactReads): void {
  for (const [source, { owner, read }] of exactReads) {
    const copy = run.copiedWitness.get(source);
    if (read.absent) {
      if (copy) throw sourceAppeared(source, 'during capture');
      if (!run.witnesses.has(source)) throw sourceAppeared(source, 'during capture');
      continue;
    }
    if (!copy) throw sourceRemoved(source, 'during capture');
    const readSha = sha256Hex(read.bytes);
    if (copy.sha256 !== readSha || copy.size_bytes !== read.bytes.byteLength)
      throw sourceChanged(source, 'during capture');
    run.witnesses.set(source, {
      owner,
      source,
      archive_path: copy.archive_path,
      present: true,
      revision: read.revision,
      read_sha256: readSha,
      read_size_bytes: read.bytes.byteLength,
      copied_sha256: copy.sha256,
    });
  }
}

/** Close the archive with its embedded manifest and stage the external manifest, which names the archive's digest. */
async function sealArchive(
  run: CaptureRun,
  embedded: BackupManifest,
  stagedManifest: string,
): Promise<{
  archive: { sha256: string; size_bytes: number; expanded_bytes: number };
  external: BackupManifest;
  externalBytes: Uint8Array;
}> {
  const embeddedBytes = manifestBytes(embedded);
  checkLimit('manifestBytes', embeddedBytes.byteLength, ARCHIVE_MANIFEST);
  await run.writer.buffer(ARCHIVE_MANIFEST, embeddedBytes);
  const archive = await run.writer.finish();
  checkLimit('archiveBytes', archive.size_bytes);
  checkLimit('expandedBytes', archive.expanded_bytes);
  checkLimit('expansionRatio', archive.size_bytes > 0 ? Math.ceil(archive.expanded_bytes / archive.size_bytes) : 0);

  const external = withArchiveFacts(embedded, {
    sha256: archive.sha256,
    size_bytes: archive.size_bytes,
    expanded_bytes: archive.expanded_bytes,
    embedded_manifest: {
      archive_path: ARCHIVE_MANIFEST,
      sha256: sha256Hex(embeddedBytes),
      size_bytes: embeddedBytes.byteLength,
    },
  });
  const externalBytes = manifestBytes(external);
  checkLimit('manifestBytes', externalBytes.byteLength, run.p.manifestName);
  writeNewFile(stagedManifest, externalBytes);
  return { archive, external, externalBytes };
}

/** v1: the set capture on its own thread, for the Goals the plan included. */
function startSetCapture(p: BackupPlan, staging: string, options: CreateOptions): SetCaptureThread {
  const goalIds = p.goals.filter((g) => g.route_status === 'included').map((g) => g.goal_id);
  const profile = options.profile ?? 'online';
  // A stopped source is proved here: its lock probes run on the main thread only.
  const stopped = profile === 'crash_consistent' ? { stopped: proveStopped(p.root) } : {};
  return new SetCaptureThread(
    {
      root: p.root,
      goalIds,
      staging,
      options: { profile, ...stopped, ...(options.quiescence ? { quiescence: options.quiescence } : {}) },
    },
    options.hooks?.afterComponent,
  );
}

/** The archive run as the component stream writes into it. */
function componentSink(run: CaptureRun, runStep: (step: CaptureStep) => Promise<void>): ComponentSink {
  return {
    step: runStep,
    route(ready) {
      for (const [rel, abs] of ready.files) run.copies.set(rel, abs);
      for (const d of ready.databases) run.databases.add(d);
      for (const [rel, abs] of ready.reads) run.reads.set(rel, abs);
      run.withheld.push(...ready.withheld);
    },
    async directory(archivePath, origin) {
      await run.writer.directory(archivePath);
      run.members.push({ path: archivePath, type: 'directory', size_bytes: 0, sha256: null, origin });
    },
    async extra(archivePath, content, origin) {
      const entry =
        'file' in content
          ? await run.writer.file(archivePath, content.file, watch(run, false))
          : await run.writer.buffer(archivePath, content.bytes);
      if ('bytes' in content) {
        run.regularBytes += entry.size_bytes;
        checkLimit('regularFileBytes', run.regularBytes);
      }
      run.members.push({ path: archivePath, type: 'file', size_bytes: entry.size_bytes, sha256: entry.sha256, origin });
      run.fileMembers.push({ archive_path: archivePath, size_bytes: entry.size_bytes, sha256: entry.sha256 });
    },
  };
}

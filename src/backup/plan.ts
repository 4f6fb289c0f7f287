/**
 * backup-state plan: read the registry and machine configuration exactly once (the reads are kept
 * in the plan), discover the root's members, resolve and freeze each registered Goal's route and
 * archive route, and count what create would capture. Planning writes nothing: no output
 * directory, no database connection, no file in the root.
 */
import { statSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { LAYOUT, OWNERS, ownerOfMember } from '../owners/index.js';
import {
  backupIdInvalid,
  outputDirInvalid,
  rootInvalid,
  rootMissing,
  sourceAppeared,
  sourceRemoved,
} from './errors.js';
import {
  discover,
  type BackupWarning,
  type Discovery,
  type ExcludedEntry,
  type MemberCategory,
  type MissingEntry,
  type PlannedMember,
} from './discover.js';
import { BACKUP_LIMITS, CAPACITY_CODES, type BackupLimitName } from './limits.js';
import { archivePathOf, normalizeRoute, pathLimitBroken } from './paths.js';
import { ownerBackupSources } from './owner-sources.js';
import { WITNESSED_SOURCES, type BackupSources, type MachineConfigurationRead, type RegistryRead } from './sources.js';

export interface PlanOptions {
  /** Where create publishes; default `<root>/backups` (not captured: LAYOUT.nonState). */
  readonly outputDir?: string | undefined;
  /** Default: the plan's UTC time as YYYYMMDDTHHMMSSZ. */
  readonly backupId?: string | undefined;
  readonly includeAutomations?: boolean | undefined;
  readonly includeSkills?: boolean | undefined;
  /** Default: ownerBackupSources(root) — the registry and config owners. */
  readonly sources?: BackupSources | undefined;
  readonly now?: Date | undefined;
}

export type RouteStatus = 'included' | 'missing' | 'outside_root' | 'excluded' | 'not_a_directory';

export interface PlannedGoal {
  readonly goal_id: string;
  readonly goal_instance_id: string | null;
  /** The route, normalized relative to the root; null when it leaves the root. */
  readonly route: string | null;
  /** Frozen archive route (`runtime-root/<route>`) when the route is captured, else null. */
  readonly archive_route: string | null;
  readonly route_status: RouteStatus;
}

export interface BackupPlan {
  /** Absolute: private to this process, never printed or written into a manifest. */
  readonly root: string;
  /** Absolute: private to this process, never printed or written into a manifest. */
  readonly outputDir: string;
  readonly backupId: string;
  readonly archiveName: string;
  readonly manifestName: string;
  readonly plannedAt: string;
  readonly options: { readonly include_automations: boolean; readonly include_skills: boolean };
  readonly sources: BackupSources;
  /** The exact reads the configuration checkpoint is built from and copied bytes are compared with. */
  readonly registryRead: RegistryRead;
  readonly machineRead: MachineConfigurationRead;
  readonly goals: readonly PlannedGoal[];
  /** Goal directories under goals/ that the registry does not name. */
  readonly unregisteredGoalDirectories: readonly string[];
  readonly projectCount: number;
  readonly members: readonly PlannedMember[];
  readonly missing: readonly MissingEntry[];
  readonly excluded: readonly ExcludedEntry[];
  readonly warnings: readonly BackupWarning[];
}

export const BACKUP_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export const defaultBackupId = (now: Date): string =>
  now
    .toISOString()
    .replace(/\.\d{3}Z$/, 'Z')
    .replace(/[-:]/g, '');

export const archiveNameOf = (backupId: string): string => `${backupId}.tar.gz`;
export const manifestNameOf = (backupId: string): string => `${backupId}.manifest.json`;

/**
 * Refuse a root that is missing or not a directory, and an output directory that is the root or
 * not a directory. `excludeSubtree` is the output directory when it lies inside the root.
 */
function checkRootAndOutput(
  rootAbs: string,
  outputDirOption: string | undefined,
): { outputDir: string; excludeSubtree: string | undefined } {
  try {
    if (!statSync(rootAbs).isDirectory()) throw rootInvalid();
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw rootMissing();
    throw e;
  }
  const outputDir = resolve(outputDirOption ?? join(rootAbs, 'backups'));
  if (outputDir === rootAbs) throw outputDirInvalid('it is the runtime root');
  try {
    if (!statSync(outputDir).isDirectory()) throw outputDirInvalid('it is not a directory');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
  }
  const outRel = relative(rootAbs, outputDir);
  const excludeSubtree =
    outRel.startsWith('..') || outRel === '' || outRel.startsWith(sep) ? undefined : outRel.split(sep).join('/');
  return { outputDir, excludeSubtree };
}

/** Resolve and freeze each registered Goal's route; a route that is not an included directory is recorded in `missing`. */
function planGoalRoutes(
  rootAbs: string,
  registryRead: RegistryRead,
  found: Discovery,
  missing: MissingEntry[],
): { goals: PlannedGoal[]; registered: Set<string> } {
  const byPath = new Map(found.members.map((m) => [m.path, m]));
  const goals: PlannedGoal[] = [];
  const registered = new Set<string>();
  for (const g of registryRead.absent ? [] : registryRead.value.goals) {
    registered.add(g.goal_id);
    const route = normalizeRoute(rootAbs, g.route);
    let status: RouteStatus;
    if (route === undefined) status = 'outside_root';
    else {
      const m = byPath.get(route);
      if (m?.type === 'directory') status = 'included';
      else if (m) status = 'not_a_directory';
      else if (found.excluded.some((x) => route === x.source_path || route.startsWith(`${x.source_path}/`)))
        status = 'excluded';
      else status = 'missing';
    }
    if (status !== 'included')
      missing.push({ key: `registry_route:${g.goal_id}`, source_path: route ?? null, reason: `route_${status}` });
    goals.push({
      goal_id: g.goal_id,
      goal_instance_id: g.goal_instance_id ?? null,
      route: route ?? null,
      archive_route: status === 'included' ? archivePathOf(route!) : null,
      route_status: status,
    });
  }
  return { goals, registered };
}

export function plan(root: string, options: PlanOptions = {}): BackupPlan {
  const rootAbs = resolve(root);
  const now = options.now ?? new Date();
  const backupId = options.backupId ?? defaultBackupId(now);
  if (!BACKUP_ID.test(backupId)) throw backupIdInvalid();
  const { outputDir, excludeSubtree } = checkRootAndOutput(rootAbs, options.outputDir);

  const sources = options.sources ?? ownerBackupSources(rootAbs);
  // The exact reads come first; discovery must then agree with them.
  const registryRead = sources.readRegistryExact();
  const machineRead = sources.readMachineConfigurationExact();
  const includeAutomations = options.includeAutomations ?? false;
  const includeSkills = options.includeSkills ?? false;
  const found = discover(rootAbs, { includeAutomations, includeSkills, excludeSubtree });

  const byPath = new Map(found.members.map((m) => [m.path, m]));
  for (const [source, read] of [
    [WITNESSED_SOURCES.registry, registryRead],
    [WITNESSED_SOURCES.machineConfiguration, machineRead],
  ] as const) {
    const member = byPath.get(source);
    const present = member !== undefined && member.type === 'file';
    if (!read.absent && !present) throw sourceRemoved(source, 'while the plan was made');
    if (read.absent && member !== undefined) throw sourceAppeared(source, 'while the plan was made');
  }

  const missing = [...found.missing];
  const { goals, registered } = planGoalRoutes(rootAbs, registryRead, found, missing);
  const warnings = [...found.warnings];
  const routed = new Set(goals.map((g) => g.route));
  const unregisteredGoalDirectories = found.goalDirectories
    .filter((d) => !registered.has(d) && !routed.has(`${LAYOUT.goalsDir}/${d}`))
    .sort();
  for (const d of unregisteredGoalDirectories)
    warnings.push({ code: 'goal_directory_unregistered', source_path: `${LAYOUT.goalsDir}/${d}` });

  return {
    root: rootAbs,
    outputDir,
    backupId,
    archiveName: archiveNameOf(backupId),
    manifestName: manifestNameOf(backupId),
    plannedAt: now.toISOString(),
    options: { include_automations: includeAutomations, include_skills: includeSkills },
    sources,
    registryRead,
    machineRead,
    goals,
    unregisteredGoalDirectories,
    projectCount: registryRead.absent ? 0 : registryRead.value.projects.length,
    members: found.members,
    missing,
    excluded: found.excluded,
    warnings,
  };
}

/** Goal ids the plan knows: registered Goals and directories under goals/. */
export const goalIdsOf = (p: BackupPlan): Set<string> =>
  new Set([...p.goals.map((g) => g.goal_id), ...p.unregisteredGoalDirectories]);

/** The Goal whose work database a member is, if it is one (the OWNERS table's goal-scoped store; a registry route is always goals/<goal_id>). */
export function workDbGoalOf(_p: BackupPlan, memberPath: string): string | undefined {
  const found = ownerOfMember(memberPath);
  return found?.owner === OWNERS.work ? (found.scope.goal_id ?? undefined) : undefined;
}

export interface CapacityRefusal {
  readonly code: string;
  readonly limit_name: BackupLimitName;
  readonly limit: number;
  readonly observed: number;
  readonly subject?: string;
}

/**
 * The §12 bounds a plan already breaks (members, paths, Goals, SQLite files, regular bytes).
 * Archive size, expansion and per-Goal history are only known while creating; create enforces them.
 */
export function planCapacityRefusals(p: BackupPlan): CapacityRefusal[] {
  const out: CapacityRefusal[] = [];
  const add = (limit: BackupLimitName, observed: number, subject?: string) =>
    out.push({
      code: CAPACITY_CODES[limit],
      limit_name: limit,
      limit: BACKUP_LIMITS[limit],
      observed,
      ...(subject !== undefined ? { subject } : {}),
    });
  // + the configuration checkpoint and the embedded manifest.
  const members = p.members.length + 2;
  if (members > BACKUP_LIMITS.members) add('members', members);
  const goals = goalIdsOf(p).size;
  if (goals > BACKUP_LIMITS.goals) add('goals', goals);
  const sqlite = p.members.filter((m) => m.sqlite).length;
  if (sqlite > BACKUP_LIMITS.sqliteFiles) add('sqliteFiles', sqlite);
  const bytes = p.members.reduce((n, m) => n + m.size_bytes, 0);
  if (bytes > BACKUP_LIMITS.regularFileBytes) add('regularFileBytes', bytes);
  for (const m of p.members) {
    const broken = pathLimitBroken(m.archive_path);
    if (broken) {
      add(broken.limit, broken.observed, m.path);
      break;
    }
  }
  return out;
}

export interface PlanSummary {
  readonly schema_version: 'loopx_state_backup_plan_v0';
  readonly dry_run: true;
  readonly backup_id: string;
  readonly archive_name: string;
  readonly manifest_name: string;
  readonly options: { readonly include_automations: boolean; readonly include_skills: boolean };
  readonly counts: {
    readonly members: number;
    readonly directories: number;
    readonly files: number;
    readonly sqlite_databases: number;
    readonly bytes: number;
    readonly goals: number;
    readonly missing: number;
    readonly excluded: number;
    readonly warnings: number;
  };
  readonly categories: Record<string, { files: number; directories: number; bytes: number }>;
  readonly goals: readonly PlannedGoal[];
  readonly unregistered_goal_directories: readonly string[];
  readonly sqlite_databases: ReadonlyArray<{ source: string; archive_path: string; size_bytes: number }>;
  readonly source_witnesses: ReadonlyArray<{
    owner: string;
    source: string;
    present: boolean;
    revision: string | null;
  }>;
  readonly missing: readonly MissingEntry[];
  readonly excluded: readonly ExcludedEntry[];
  readonly warnings: readonly BackupWarning[];
  readonly capacity: { readonly ok: boolean; readonly refusals: readonly CapacityRefusal[] };
}

/** The public view of a plan: counts, relative paths, digests — no absolute path. */
export function describePlan(p: BackupPlan): PlanSummary {
  const categories: Record<string, { files: number; directories: number; bytes: number }> = {};
  for (const m of p.members) {
    const c = (categories[m.category satisfies MemberCategory] ??= { files: 0, directories: 0, bytes: 0 });
    if (m.type === 'file') {
      c.files++;
      c.bytes += m.size_bytes;
    } else c.directories++;
  }
  const refusals = planCapacityRefusals(p);
  const files = p.members.filter((m) => m.type === 'file');
  return {
    schema_version: 'loopx_state_backup_plan_v0',
    dry_run: true,
    backup_id: p.backupId,
    archive_name: p.archiveName,
    manifest_name: p.manifestName,
    options: p.options,
    counts: {
      members: p.members.length,
      directories: p.members.length - files.length,
      files: files.length,
      sqlite_databases: files.filter((m) => m.sqlite).length,
      bytes: files.reduce((n, m) => n + m.size_bytes, 0),
      goals: goalIdsOf(p).size,
      missing: p.missing.length,
      excluded: p.excluded.length,
      warnings: p.warnings.length,
    },
    categories,
    goals: p.goals,
    unregistered_goal_directories: p.unregisteredGoalDirectories,
    sqlite_databases: files
      .filter((m) => m.sqlite)
      .map((m) => ({ source: m.path, archive_path: m.archive_path, size_bytes: m.size_bytes })),
    source_witnesses: [
      {
        owner: 'registry',
        source: WITNESSED_SOURCES.registry,
        present: !p.registryRead.absent,
        revision: p.registryRead.absent ? null : p.registryRead.revision,
      },
      {
        owner: 'config',
        source: WITNESSED_SOURCES.machineConfiguration,
        present: !p.machineRead.absent,
        revision: p.machineRead.absent ? null : p.machineRead.revision,
      },
    ],
    missing: p.missing,
    excluded: p.excluded,
    warnings: p.warnings,
    capacity: { ok: refusals.length === 0, refusals },
  };
}

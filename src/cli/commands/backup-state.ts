/**
 * `loopx backup-state [--output-dir O] [--backup-id ID] [--include-automations] [--include-skills]
 * [--profile online|quiescent|crash-consistent] [--require-profile] [--quiesce-timeout S] [--format v1|v0] [--execute]`
 * (`--root` and `--json` are the global options). Without --execute it prints the plan and writes
 * nothing; with --execute it creates and publishes `<ID>.tar.gz` and `<ID>.manifest.json` in O.
 * Output carries counts, relative paths, digests and codes — never an absolute path. A progress bar
 * is drawn on stderr only when stderr is a terminal.
 */
import { InvalidArgumentError, type Command } from 'commander';
import { usageError } from '../../core/index.js';
import type {
  BackupPlacement,
  BackupFormat,
  BackupProgress,
  BackupResult,
  CaptureProfile,
  PlanSummary,
  RecoverySetCapture,
} from '../../runtime/index.js';
import { emit, resolveRoot, runtime, type GlobalOptions, type Output, type Runtime } from '../context.js';
import { REPO_OPTION_HELP } from './repo.js';
import { parseCaptureProfile } from '../runtime-facts.js';
import { register as registerVerify } from './backup-verify.js';
import { register as registerWorkspace } from './backup-workspace.js';
import { mib, progressBar } from '../progress.js';

interface BackupStateOptions {
  outputDir?: string;
  backupId?: string;
  includeAutomations?: boolean;
  includeSkills?: boolean;
  execute?: boolean;
  profile?: CaptureProfile;
  requireProfile?: boolean;
  quiesceTimeout?: number;
  format?: BackupFormat;
  repo?: string;
  encrypt?: boolean;
  recipient?: string[];
}

const profileOption = (v: string): CaptureProfile => {
  const p = parseCaptureProfile(v);
  if (p === undefined) throw new InvalidArgumentError('expected online, quiescent or crash-consistent');
  return p;
};
const formatOption = (v: string): BackupFormat => {
  if (v !== 'v0' && v !== 'v1') throw new InvalidArgumentError('expected v1 or v0');
  return v;
};
const secondsOption = (v: string): number => {
  if (!/^\d{1,6}(\.\d{1,3})?$/.test(v)) throw new InvalidArgumentError('expected seconds, e.g. 30 or 2.5');
  return Math.round(Number(v) * 1000);
};

/** The create's progress as a bar on a terminal. */
function createProgress(stream: NodeJS.WriteStream): { update(p: BackupProgress): void; end(): void } {
  const bar = progressBar(stream);
  return {
    update(p) {
      const fraction =
        p.bytes_total > 0 ? p.bytes_done / p.bytes_total : p.members_total > 0 ? p.members_done / p.members_total : 1;
      const label =
        p.phase === 'capture'
          ? `${p.members_done}/${p.members_total} members  ${mib(p.bytes_done)}/${mib(p.bytes_total)}`
          : p.phase;
      bar.update(fraction, label, p.phase !== 'capture');
    },
    end: () => bar.end(),
  };
}

export function executeSummary(r: BackupResult, placement: BackupPlacement) {
  const m = r.manifest_doc;
  const files = m.members.filter((x) => x.type === 'file').length;
  return {
    ok: true as const,
    dry_run: false as const,
    backup_id: r.backup_id,
    archive: r.archive,
    manifest: r.manifest,
    capture: m.capture,
    counts: {
      members: m.execution.member_count,
      files,
      directories: m.members.length - files,
      sqlite_snapshots: m.execution.sqlite_snapshots.length,
      bytes: m.summary.logical_source_bytes,
      goals: m.goals.length,
      missing: m.missing.length,
      warnings: m.warnings.length,
    },
    configuration_checkpoint_sha256: m.configuration_checkpoint.sha256,
    placement,
    goals: m.goals,
    ...(m.components ? { components: componentSummary(m) } : {}),
  };
}

/** v1: the set's profile and each component's id, owner, state, achieved profile and downgrades (no Goal id, no path). */
function componentSummary(m: BackupResult['manifest_doc']) {
  const set = m.capture as RecoverySetCapture;
  return {
    requested_profile: set.requested_profile,
    achieved_profile: set.achieved_profile,
    moved: set.skew_inventory.filter((x) => x.moved).length,
    downgrades: set.downgrades.map((d) => ({
      code: d.code,
      component_id: d.component_id,
      severity: d.severity,
      next_action: d.next_action,
    })),
    list: (m.components ?? []).map((c) => ({
      component_id: c.component_id,
      owner_kind: c.owner_kind,
      logical_scope: c.logical_scope,
      state: c.state,
      achieved_profile: c.achieved_profile,
      moved: c.skew.moved_during_capture || c.skew.moved_before_set_end,
      cursor_delta: c.skew.cursor_delta,
      downgrades: [...c.downgrades],
    })),
  };
}

function printPlan(d: PlanSummary, out: Output, o: BackupStateOptions, { CAPTURE_FACTS }: Runtime): void {
  out.line(`backup-state plan ${d.backup_id} (dry run: nothing was written; add --execute to create it)`);
  out.line(
    `  members: ${d.counts.members} (${d.counts.directories} directories, ${d.counts.files} files, ${mib(d.counts.bytes)}), ${d.counts.sqlite_databases} SQLite databases (online snapshots)`,
  );
  out.line('  by category:');
  for (const [name, c] of Object.entries(d.categories))
    out.line(
      `    ${name.padEnd(16)} ${String(c.files).padStart(6)} files ${String(c.directories).padStart(5)} dirs ${mib(c.bytes).padStart(11)}`,
    );
  const unregistered = d.unregistered_goal_directories.length;
  out.line(
    `  Goals: ${d.goals.length} registered${unregistered > 0 ? `, ${unregistered} more ${unregistered === 1 ? 'directory' : 'directories'} under goals/ not in the registry` : ''}`,
  );
  for (const g of d.goals)
    out.line(`    ${g.goal_id}  ${g.goal_instance_id ?? '-'}  ${g.route ?? '(outside the root)'}  ${g.route_status}`);
  for (const w of d.source_witnesses)
    out.line(`  ${w.owner}: ${w.source} ${w.present ? `read ${w.revision}` : 'absent'}`);
  if (d.missing.length > 0) {
    const reasons = new Map<string, number>();
    for (const m of d.missing) reasons.set(m.reason, (reasons.get(m.reason) ?? 0) + 1);
    out.line(`  missing: ${d.missing.length} (${[...reasons].map(([r, n]) => `${r}: ${n}`).join(', ')})`);
  }
  if (d.excluded.length > 0)
    out.line(`  excluded: ${d.excluded.map((x) => `${x.source_path} (${x.reason})`).join(', ')}`);
  if (o.format === 'v0')
    out.line(
      `  capture: ${CAPTURE_FACTS.profile} — SQLite ${CAPTURE_FACTS.sqlite}, files ${CAPTURE_FACTS.files}, no cross-owner point in time`,
    );
  else
    out.line(
      `  capture: ${(o.profile ?? 'online').replace('_', '-')} profile requested — each owner's state captured through its owner; the profile achieved is recorded when the backup is created`,
    );
  if (d.capacity.ok) out.line(`  would write ${d.archive_name} and ${d.manifest_name} in the output directory`);
  else for (const r of d.capacity.refusals) out.line(`  create would refuse: ${r.code} (${r.observed} > ${r.limit})`);
}

function printCreated(
  d: ReturnType<typeof executeSummary>,
  out: Output,
  rt: Runtime,
  repository?: string,
  encrypted = false,
): void {
  const privacy = encrypted ? 'encrypted' : 'private, not encrypted';
  out.line(
    `created backup ${d.backup_id} in ${repository === undefined ? 'the output directory' : `the repository ${repository}`}:`,
  );
  out.line(`  ${d.archive.name}  ${mib(d.archive.size_bytes)}  sha256 ${d.archive.sha256}`);
  out.line(`  ${d.manifest.name}  sha256 ${d.manifest.sha256}`);
  out.line(
    `  ${d.counts.members} members (${d.counts.files} files, ${d.counts.directories} directories, ${mib(d.counts.bytes)}), ${d.counts.sqlite_snapshots} SQLite snapshots (integrity ok), ${d.counts.goals} Goals`,
  );
  out.line(`  configuration checkpoint sha256 ${d.configuration_checkpoint_sha256}`);
  if (d.counts.missing > 0 || d.counts.warnings > 0)
    out.line(`  missing: ${d.counts.missing}, warnings: ${d.counts.warnings} (see the manifest)`);
  const c = d.components;
  if (c === undefined) {
    out.line(`  capture: ${d.capture.profile} — no cross-owner point in time; ${privacy}`);
    printPlacement(d.placement, out, rt, repository !== undefined);
    return;
  }
  const held = c.list.filter((x) => x.state === 'unreadable' || x.state === 'missing').length;
  out.line(
    `  capture profile: ${c.achieved_profile}${c.achieved_profile === c.requested_profile ? '' : ` (requested ${c.requested_profile})`}; ${privacy}`,
  );
  out.line(
    `  ${c.list.length} components (${c.list.filter((x) => x.state === 'absent').length} absent, ${held} held), ${c.moved} moved while captured`,
  );
  for (const x of c.downgrades)
    out.line(
      `  ${x.severity}: ${x.code}${x.component_id === null ? '' : ` (${x.component_id})`} — what to do: ${x.next_action}`,
    );
  printPlacement(d.placement, out, rt, repository !== undefined);
}

/** How the operator keeps the next backup of a repository elsewhere (one runnable command). */
const REPOSITORY_ELSEWHERE = 'keep the next one elsewhere (another disk, or S3): loopx repo init --repo DIR';

function printPlacement(
  p: BackupPlacement,
  out: Output,
  { placementWarning, ELSEWHERE_ACTION }: Runtime,
  inRepository: boolean,
): void {
  const warning = placementWarning(p);
  if (warning === undefined) return;
  out.line(`  warning: ${warning}`);
  out.line(`  ${inRepository ? REPOSITORY_ELSEWHERE : ELSEWHERE_ACTION}`);
}

/** `backup-state [--execute] [--repo R | --output-dir D]`: the plan, or the backup published locally or into a repository. */
async function backUp(o: BackupStateOptions, g: GlobalOptions): Promise<void> {
  const rt = await runtime();
  const planOptions = {
    backupId: o.backupId,
    includeAutomations: o.includeAutomations ?? false,
    includeSkills: o.includeSkills ?? false,
  };
  if ((o.encrypt === true || o.recipient !== undefined) && (o.repo === undefined || o.encrypt !== true))
    throw usageError(
      'usage_encrypt_needs_repo',
      'Encryption is a profile of repositories: give --repo, --encrypt and at least one --recipient together.',
      'see the options: loopx backup-state --help',
    );
  if (o.repo !== undefined && o.outputDir !== undefined)
    throw usageError(
      'usage_repo_with_output_dir',
      'A backup goes to --repo or to --output-dir, not both.',
      'run it again with one of them: loopx backup-state --help',
    );
  const p = rt.planBackup(resolveRoot(g), { ...planOptions, outputDir: o.outputDir });
  if (!o.execute) {
    emit(g, rt.describePlan(p), (d, out) => printPlan(d, out, o, rt));
    return;
  }
  const bar = process.stderr.isTTY ? createProgress(process.stderr) : undefined;
  const make = (plan: typeof p) =>
    rt.createBackupWithProfile(plan, {
      ...(bar ? { onProgress: (x: BackupProgress) => bar.update(x) } : {}),
      ...(o.format ? { format: o.format } : {}),
      ...(o.profile ? { profile: o.profile } : {}),
      ...(o.requireProfile ? { requireProfile: true } : {}),
      ...(o.quiesceTimeout !== undefined ? { quiesceTimeoutMs: o.quiesceTimeout } : {}),
    });
  try {
    if (o.repo !== undefined) {
      const at = { root: resolveRoot(g), ...(g.authorityDir !== undefined ? { authorityDir: g.authorityDir } : {}) };
      const done = await rt.backupToRepository(at, o.repo, planOptions, make, {
        ...(o.encrypt ? { encryptFor: o.recipient ?? [] } : {}),
      });
      bar?.end();
      const summary = {
        ...executeSummary(done.result, done.placement),
        repository: done.repository,
        entry: done.entry,
      };
      emit(g, summary, (d, out) => printCreated(d, out, rt, d.repository.location, d.entry.encrypted));
      return;
    }
    const result: BackupResult = await make(p);
    bar?.end();
    emit(g, executeSummary(result, rt.backupPlacement(p.root, p.outputDir)), (d, out) => printCreated(d, out, rt));
  } finally {
    bar?.end();
  }
}

export function register(program: Command, globals: () => GlobalOptions): void {
  const backupState = program
    .command('backup-state')
    .description('plan a private backup of the runtime root (writes nothing), or create it with --execute')
    .option('--output-dir <dir>', 'where the archive and manifest are published (default: <root>/backups)')
    .option('--backup-id <id>', 'backup id (default: UTC time as YYYYMMDDTHHMMSSZ)')
    .option('--include-automations', 'also capture automations/')
    .option('--include-skills', 'also capture skills/')
    .option(
      '--profile <profile>',
      'capture consistency to aim for: online (default), quiescent (closes admission and drains writers) or crash-consistent (the root must be stopped)',
      profileOption,
    )
    .option('--require-profile', 'refuse publication unless the backup achieves --profile')
    .option(
      '--quiesce-timeout <seconds>',
      'quiescent: how long to wait for running work to drain (default 30)',
      secondsOption,
    )
    .option(
      '--format <format>',
      'manifest revision: v1 (default) declares components and capture profiles; v0 is the legacy manifest',
      formatOption,
    )
    .option('--repo <url>', `publish into a repository instead of --output-dir: ${REPO_OPTION_HELP}`)
    .option('--encrypt', 'with --repo: seal the backup for each --recipient (never published in plaintext instead)')
    .option(
      '--recipient <recipient>',
      'who can open it: a public key (loopx-x25519-pub:…) or a reference to a passphrase or key (env:NAME, file:PATH); repeatable',
      (v: string, all: string[] = []) => [...all, v],
    )
    .option('--execute', 'create and publish the backup (never overwrites)')
    .action((o: BackupStateOptions) => backUp(o, globals()));
  backupState.enablePositionalOptions();
  registerVerify(backupState, globals);
  registerWorkspace(backupState, globals);
}

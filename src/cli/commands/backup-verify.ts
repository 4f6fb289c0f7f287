/**
 * `loopx backup-state verify --archive A --manifest M --destination D [--execute]` and
 * `loopx backup-state audit show D` (RFC complete-state-recovery §5, M1). D must lie outside the
 * runtime root and the run authority this invocation would use (--root / --authority-dir or their
 * defaults), outside any other runtime root and any recovery workspace. Without --execute,
 * verify prints the plan and creates nothing; with it, it creates only D (0700) holding the inert
 * workspace and the content-addressed audit, and prints the audit's PUBLIC summary — counts,
 * component ids, digests and codes, never a path, member name or payload. A held audit is a
 * successful verification (exit 0). `audit show` re-checks the stored audit's content address and
 * prints its public summary (human, or --json); only --private writes the private audit's exact bytes.
 */
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { usageError } from '../../core/index.js';
import type { PublicAuditSummary, VerifyPlan, VerifyProgress } from '../../runtime/index.js';
import { emit, resolveRoot, runtime, type GlobalOptions, type Output, type Runtime } from '../context.js';
import { REPO_OPTION_HELP, repoOf } from './repo.js';
import { onStopSignal } from '../signals.js';
import { mib, progressBar } from '../progress.js';

interface VerifyFlags {
  archive?: string;
  manifest?: string;
  destination: string;
  execute?: boolean;
  repo?: string;
  backupId?: string;
  spool?: string;
  key?: string;
}

/** A pair named by files, or a backup of a repository: exactly one of the two. */
function sourceOf(
  flags: VerifyFlags,
): { files: { archive: string; manifest: string } } | { repo: string; backupId: string } {
  const files = flags.archive !== undefined || flags.manifest !== undefined;
  const repo = flags.repo !== undefined || flags.backupId !== undefined;
  if (files && !repo && flags.archive !== undefined && flags.manifest !== undefined)
    return { files: { archive: flags.archive, manifest: flags.manifest } };
  if (repo && !files && flags.backupId !== undefined) return { repo: repoOf(flags), backupId: flags.backupId };
  throw usageError(
    'usage_verify_source',
    'Name the backup by --archive and --manifest, or by --backup-id in a repository (--repo), not both.',
    'see its options: loopx backup-state verify --help',
  );
}

const LABEL = {
  recovered_readable: 'recovered and readable',
  historical_only: 'historical only',
  unknown_unrecoverable: 'unknown or unrecoverable',
} as const;

function printPlan(p: VerifyPlan, out: Output): void {
  out.line(`verify plan for backup ${p.backup_id} (dry run: nothing was created; add --execute to extract and audit)`);
  out.line(`  archive ${mib(p.archive_bytes)} sha256 ${p.archive_sha256} — matches the manifest`);
  out.line(
    `  ${p.members} members, ${mib(p.regular_file_bytes)} of regular files, ${mib(p.expanded_bytes)} expanded; ${p.goals} Goals, ${p.sqlite_files} SQLite databases`,
  );
  out.line(`  destination: new, free space ${mib(p.free_bytes)} (needs ${mib(p.required_free_bytes)})`);
  out.line(`  would create: ${p.would_create.join(', ')} inside the destination`);
  out.line('  verification grants no execution authority');
}

export function printSummary(s: PublicAuditSummary, out: Output): void {
  out.line(`recovery audit ${s.recovery_id}`);
  out.line(`  backup ${s.backup.backup_id} (${s.backup.schema_version}), archive sha256 ${s.backup.archive_sha256}`);
  const repo = s.backup.repository;
  if (repo !== undefined)
    out.line(`  from repository ${repo.repository_id}: ${repo.encrypted ? 'encrypted' : 'NOT encrypted'} there`);
  out.line(`  status: ${s.phase} (${s.operator_state}); workspace inert and unregistered`);
  const cap = s.capture;
  if (cap.requested_profile !== null) {
    const profile = (p: string): string => p.replace('_', '-');
    out.line(
      `  capture profile: ${profile(cap.achieved_profile)}${cap.achieved_profile === cap.requested_profile ? '' : ` (requested ${profile(cap.requested_profile)})`}`,
    );
    const goals = s.activation?.eligible_scopes.length ?? 0;
    out.line(`  Goals captured whole, at one point in time: ${goals}${goals === 0 ? ' (see the holds below)' : ''}`);
  }
  const a = s.counts.assets;
  out.line(
    `  assets: ${a.recovered_readable} recovered and readable, ${a.historical_only} historical only, ${a.unknown_unrecoverable} unknown or unrecoverable`,
  );
  for (const c of s.components)
    out.line(
      `    ${c.component_id.padEnd(22)} ${c.owner_kind.padEnd(9)} ${LABEL[c.classification].padEnd(25)} next: ${c.next_action}`,
    );
  const held = s.findings.filter((f) => f.severity !== 'warning');
  if (held.length > 0) out.line('  holds and errors:');
  for (const f of held)
    out.line(`    ${f.code} (${f.owner}${f.component ? `, ${f.component}` : ''}) — ${f.next_action}`);
  const m = s.measurements;
  out.line(
    `  measured: archive ${mib(m.archive_bytes)}, regular files ${mib(m.regular_file_bytes)}; archive ${m.durations_ms.archive_processing} ms, owner read ${m.durations_ms.owner_read} ms`,
  );
  out.line(`  next: ${s.next_action}`);
  out.line('  execution authority granted: no — verification never grants it');
}

/** `verify --repo R --backup-id B`: fetched by the repository, then the same plan or verification as for files. */
async function fromRepository(
  g: GlobalOptions,
  source: { repo: string; backupId: string },
  inputs: { destination: string; protect: { liveRoot: string; authorityDir: string } },
  o: { execute: boolean; spool?: string; key?: string },
  verifyFromRepository: Runtime['verifyFromRepository'],
): Promise<void> {
  const bar = o.execute && process.stderr.isTTY ? progressBar(process.stderr) : undefined;
  const onProgress = (p: VerifyProgress) =>
    bar?.update(p.total > 0 ? p.done / p.total : 0, p.step, p.step !== 'extract');
  const stop = onStopSignal();
  try {
    const done = await verifyFromRepository(source.repo, source.backupId, inputs, {
      execute: o.execute,
      signal: stop.signal,
      ...(o.spool !== undefined ? { spool: resolve(o.spool) } : {}),
      ...(o.key !== undefined ? { key: o.key } : {}),
      ...(bar ? { onProgress } : {}),
    });
    bar?.end();
    if (done.executed) emit(g, done.outcome.summary, printSummary);
    else emit(g, done.plan, printPlan);
  } finally {
    bar?.end();
    stop.dispose();
  }
}

export function register(backupState: Command, globals: () => GlobalOptions): void {
  backupState
    .command('verify')
    .description('verify a backup; with --execute extract it into a NEW inert workspace and write its audit')
    .option('--archive <file>', 'the backup archive (<id>.tar.gz)')
    .option('--manifest <file>', 'its external manifest (<id>.manifest.json)')
    .option('--repo <url>', `or a repository's backup (with --backup-id): ${REPO_OPTION_HELP}`)
    .option('--backup-id <id>', "the repository's backup to verify")
    .option(
      '--spool <dir>',
      'copy the backup once into a private spool here and verify that copy (default: read it twice from the repository, nothing written locally)',
    )
    .option('--key <reference>', "an encrypted backup's key or passphrase, by reference: env:NAME or file:PATH (0600)")
    .requiredOption('--destination <dir>', 'a new directory to create (must not exist)')
    .option('--execute', 'extract, verify owners and write the audit (otherwise: plan only)')
    .action(async (flags: VerifyFlags) => {
      const g = globals();
      // Global options are parsed anywhere on the line, so the parent \`backup-state\` (whose own
      // --execute means "create") sees this subcommand's flags first: take --execute from it, and
      // refuse the create-only flags instead of ignoring them.
      const parent = backupState.opts<Record<string, unknown>>();
      const misplaced = [
        'outputDir',
        'includeAutomations',
        'includeSkills',
        ...((flags.repo ?? parent.repo) === undefined ? ['backupId'] : []),
      ].filter((k) => parent[k] !== undefined);
      if (misplaced.length > 0)
        throw usageError(
          'usage_invalid_option',
          'Those backup-state create options do not apply to verify.',
          'see its options: loopx backup-state verify --help',
        );
      const o = {
        ...flags,
        backupId: flags.backupId ?? (parent.backupId as string | undefined),
        repo: flags.repo ?? (parent.repo as string | undefined),
        execute: flags.execute ?? parent.execute === true,
      };
      const source = sourceOf(o);
      const { defaultAuthorityDir, executeVerify, planVerify, verifyFromRepository } = await runtime();
      // The live root and the run authority this invocation would use: never a place to verify into.
      const protect = {
        liveRoot: resolveRoot(g),
        authorityDir: g.authorityDir !== undefined ? resolve(g.authorityDir) : defaultAuthorityDir(),
      };
      if ('repo' in source) {
        await fromRepository(g, source, { destination: o.destination, protect }, o, verifyFromRepository);
        return;
      }
      const inputs = { ...source.files, destination: o.destination, protect };
      if (!o.execute) {
        emit(g, await planVerify(inputs), printPlan);
        return;
      }
      const bar = process.stderr.isTTY ? progressBar(process.stderr) : undefined;
      const onProgress = (p: VerifyProgress) =>
        bar?.update(p.total > 0 ? p.done / p.total : 0, p.step, p.step !== 'extract');
      // Ctrl-C or a TERM stops the run cleanly: the worker is killed and D removed, as on a refusal.
      const stop = onStopSignal();
      try {
        const outcome = await executeVerify(inputs, { signal: stop.signal, ...(bar ? { onProgress } : {}) });
        bar?.end();
        emit(g, outcome.summary, printSummary);
      } finally {
        bar?.end();
        stop.dispose();
      }
    });

  registerAudit(backupState, globals);
}

/** `backup-state audit show D [--private]`. */
function registerAudit(backupState: Command, globals: () => GlobalOptions): void {
  const audit = backupState.command('audit').description('read recovery audits back');
  audit
    .command('show <destination>')
    .description(
      "print a stored audit's public summary (--json: the document); --private writes the private audit's exact bytes",
    )
    .option(
      '--private',
      'write the private audit file byte for byte (member names, Goal ids) after re-checking its content address',
    )
    .action(async (destination: string, o: { private?: boolean }) => {
      const g = globals();
      const { showAudit, publicSummary } = await runtime();
      const { bytes, audit: doc } = showAudit(destination);
      if (o.private) {
        process.stdout.write(bytes);
        return;
      }
      emit(g, publicSummary(doc), printSummary);
    });
}

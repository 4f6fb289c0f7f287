/**
 * `loopx repo init|ls|check --repo R` — backup repositories: a directory on another disk or an
 * S3-compatible bucket (docs/repositories.md). `--repo` defaults to $LOOPX_REPOSITORY; it is
 * carried into the commands a refusal's next action names, as --root is.
 */
import type { Command } from 'commander';
import { usageError } from '../../core/index.js';
import { InvalidArgumentError } from 'commander';
import type {
  BackupEntry,
  ForgetReport,
  KeyChangeReport,
  PruneReport,
  RepositoryCheck,
  RepositoryListing,
} from '../../runtime/index.js';
import { emit, exitAfterOutput, runtime, type GlobalOptions, type Output } from '../context.js';
import { mib } from '../progress.js';

export interface RepoFlags {
  repo?: string;
}

export const REPO_OPTION_HELP =
  'the repository: a directory or s3://BUCKET/PREFIX?endpoint=URL&region=R&path_style=true&credentials=env:NAME (default: $LOOPX_REPOSITORY)';

/** The repository an invocation names: --repo, else LOOPX_REPOSITORY; a usage error when neither is set. */
export function repoOf(flags: RepoFlags): string {
  const url = flags.repo ?? process.env.LOOPX_REPOSITORY;
  if (url === undefined || url === '')
    throw usageError(
      'usage_repo_missing',
      'Name the repository with --repo, or set LOOPX_REPOSITORY.',
      'see how to name one: loopx repo --help',
    );
  return url;
}

/** How long ago `iso` was, roughly, as an operator reads it. */
export function age(iso: string, now = Date.now()): string {
  const s = Math.max(0, Math.round((now - Date.parse(iso)) / 1000));
  if (s < 120) return `${s} s`;
  if (s < 7200) return `${Math.round(s / 60)} min`;
  if (s < 172800) return `${Math.round(s / 3600)} h`;
  return `${Math.round(s / 86400)} days`;
}

const archiveBytes = (b: BackupEntry): number => b.objects.find((o) => o.role === 'archive')?.size_bytes ?? 0;

function printListing(d: RepositoryListing, out: Output): void {
  out.line(`repository ${d.repository.id} at ${d.repository.location}: ${d.backups.length} backup(s)`);
  for (const b of [...d.backups].reverse())
    out.line(
      `  ${b.backup_id.padEnd(20)} captured ${age(b.created_at)} ago${d.verified[b.backup_id] ? `, verified ${age(d.verified[b.backup_id]!)} ago` : ''}  ${mib(archiveBytes(b)).padStart(10)}  ${b.encrypted ? 'encrypted' : 'NOT encrypted'}  ${b.capture_profile ?? 'legacy'} profile  root ${b.root_id ?? 'unknown'}`,
    );
  if (d.incomplete.length > 0)
    out.line(`  not backups (publication did not finish): ${d.incomplete.join(', ')} — loopx repo prune removes them`);
  if (d.unreadable.length > 0) out.line(`  unreadable entries: ${d.unreadable.join(', ')}`);
  if (d.backups.length > 0)
    out.hint(`verify one: loopx backup-state verify --backup-id ${d.backups.at(-1)!.backup_id} --destination DIR`);
}

function printCheck(d: RepositoryCheck & { repository: RepositoryListing['repository'] }, out: Output): void {
  out.line(
    `repository ${d.repository.id} at ${d.repository.location}: ${d.backups} backup(s) checked${d.read_data ? `, ${mib(d.bytes_read)} read` : ' (sizes; add --read-data for digests)'}`,
  );
  for (const f of d.findings)
    out.line(`  ${f.severity}: ${f.code} (${f.backup_id}${f.object ? `, ${f.object}` : ''}) — ${f.next_action}`);
  out.line(d.ok ? '  ok: every backup is whole' : '  NOT ok: see the errors above');
}

const count = (v: string): number => {
  if (!/^\d{1,6}$/.test(v)) throw new InvalidArgumentError('expected a whole number');
  return Number(v);
};

interface ForgetFlags extends RepoFlags {
  keepLast?: number;
  keepHourly?: number;
  keepDaily?: number;
  keepWeekly?: number;
  keepMonthly?: number;
  dryRun?: boolean;
}

type Described = { repository: RepositoryListing['repository'] };

function printForget(d: ForgetReport & Described, out: Output): void {
  out.line(
    `${d.dry_run ? 'would forget' : 'forgot'} ${d.forget.length} backup(s), ${d.dry_run ? 'would keep' : 'kept'} ${d.keep.length} in ${d.repository.location}`,
  );
  for (const k of d.keep)
    out.line(
      `  keep   ${k.backup_id.padEnd(20)} ${k.created_at}  ${k.reasons.join(', ')}${k.pins ? ` (${k.pins.join(', ')})` : ''}`,
    );
  for (const f of d.forget) out.line(`  forget ${f.backup_id.padEnd(20)} ${f.created_at}`);
  if (d.dry_run) out.line('  dry run: nothing was changed');
  else if (d.forget.length > 0) out.hint('their data goes with the next prune: loopx repo prune');
}

function printPrune(d: PruneReport & Described, out: Output): void {
  const bytes = d.removed.reduce((n, x) => n + x.bytes, 0);
  out.line(
    `${d.dry_run ? 'would remove' : 'removed'} ${d.removed.length} non-backup(s), ${mib(bytes)}, from ${d.repository.location}`,
  );
  for (const x of d.removed) out.line(`  ${x.backup_id}: ${x.objects} object(s), ${mib(x.bytes)}`);
  if (d.too_recent.length > 0)
    out.line(
      `  left alone, younger than ${d.grace_seconds} s (a publication may be running): ${d.too_recent.join(', ')}`,
    );
}

const many = (v: string, all: string[] = []) => [...all, v];

function printKeys(d: KeyChangeReport & Described, out: Output): void {
  const changed = d.backups.filter((b) => b.outcome === 'changed').length;
  out.line(
    `${d.execute ? 're-wrapped' : 'would re-wrap'} the key of ${changed} encrypted backup(s) in ${d.repository.location}; no data is re-encrypted`,
  );
  for (const b of d.backups)
    out.line(
      `  ${b.backup_id.padEnd(20)} ${b.outcome.replace('_', ' ').padEnd(10)} generation ${b.generation}: ${b.recipients.x25519.length} key(s), ${b.recipients.passphrases} passphrase(s)`,
    );
  if (d.backups.some((b) => b.outcome === 'not_opened'))
    out.line('  not opened: the --key given does not open these; nothing was added to them');
  if (!d.execute) out.line('  preview: nothing was changed; add --execute to apply');
}

function registerKeyChanges(key: Command, globals: () => GlobalOptions): void {
  const run = async (o: RepoFlags & { add?: string[]; remove?: string[]; key?: string; execute?: boolean }) => {
    const g = globals();
    const change = { add: o.add ?? [], remove: o.remove ?? [], ...(o.key !== undefined ? { key: o.key } : {}) };
    const rt = await runtime();
    emit(g, await rt.changeRepositoryKeys(repoOf(o), change, { execute: o.execute === true }), printKeys);
  };
  const keyHelp = 'a key that opens the backups now, by reference (env:NAME, file:PATH): needed to add a recipient';
  key
    .command('add')
    .description("wrap every encrypted backup's data key for another recipient too (no data is re-encrypted)")
    .option('--repo <url>', REPO_OPTION_HELP)
    .requiredOption(
      '--recipient <recipient>',
      'the recipient to add (a public key, or a passphrase by reference); repeatable',
      many,
    )
    .requiredOption('--key <reference>', keyHelp)
    .option('--execute', 'apply (otherwise: preview)')
    .action((o: RepoFlags & { recipient: string[]; key: string; execute?: boolean }) =>
      run({ ...o, add: o.recipient }),
    );
  key
    .command('remove')
    .description(
      'stop a recipient opening the backups: its wrapped keys are dropped (refused if a backup would have none left)',
    )
    .option('--repo <url>', REPO_OPTION_HELP)
    .requiredOption(
      '--recipient <recipient>',
      'the recipient to remove: a public key, its fingerprint, or the key or passphrase by reference; repeatable',
      many,
    )
    .option('--execute', 'apply (otherwise: preview, naming the backups it would leave unreadable)')
    .action((o: RepoFlags & { recipient: string[]; execute?: boolean }) => run({ ...o, remove: o.recipient }));
  key
    .command('rotate')
    .description('add the new recipients and remove the old ones in one new key generation of every encrypted backup')
    .option('--repo <url>', REPO_OPTION_HELP)
    .requiredOption('--add <recipient>', 'a recipient to add; repeatable', many)
    .requiredOption('--remove <recipient>', 'a recipient to remove; repeatable', many)
    .requiredOption('--key <reference>', keyHelp)
    .option('--execute', 'apply (otherwise: preview)')
    .action(run);
}

function registerMaintenance(repo: Command, globals: () => GlobalOptions): void {
  repo
    .command('forget')
    .description(
      "apply a retention policy: forget the backups it lets go (never a root's newest verified one, never a pinned one)",
    )
    .option('--repo <url>', REPO_OPTION_HELP)
    .option('--keep-last <n>', 'keep the n newest backups of each root', count)
    .option('--keep-hourly <n>', 'keep the newest backup of each of the last n hours that have one (UTC)', count)
    .option('--keep-daily <n>', 'keep the newest backup of each of the last n days that have one (UTC)', count)
    .option('--keep-weekly <n>', 'keep the newest backup of each of the last n ISO weeks that have one', count)
    .option('--keep-monthly <n>', 'keep the newest backup of each of the last n months that have one (UTC)', count)
    .option('--dry-run', 'say what would be forgotten and why, and change nothing')
    .action(async (o: ForgetFlags) => {
      const g = globals();
      const policy = {
        ...(o.keepLast !== undefined ? { keepLast: o.keepLast } : {}),
        ...(o.keepHourly !== undefined ? { keepHourly: o.keepHourly } : {}),
        ...(o.keepDaily !== undefined ? { keepDaily: o.keepDaily } : {}),
        ...(o.keepWeekly !== undefined ? { keepWeekly: o.keepWeekly } : {}),
        ...(o.keepMonthly !== undefined ? { keepMonthly: o.keepMonthly } : {}),
      };
      const rt = await runtime();
      emit(g, await rt.forgetInRepository(repoOf(o), policy, { dryRun: o.dryRun === true }), printForget);
    });
  repo
    .command('prune')
    .description(
      'remove what is not a backup: forgotten backups and interrupted publications older than the grace period',
    )
    .option('--repo <url>', REPO_OPTION_HELP)
    .option('--grace <seconds>', 'leave objects younger than this alone (default 21600: 6 hours)', count)
    .option('--dry-run', 'say what would be removed, and remove nothing')
    .action(async (o: RepoFlags & { grace?: number; dryRun?: boolean }) => {
      const g = globals();
      const rt = await runtime();
      const options = { dryRun: o.dryRun === true, ...(o.grace !== undefined ? { graceMs: o.grace * 1000 } : {}) };
      emit(g, await rt.pruneRepository(repoOf(o), options), printPrune);
    });
}

export function register(program: Command, globals: () => GlobalOptions): void {
  const repo = program
    .command('repo')
    .description('backup repositories: another disk or an S3-compatible bucket (init, ls, check, forget, prune, key)');
  registerMaintenance(repo, globals);
  repo
    .command('init')
    .description('create a repository (the storage must honour conditional writes; it is probed)')
    .option('--repo <url>', REPO_OPTION_HELP)
    .option('--encrypt', 'keep only encrypted backups in it (a plaintext backup is refused)')
    .action(async (o: RepoFlags & { encrypt?: boolean }) => {
      const g = globals();
      const r = await (await runtime()).initRepository(repoOf(o), { encrypt: o.encrypt === true });
      emit(g, { repository: r }, (d, out) => {
        out.line(`created repository ${d.repository.id} at ${d.repository.location} (${d.repository.format})`);
        if (d.repository.encryption === 'required') out.line('  it keeps only encrypted backups');
        out.line('  conditional writes are honoured: a published backup is never overwritten');
        out.hint('back up into it: loopx backup-state --execute');
      });
    });
  const key = repo.command('key').description('the keys of encrypted backups (new, add, remove, rotate)');
  registerKeyChanges(key, globals);
  key
    .command('new')
    .description('make an X25519 key: the private key goes to a new 0600 file, the public recipient is printed')
    .requiredOption('--out <file>', 'a new file for the private key (never overwritten)')
    .action(async (o: { out: string }) => {
      const g = globals();
      const made = await (await runtime()).newRepositoryKey(o.out);
      emit(g, made, (d, out) => {
        out.line(`recipient ${d.recipient}`);
        out.line('  the private key is in the file you named (0600); keep a copy away from the backups it opens');
        out.hint('encrypt a backup for it: loopx backup-state --execute --encrypt --recipient RECIPIENT');
      });
    });
  repo
    .command('ls')
    .description("list a repository's backups (age, size, encrypted or not)")
    .option('--repo <url>', REPO_OPTION_HELP)
    .action(async (o: RepoFlags) => {
      const g = globals();
      emit(g, await (await runtime()).listRepository(repoOf(o)), printListing);
    });
  repo
    .command('check')
    .description("check that every backup's objects are there (--read-data: and match their digests)")
    .option('--repo <url>', REPO_OPTION_HELP)
    .option('--read-data', 'read every object back and compare its SHA-256')
    .action(async (o: RepoFlags & { readData?: boolean }) => {
      const g = globals();
      const d = await (await runtime()).checkRepository(repoOf(o), { readData: o.readData === true });
      emit(g, d, printCheck);
      if (!d.ok) exitAfterOutput(3);
    });
}

/**
 * `loopx repo init|ls|check`, `backup-state --execute --repo R` and `backup-state verify --repo R
 * --backup-id B`, through the real CLI, against a directory repository and an S3 one (s3rver on
 * loopback behind the fault proxy that honours conditional writes as S3 does; bare s3rver, which
 * overwrites, is refused by init). Every --json document validates against its published schema:
 * repo-init.schema.json, repo-ls.schema.json, repo-check.schema.json, repo-forget.schema.json,
 * repo-prune.schema.json, repo-key-new.schema.json, repo-key-change.schema.json, repository-entry-v1.schema.json
 * and backup-state-result.schema.json (with its repository fields).
 */
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO, loopxAsync, tempRoot, type CliResult } from '../support/cli.js';
import { startS3WithProxy, type S3ServerWithProxy } from '../support/s3.js';

const ajv = new Ajv2020({ strict: true, allErrors: true });
for (const f of readdirSync(join(REPO, 'docs/schemas')).filter((n) => n.endsWith('.schema.json')))
  ajv.addSchema(JSON.parse(readFileSync(join(REPO, 'docs/schemas', f), 'utf8')) as Record<string, unknown>);
function valid(name: string, doc: unknown): void {
  const validate = ajv.getSchema(`https://loopx.dev/schemas/${name}.json`)!;
  expect(validate(doc) ? [] : validate.errors, `${name}: ${JSON.stringify(doc, null, 2)}`).toEqual([]);
}
const json = (r: CliResult) => {
  expect(r.status, r.stderr + r.stdout).toBe(0);
  return r.json();
};
const done = (r: CliResult) => expect(r.status, r.stderr + r.stdout).toBe(0);

let s3: S3ServerWithProxy;
beforeAll(async () => {
  s3 = await startS3WithProxy();
});
afterAll(() => s3?.stop());
const CREDS = () => ({ S3_CLI_CREDENTIALS: `${s3.credentials.accessKeyId}:${s3.credentials.secretAccessKey}` });
let n = 0;
const s3Repo = (endpoint = s3.endpoint) =>
  `s3://${s3.bucket}/cli-${++n}?endpoint=${endpoint}&path_style=true&credentials=env:S3_CLI_CREDENTIALS`;

/** A root with one finished run (its engine and SQLite state are what the backup holds). */
async function rootWithRun(): Promise<string[]> {
  const root = tempRoot();
  const at = ['--root', root, '--authority-dir', join(dirname(root), 'authority')];
  const r = await loopxAsync(['run', 'start', '--agent', 'examples/agents/minimal.json', ...at, '--json']);
  expect(r.status, r.stderr).toBe(0);
  return at;
}

describe('loopx repo', () => {
  it('a directory repository: init, back up into it, list, check, verify from it — each document as published', async () => {
    const at = await rootWithRun();
    const repo = join(dirname(at[1]!), 'offsite');
    valid('repo-init', json(await loopxAsync(['repo', 'init', '--repo', repo, '--json'])));
    const created = json(
      await loopxAsync(['backup-state', '--execute', '--repo', repo, '--backup-id', 'b1', ...at, '--json']),
    );
    valid('backup-state-result', created);
    valid('repository-entry-v1', created.entry);
    expect(created.entry.root_id).toMatch(/^root_/);
    expect(existsSync(join(dirname(at[1]!), 'root', 'backups', 'b1.tar.gz')), 'nothing is left beside the root').toBe(
      false,
    );
    const listed = json(await loopxAsync(['repo', 'ls', '--repo', repo, '--json']));
    valid('repo-ls', listed);
    expect(listed.backups.map((b: { backup_id: string; encrypted: boolean }) => [b.backup_id, b.encrypted])).toEqual([
      ['b1', false],
    ]);
    const human = await loopxAsync(['repo', 'ls', '--repo', repo]);
    expect(human.stdout).toContain('NOT encrypted');
    const checked = json(await loopxAsync(['repo', 'check', '--repo', repo, '--read-data', '--json']));
    valid('repo-check', checked);
    expect(checked).toMatchObject({ ok: true, backups: 1, read_data: true, findings: [] });
    const dest = join(dirname(at[1]!), 'ws');
    const plan = json(
      await loopxAsync([
        'backup-state',
        'verify',
        '--repo',
        repo,
        '--backup-id',
        'b1',
        '--destination',
        dest,
        ...at,
        '--json',
      ]),
    );
    valid('backup-verify-plan', plan);
    expect(existsSync(dest)).toBe(false);
    const audit = json(
      await loopxAsync([
        'backup-state',
        'verify',
        '--repo',
        repo,
        '--backup-id',
        'b1',
        '--destination',
        dest,
        '--execute',
        ...at,
        '--json',
      ]),
    );
    valid('state-recovery-audit-public-v0', audit);
    expect(audit.backup.backup_id).toBe('b1');
    expect(audit.backup.repository).toEqual({ repository_id: expect.stringMatching(/^repo_/), encrypted: false });
    expect(audit.phase).toBe('audited');
    // The private audit in the workspace says the same (and validates as the private audit).
    const privateAudit = JSON.parse(readFileSync(join(dest, 'recovery-audit.json'), 'utf8'));
    valid('state-recovery-audit-v0', privateAudit);
    expect(privateAudit.backup.repository).toEqual(audit.backup.repository);
    // A person reads it too, plainly.
    const shown = await loopxAsync(['backup-state', 'audit', 'show', dest]);
    expect(shown.stdout).toMatch(/from repository repo_[0-9a-f]+: NOT encrypted there/);
    // The verification is recorded in the repository: retention never forgets a root's newest verified backup.
    done(await loopxAsync(['backup-state', '--execute', '--repo', repo, '--backup-id', 'b2', ...at]));
    const after = json(await loopxAsync(['repo', 'ls', '--repo', repo, '--json']));
    valid('repo-ls', after);
    expect(Object.keys(after.verified)).toEqual(['b1']);
    const dry = json(await loopxAsync(['repo', 'forget', '--repo', repo, '--keep-last', '1', '--dry-run', '--json']));
    valid('repo-forget', dry);
    expect(dry.keep.map((k: { backup_id: string; reasons: string[] }) => [k.backup_id, k.reasons])).toEqual([
      ['b2', ['last']],
      ['b1', ['newest_verified']],
    ]);
    const empty = await loopxAsync(['repo', 'forget', '--repo', repo, '--json']);
    expect(empty.status).toBe(2);
    expect(empty.json().error.code).toBe('repo_forget_policy_empty');
    const pruned = json(await loopxAsync(['repo', 'prune', '--repo', repo, '--grace', '0', '--json']));
    valid('repo-prune', pruned);
    expect(pruned.removed).toEqual([]);
  });

  it('a damaged archive in the repository: check --read-data says so (exit 3) and verify refuses before decoding', async () => {
    const at = await rootWithRun();
    const repo = join(dirname(at[1]!), 'offsite');
    done(await loopxAsync(['repo', 'init', '--repo', repo]));
    done(await loopxAsync(['backup-state', '--execute', '--repo', repo, '--backup-id', 'b1', ...at]));
    const archive = join(repo, 'backups/b1/b1.tar.gz');
    const bytes = readFileSync(archive);
    bytes[bytes.length - 20] = bytes[bytes.length - 20]! ^ 0xff;
    writeFileSync(archive, bytes);
    const checked = await loopxAsync(['repo', 'check', '--repo', repo, '--read-data', '--json']);
    expect(checked.status).toBe(3);
    expect(checked.json().findings.map((f: { code: string }) => f.code)).toEqual(['repo_object_digest_mismatch']);
    const v = await loopxAsync([
      'backup-state',
      'verify',
      '--repo',
      repo,
      '--backup-id',
      'b1',
      '--destination',
      join(dirname(at[1]!), 'ws'),
      ...at,
      '--json',
    ]);
    expect(v.status).toBe(3);
    expect(v.json().error.code).toBe('verify_archive_digest_mismatch');
  });

  it('an S3 repository: bare s3rver (which overwrites) is refused; through a server that honours conditions, back up and verify via the spool', async () => {
    const bare = await loopxAsync(['repo', 'init', '--repo', s3Repo(s3.upstreamEndpoint), '--json'], CREDS());
    expect(bare.status).toBe(3);
    expect(bare.json().error.code).toBe('repo_conditional_write_unsupported');
    const at = await rootWithRun();
    const repo = s3Repo();
    valid('repo-init', json(await loopxAsync(['repo', 'init', '--repo', repo, '--json'], CREDS())));
    done(await loopxAsync(['backup-state', '--execute', '--repo', repo, '--backup-id', 's1', ...at], CREDS()));
    const again = await loopxAsync(
      ['backup-state', '--execute', '--repo', repo, '--backup-id', 's1', ...at, '--json'],
      CREDS(),
    );
    expect(again.status).toBe(4);
    expect(again.json().error.code).toBe('repo_backup_exists');
    const spool = join(dirname(at[1]!), 'spool');
    const { mkdirSync } = await import('node:fs');
    mkdirSync(spool, { mode: 0o700 });
    const audit = json(
      await loopxAsync(
        [
          'backup-state',
          'verify',
          '--repo',
          repo,
          '--backup-id',
          's1',
          '--spool',
          spool,
          '--destination',
          join(dirname(at[1]!), 'ws'),
          '--execute',
          ...at,
          '--json',
        ],
        CREDS(),
      ),
    );
    expect(audit.phase).toBe('audited');
    expect(readdirSync(spool), 'the spool is removed after the verification').toEqual([]);
  });

  it('an encrypted backup: sealed for a passphrase and a key made by repo key new; listed as encrypted; verified only with a key; no secret printed', async () => {
    const at = await rootWithRun();
    const base = dirname(at[1]!);
    const repo = join(base, 'vault');
    const keyFile = join(base, 'alice.key');
    const made = json(await loopxAsync(['repo', 'key', 'new', '--out', keyFile, '--json']));
    valid('repo-key-new', made);
    expect(made.recipient).toMatch(/^loopx-x25519-pub:/);
    // A directory not there yet is made, private.
    const nested = json(await loopxAsync(['repo', 'key', 'new', '--out', join(base, 'keys', 'bob.key'), '--json']));
    expect(nested.recipient).toMatch(/^loopx-x25519-pub:/);
    expect(statSync(join(base, 'keys')).mode & 0o777).toBe(0o700);
    expect(statSync(join(base, 'keys', 'bob.key')).mode & 0o777).toBe(0o600);
    expect((await loopxAsync(['repo', 'key', 'new', '--out', keyFile, '--json'])).json().error.code).toBe(
      'repo_key_file_exists',
    );
    const secret = 'a passphrase only this test knows';
    const env = { CLI_TEST_PASSPHRASE: secret };
    valid('repo-init', json(await loopxAsync(['repo', 'init', '--repo', repo, '--encrypt', '--json'])));
    const plain = await loopxAsync(['backup-state', '--execute', '--repo', repo, ...at, '--json']);
    expect(plain.status).toBe(3);
    expect(plain.json().error.code).toBe('repo_encryption_required');
    const created = json(
      await loopxAsync(
        [
          'backup-state',
          '--execute',
          '--repo',
          repo,
          '--backup-id',
          'e1',
          '--encrypt',
          '--recipient',
          made.recipient,
          '--recipient',
          'env:CLI_TEST_PASSPHRASE',
          ...at,
          '--json',
        ],
        env,
      ),
    );
    valid('backup-state-result', created);
    expect(created.entry.encrypted).toBe(true);
    expect((await loopxAsync(['repo', 'ls', '--repo', repo])).stdout).toMatch(/e1 .* encrypted/);
    const dest = join(base, 'ws');
    const verify = ['backup-state', 'verify', '--repo', repo, '--backup-id', 'e1', '--destination', dest, ...at];
    const keyless = await loopxAsync([...verify, '--execute', '--json']);
    expect(keyless.status).toBe(3);
    expect(keyless.json().error.code).toBe('repo_key_required');
    expect(existsSync(dest)).toBe(false);
    for (const key of [`file:${keyFile}`, 'env:CLI_TEST_PASSPHRASE']) {
      const d = `${dest}-${key.slice(0, 3)}`;
      const r = await loopxAsync(
        [...verify.slice(0, 6), '--destination', d, ...at, '--key', key, '--execute', '--json'],
        env,
      );
      expect(json(r).phase, key).toBe('audited');
      expect(r.stdout + r.stderr).not.toContain(secret);
      expect(r.stdout + r.stderr).not.toContain(readFileSync(keyFile, 'utf8').trim());
    }
    // Rotation: the passphrase removed (previewed first), the X25519 key still opens it; then removing that too is refused.
    const preview = json(
      await loopxAsync(
        ['repo', 'key', 'remove', '--repo', repo, '--recipient', 'env:CLI_TEST_PASSPHRASE', '--json'],
        env,
      ),
    );
    valid('repo-key-change', preview);
    expect(preview).toMatchObject({ execute: false, backups: [{ backup_id: 'e1', outcome: 'changed' }] });
    done(
      await loopxAsync(
        ['repo', 'key', 'remove', '--repo', repo, '--recipient', 'env:CLI_TEST_PASSPHRASE', '--execute'],
        env,
      ),
    );
    const gone = await loopxAsync(
      [...verify, '--destination', `${dest}-x`, '--key', 'env:CLI_TEST_PASSPHRASE', '--json'],
      env,
    );
    expect(gone.status).toBe(3);
    expect(gone.json().error.code).toBe('seal_key_not_recipient');
    const strand = await loopxAsync([
      'repo',
      'key',
      'remove',
      '--repo',
      repo,
      '--recipient',
      made.recipient,
      '--execute',
      '--json',
    ]);
    expect(strand.status).toBe(3);
    expect(strand.json().error).toMatchObject({ code: 'repo_key_removal_strands', details: { backup_ids: ['e1'] } });
  });

  it('refusals name the repository in their next action, as typed; unset credentials are refused by name, never printed', async () => {
    const missing = await loopxAsync(['repo', 'ls', '--repo', join(tempRoot(), 'nothing-here')]);
    expect(missing.status).toBe(3);
    expect(missing.stderr).toMatch(/\[repo_not_initialized\]/);
    expect(missing.stderr).toMatch(/try: create it: loopx repo init --repo \S+nothing-here/);
    expect(missing.stderr, 'no absolute path in public output').not.toMatch(/[ :]\/(tmp|work|root)\//);
    const noCreds = await loopxAsync(['repo', 'ls', '--repo', s3Repo(), '--json'], { S3_CLI_CREDENTIALS: '' });
    expect(noCreds.status).toBe(3);
    expect(noCreds.json().error.code).toBe('repo_credentials_missing');
    const noRepo = await loopxAsync(['repo', 'ls', '--json'], { LOOPX_REPOSITORY: '' });
    expect(noRepo.status).toBe(2);
    expect(noRepo.json().error.code).toBe('usage_repo_missing');
  });
});

/**
 * `loopx backup-state` as an operator meets it: a dry-run plan by default, --execute to create,
 * one JSON document with --json, typed refusals with exit codes, and no absolute path in output.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loopxAsync } from '../support/cli.js';
import { makeRoot, tempBase, treeFingerprint } from './support/fixtures.js';

const ENTRY = resolve(import.meta.dirname, 'support/cli-entry.ts');
const REPO = resolve(import.meta.dirname, '../..');

async function setup() {
  const base = tempBase();
  const root = join(base, 'root');
  await makeRoot(root);
  return { base, root, out: join(base, 'out') };
}

describe('loopx backup-state', () => {
  it('without --execute prints the plan and writes nothing', async () => {
    const { base, root, out } = await setup();
    const before = treeFingerprint(base);
    const human = await loopxAsync(['backup-state', '--root', root, '--output-dir', out, '--backup-id', 'b1']);
    expect(human.status, human.stderr).toBe(0);
    expect(human.stdout).toContain('backup-state plan b1 (dry run: nothing was written');
    expect(human.stdout).toMatch(/members: \d+ \(\d+ directories, \d+ files, [\d.]+ MiB\), 5 SQLite databases/);
    expect(human.stdout).toContain('alpha  ginst_');
    expect(human.stdout).toContain('would write b1.tar.gz and b1.manifest.json in the output directory');
    const json = await loopxAsync(['backup-state', '--root', root, '--output-dir', out, '--backup-id', 'b1', '--json']);
    expect(json.status).toBe(0);
    expect(json.json()).toMatchObject({
      schema_version: 'loopx_state_backup_plan_v0',
      dry_run: true,
      backup_id: 'b1',
      counts: { sqlite_databases: 5, goals: 3 },
    });
    expect(treeFingerprint(base)).toEqual(before);
    for (const r of [human, json]) expect(r.stdout + r.stderr).not.toContain(base);
  });

  it('--execute creates the pair and prints one JSON document', async () => {
    const { base, root, out } = await setup();
    const r = await loopxAsync([
      'backup-state',
      '--execute',
      '--root',
      root,
      '--output-dir',
      out,
      '--backup-id',
      'b1',
      '--include-automations',
      '--json',
    ]);
    expect(r.status, r.stderr).toBe(0);
    const doc = r.json();
    expect(doc).toMatchObject({
      ok: true,
      dry_run: false,
      backup_id: 'b1',
      archive: { name: 'b1.tar.gz' },
      manifest: { name: 'b1.manifest.json' },
      capture: {
        profile: 'online',
        requested_profile: 'online',
        achieved_profile: 'online',
        cross_owner_point_in_time: false,
      },
      // The owners' databases and the run kernel's; a Goal document that is a SQLite file is archived as its owner copied it.
      counts: { sqlite_snapshots: 4, goals: 2 },
      components: { requested_profile: 'online', achieved_profile: 'online', downgrades: [] },
    });
    expect(doc.components.list.map((c: { owner_kind: string }) => c.owner_kind)).toEqual([
      'registry',
      'config',
      'goal',
      'goal',
      'work',
      'work',
      'session',
      'effect',
      'quota',
      'scheduler',
    ]);
    expect(JSON.stringify(doc.components)).not.toMatch(/alpha|beta/);
    expect(readdirSync(out).sort()).toEqual(['b1.manifest.json', 'b1.tar.gz']);
    expect(r.stdout + r.stderr).not.toContain(base);
    expect(r.stderr).toBe(''); // no progress bar when stderr is not a terminal
  });

  it('human output of --execute names files relative to the output directory', async () => {
    const { base, root, out } = await setup();
    const r = await loopxAsync(['backup-state', '--execute', '--root', root, '--output-dir', out, '--backup-id', 'b1']);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toContain('created backup b1 in the output directory:');
    expect(r.stdout).toMatch(/b1\.tar\.gz {2}[\d.]+ (B|KiB|MiB) {2}sha256 [0-9a-f]{64}/);
    expect(r.stdout).toContain('capture profile: online; private, not encrypted');
    expect(r.stdout).toMatch(/10 components \(3 absent, 0 held\), 0 moved while captured/);
    expect(r.stdout).not.toContain(base);
  });

  it('--format v0 writes the legacy manifest; with --profile it is a usage error (exit 2) that writes nothing', async () => {
    const { root, out } = await setup();
    const legacy = await loopxAsync([
      'backup-state',
      '--execute',
      '--root',
      root,
      '--output-dir',
      out,
      '--backup-id',
      'old',
      '--format',
      'v0',
      '--json',
    ]);
    expect(legacy.status, legacy.stderr).toBe(0);
    expect(legacy.json()).toMatchObject({
      capture: { profile: 'legacy_best_effort_online', cross_owner_point_in_time: false },
      counts: { sqlite_snapshots: 5 },
    });
    expect(legacy.json().components).toBeUndefined();
    const conflict = await loopxAsync([
      'backup-state',
      '--execute',
      '--root',
      root,
      '--output-dir',
      out,
      '--backup-id',
      'x',
      '--format',
      'v0',
      '--profile',
      'quiescent',
      '--json',
    ]);
    expect(conflict.status).toBe(2);
    expect(conflict.json()).toMatchObject({ error: { code: 'backup_format_profile_conflict' } });
    expect(readdirSync(out).filter((n) => n.startsWith('x.'))).toEqual([]);
    const bad = await loopxAsync([
      'backup-state',
      '--execute',
      '--root',
      root,
      '--output-dir',
      out,
      '--profile',
      'sometimes',
    ]);
    expect(bad.status).toBe(2);
  });

  it('an occupied destination exits 4 with backup_destination_occupied; a refusal exits 3; a bad id exits 2', async () => {
    const { base, root, out } = await setup();
    expect(
      (await loopxAsync(['backup-state', '--execute', '--root', root, '--output-dir', out, '--backup-id', 'b1']))
        .status,
    ).toBe(0);
    const again = await loopxAsync([
      'backup-state',
      '--execute',
      '--root',
      root,
      '--output-dir',
      out,
      '--backup-id',
      'b1',
      '--json',
    ]);
    expect(again.status).toBe(4);
    expect(again.json().error).toMatchObject({
      code: 'backup_destination_occupied',
      next_action: 'choose a new --backup-id or --output-dir',
    });
    expect(again.stderr).toMatch(/\[backup_destination_occupied\]\ntry: /);

    writeFileSync(join(root, 'registry.json'), 'not json');
    const refused = await loopxAsync([
      'backup-state',
      '--execute',
      '--root',
      root,
      '--output-dir',
      out,
      '--backup-id',
      'b2',
      '--json',
    ]);
    expect(refused.status).toBe(3);
    expect(refused.json().error.code).toBe('backup_source_unusable');
    expect(existsSync(join(out, 'b2.tar.gz'))).toBe(false);

    const bad = await loopxAsync(['backup-state', '--root', root, '--backup-id', '../escape', '--json']);
    expect(bad.status).toBe(2);
    expect(bad.json().error.code).toBe('backup_id_invalid');
    for (const r of [again, refused, bad]) expect(r.stdout + r.stderr).not.toContain(base);
  });

  it('a missing root is refused with exit 3', async () => {
    const { base } = await setup();
    const r = await loopxAsync(['backup-state', '--root', join(base, 'nowhere'), '--json']);
    expect(r.status).toBe(3);
    expect(r.json().error.code).toBe('backup_root_missing');
  });

  it('draws a progress bar on stderr when it is a terminal (script(1) gives the command a pty)', async () => {
    const { root, out } = await setup();
    const quote = (a: string) => `'${a.replace(/'/g, `'\\''`)}'`;
    const cmd = [
      process.execPath,
      '--import',
      'tsx',
      ENTRY,
      'backup-state',
      '--execute',
      '--root',
      root,
      '--output-dir',
      out,
      '--backup-id',
      'tty',
    ]
      .map(quote)
      .join(' ');
    const r = spawnSync('script', ['-qec', cmd, '/dev/null'], { cwd: REPO, encoding: 'utf8', timeout: 60_000 });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/\r\x1b\[2K\[[#.]{28}\] \d+%/);
    expect(r.stdout).toContain('created backup tty');
  });

  it('answers --help', async () => {
    const r = await loopxAsync(['backup-state', '--help']);
    expect(r.status).toBe(0);
    for (const flag of [
      '--output-dir',
      '--backup-id',
      '--include-automations',
      '--include-skills',
      '--execute',
      '--root',
      '--json',
    ])
      expect(r.stdout).toContain(flag);
  });
});

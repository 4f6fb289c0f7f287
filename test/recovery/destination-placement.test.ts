/**
 * A verify destination inside a live runtime root, the run authority directory or an existing
 * recovery workspace is refused before anything is created — for the plan and for --execute, under
 * a link or `..` spelling too — with its typed code and one next action (issue 10 item 3). Without
 * this, a workspace made under `<root>/goals/` was swept into the root's next backup as a second
 * copy of its Goals. The daemon's reserved `<root>/daemon/recoveries/<job>` stays allowed and is
 * never captured.
 */
import { existsSync, mkdirSync, readFileSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { create, plan } from '../../src/backup/index.js';
import { DESTINATION_CODES } from '../../src/recovery/index.js';
import { makeRoot, tempBase, treeFingerprint } from '../backup/support/fixtures.js';
import { STATE_HOME, loopxAsync } from '../support/cli.js';

let base: string;
let root: string;
let archive: string;
let manifest: string;
let goalsBefore: string[];

beforeAll(async () => {
  base = tempBase('loopx-verify-placement-');
  root = join(base, 'root');
  await makeRoot(root, { specials: false });
  const made = await create(plan(root, { outputDir: join(base, 'out'), backupId: 'b' }));
  goalsBefore = made.manifest_doc.goals.map((g) => g.goal_id).sort();
  archive = join(base, 'out', 'b.tar.gz');
  manifest = join(base, 'out', 'b.manifest.json');
}, 120_000);

const verify = (destination: string, execute: boolean, ...global: string[]) =>
  loopxAsync([
    'backup-state',
    'verify',
    '--archive',
    archive,
    '--manifest',
    manifest,
    '--destination',
    destination,
    ...(execute ? ['--execute'] : []),
    '--json',
    ...global,
  ]);

/** Plan and execute are both refused with `code` (exit 3, one next action) and nothing is created anywhere under the base. */
async function refusedBoth(destination: string, code: string, ...global: string[]): Promise<void> {
  for (const execute of [false, true]) {
    const before = treeFingerprint(base);
    const r = await verify(destination, execute, ...global);
    expect(r.status, r.stderr).toBe(3);
    const error = r.json().error;
    expect(error.code).toBe(code);
    expect(error.next_action).toMatch(/^choose a destination outside /);
    expect(r.stderr.match(/^try: /gm)).toHaveLength(1);
    expect(r.stdout + r.stderr).not.toContain(base);
    expect(treeFingerprint(base)).toEqual(before);
    expect(existsSync(destination)).toBe(false);
  }
}

describe('verify destination placement', () => {
  it("a destination under the live root's goals/ is refused (verify_destination_inside_runtime_root)", async () => {
    await refusedBoth(join(root, 'goals', 'restored'), DESTINATION_CODES.insideRuntimeRoot, '--root', root);
  });

  it("a destination that is a child of the live root is refused, and so is one inside any other directory that holds a root's owner files", async () => {
    await refusedBoth(join(root, 'restored'), DESTINATION_CODES.insideRuntimeRoot, '--root', root);
    // Not the root of this invocation (the default ~/.loopx): still a runtime root on the way.
    await refusedBoth(join(root, 'goals', 'alpha', 'docs', 'restored'), DESTINATION_CODES.insideRuntimeRoot);
  });

  it('a link or .. spelling of a place inside the root is refused the same way', async () => {
    symlinkSync(join(root, 'goals'), join(base, 'goals-link'));
    await refusedBoth(join(base, 'goals-link', 'restored'), DESTINATION_CODES.insideRuntimeRoot, '--root', root);
    mkdirSync(join(base, 'elsewhere'), { mode: 0o700 });
    await refusedBoth(
      join(base, 'elsewhere', '..', 'root', 'goals', 'restored'),
      DESTINATION_CODES.insideRuntimeRoot,
      '--root',
      root,
    );
    // The root itself named through a link: the comparison is on physical paths.
    symlinkSync(root, join(base, 'root-link'));
    await refusedBoth(
      join(root, 'exports', 'restored'),
      DESTINATION_CODES.insideRuntimeRoot,
      '--root',
      join(base, 'root-link'),
    );
  });

  it('a destination inside the run authority directory — given or the default — is refused (verify_destination_inside_run_authority)', async () => {
    const authority = join(base, 'authority');
    mkdirSync(authority, { mode: 0o700 });
    await refusedBoth(join(authority, 'restored'), DESTINATION_CODES.insideRunAuthority, '--authority-dir', authority);
    // A destination that would contain a (not yet created) authority directory.
    await refusedBoth(
      join(base, 'authority-to-be'),
      DESTINATION_CODES.insideRunAuthority,
      '--authority-dir',
      join(base, 'authority-to-be', 'nested'),
    );
    // The default: $XDG_STATE_HOME/loopx/run-authority (the suite's private one).
    const dflt = join(STATE_HOME, 'loopx', 'run-authority');
    mkdirSync(dflt, { recursive: true, mode: 0o700 });
    const before = treeFingerprint(STATE_HOME);
    const r = await verify(join(dflt, 'restored'), true);
    expect(r.status, r.stderr).toBe(3);
    expect(r.json().error.code).toBe(DESTINATION_CODES.insideRunAuthority);
    expect(treeFingerprint(STATE_HOME)).toEqual(before);
  });

  it('a destination inside an existing recovery workspace is refused (verify_destination_inside_recovery_workspace)', async () => {
    const d = join(base, 'recovered');
    expect((await verify(d, true)).status).toBe(0);
    await refusedBoth(join(d, 'again'), DESTINATION_CODES.insideRecoveryWorkspace);
    await refusedBoth(
      join(d, 'workspace', 'runtime-root', 'goals', 'again'),
      DESTINATION_CODES.insideRecoveryWorkspace,
    );
    symlinkSync(join(d, 'workspace'), join(base, 'workspace-link'));
    await refusedBoth(join(base, 'workspace-link', 'again'), DESTINATION_CODES.insideRecoveryWorkspace);
  }, 60_000);

  it("the daemon's reserved daemon/recoveries/<job> stays allowed, and the root's next backup has no second copy of its Goals", async () => {
    const job = join(root, 'daemon', 'recoveries', 'job1');
    mkdirSync(join(root, 'daemon', 'recoveries'), { recursive: true, mode: 0o700 });
    const r = await verify(job, true, '--root', root);
    expect(r.status, r.stderr).toBe(0);
    expect(existsSync(join(job, 'recovery-audit.json'))).toBe(true);

    // The case: an execute into <root>/goals/, then the root's next backup — which must hold its Goals once.
    const into = await verify(join(root, 'goals', 'swept'), true, '--root', root);
    const again = await create(plan(root, { outputDir: join(base, 'out2'), backupId: 'after' }));
    expect(again.manifest_doc.goals.map((g) => g.goal_id).sort()).toEqual(goalsBefore);
    const members = (
      JSON.parse(readFileSync(join(base, 'out2', 'after.manifest.json'), 'utf8')) as { members: { path: string }[] }
    ).members.map((m) => m.path);
    expect(
      members.filter((p) => p.includes('swept') || p.includes('recovery-audit') || p.includes('/daemon/')),
    ).toEqual([]);
    expect(into.json().error.code).toBe(DESTINATION_CODES.insideRuntimeRoot);

    // Only a direct child of it: deeper is refused like the rest of the root.
    await refusedBoth(
      join(root, 'daemon', 'recoveries', 'job1-parent', 'deeper'),
      DESTINATION_CODES.insideRuntimeRoot,
      '--root',
      root,
    );
  }, 60_000);
});

/**
 * A root's identity is not its bytes: the run authority binds each root id to the directory it was
 * first used from, so a byte copy of a root — the review resumed a copy's run and completed the
 * live root's suspended run under the live root's id — is a different root that owns nothing.
 */
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultAuthorityDir, openRunAuthority, rootDirectoryIdentity } from '../../src/run-authority/index.js';
import { loopxAsync, REPO, STATE_HOME, tempRoot, rel } from '../support/cli.js';
import { treeState } from '../support/tree.js';

const AGENT = join(REPO, 'examples/agents/researcher.json');

async function suspendedRun(root: string): Promise<string> {
  const r = await loopxAsync([
    'run',
    'start',
    '--agent',
    AGENT,
    '--suspend-after-turns',
    '2',
    '--root',
    root,
    '--json',
  ]);
  expect(r.status, r.stderr).toBe(0);
  return r.json().run_id;
}

const AUTHORITY = () => defaultAuthorityDir({ XDG_STATE_HOME: STATE_HOME });

const rootIdOf = (runId: string): string => authorityRecord(runId).owner_root;

/** The command a next action names (`…: loopx <command>`), as argv. */
const commandOf = (nextAction: string): string[] =>
  nextAction.slice(nextAction.indexOf(': loopx ') + ': loopx '.length).split(' ');

const authorityRecord = (runId: string) =>
  JSON.parse(readFileSync(join(defaultAuthorityDir({ XDG_STATE_HOME: STATE_HOME }), 'runs', `${runId}.json`), 'utf8'));

describe('root identity', () => {
  it("a byte copy of a root can neither resume, export nor start runs: root_is_copy (exit 3), and the original's run is not stranded", async () => {
    const a = tempRoot();
    const runId = await suspendedRun(a);
    const before = authorityRecord(runId);
    const copy = join(a, '..', 'copy');
    execFileSync('cp', ['-a', a, copy]);

    for (const argv of [
      ['run', 'resume', runId],
      ['run', 'export', runId, '--out', join(a, '..', 'stolen.snapshot')],
      ['run', 'cancel', runId],
      ['run', 'start', '--agent', AGENT],
    ]) {
      const r = await loopxAsync([...argv, '--root', copy, '--json']);
      expect({ argv, status: r.status }).toEqual({ argv, status: 3 });
      expect(r.json().error).toMatchObject({
        code: 'root_is_copy',
        next_action: 'start a new root instead: loopx init --root <new-root>',
      });
    }
    expect(authorityRecord(runId)).toEqual(before);

    // A work run in the copy is refused before it opens a session, a fence or a lease: the copy is unchanged.
    expect((await loopxAsync(['goal', 'create', 'g', '--title', 'G', '--root', a, '--json'])).status).toBe(0);
    execFileSync('cp', ['-a', join(a, 'goals'), join(copy, 'goals')], { stdio: 'ignore' });
    execFileSync('cp', ['-a', join(a, 'registry.json'), join(copy, 'registry.json')], { stdio: 'ignore' });
    // Every entry but the directory's own mtime (reading engine.db's id opens SQLite, whose WAL sidecars come and go).
    const entries = (dir: string) => Object.fromEntries(Object.entries(treeState(dir)).filter(([k]) => k !== '.'));
    const copyBefore = entries(copy);
    const work = await loopxAsync([
      'work',
      'run',
      '--goal',
      'g',
      '--agent',
      join(REPO, 'examples/agents/goal-worker.json'),
      '--sink',
      'http://127.0.0.1:9/deliveries',
      '--root',
      copy,
      '--json',
    ]);
    expect(work.json().error.code).toBe('root_is_copy');
    expect(entries(copy)).toEqual(copyBefore);

    // The live root still owns its suspended run and completes it.
    const resumed = await loopxAsync(['run', 'resume', runId, '--root', a, '--json']);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(authorityRecord(runId).owner_root).toBe(before.owner_root);
    // Reading a copy stays possible (it needs no authority) and shows the history it holds.
    expect((await loopxAsync(['run', 'show', runId, '--root', copy, '--json'])).json().status).toBe('suspended');
  });

  it('a root moved with mv on one file system keeps its identity and its runs', async () => {
    const a = tempRoot();
    const runId = await suspendedRun(a);
    const moved = join(a, '..', 'moved');
    renameSync(a, moved);
    const r = await loopxAsync(['run', 'resume', runId, '--root', moved, '--json']);
    expect(r.status, r.stderr).toBe(0);
  });

  it('a copy opened first does not steal the binding: the original was bound when its first run started', async () => {
    const a = tempRoot();
    const runId = await suspendedRun(a);
    const copy = join(a, '..', 'copy');
    execFileSync('cp', ['-a', a, copy]);
    expect((await loopxAsync(['run', 'resume', runId, '--root', copy, '--json'])).json().error.code).toBe(
      'root_is_copy',
    );
    expect((await loopxAsync(['run', 'resume', runId, '--root', a, '--json'])).status).toBe(0);
  });

  it('a root whose runs were recorded before bindings existed is bound only by the operator: root_binding_required, then bind-root as printed', async () => {
    const a = tempRoot();
    const runId = await suspendedRun(a);
    unlinkSync(join(AUTHORITY(), 'roots', `${rootIdOf(runId)}.json`)); // as a root from before bindings
    const copy = join(a, '..', 'copy');
    execFileSync('cp', ['-a', a, copy]);
    // Neither the copy nor the original is bound automatically: whichever came first would win.
    for (const root of [copy, a]) {
      const r = await loopxAsync(['run', 'resume', runId, '--root', root, '--json']);
      expect(r.status).toBe(3);
      expect(r.json().error.code).toBe('root_binding_required');
    }
    const refusal = (await loopxAsync(['run', 'resume', runId, '--root', a, '--json'])).json().error;
    expect(refusal.next_action).toBe(
      `if this directory is the original root (not a copy of it), bind it: loopx authority bind-root --root ${rel(a)}`,
    );
    const bound = await loopxAsync([...commandOf(refusal.next_action), '--json']);
    expect(bound.status, bound.stderr).toBe(0);
    expect(bound.json()).toEqual({ root_id: rootIdOf(runId), binding: 'bound' });
    expect((await loopxAsync(['run', 'resume', runId, '--root', copy, '--json'])).json().error.code).toBe(
      'root_is_copy',
    );
    expect((await loopxAsync(['run', 'resume', runId, '--root', a, '--json'])).status).toBe(0);
  });

  it('bind-root never lets a copy take the place of a live original; once the original is gone it may', async () => {
    const a = tempRoot();
    const runId = await suspendedRun(a);
    const copy = join(a, '..', 'copy');
    execFileSync('cp', ['-a', a, copy]);
    const refused = await loopxAsync(['authority', 'bind-root', '--root', copy, '--json']);
    expect(refused.status).toBe(4);
    expect(refused.json().error.code).toBe('root_binding_original_present');
    expect((await loopxAsync(['authority', 'bind-root', '--root', a, '--json'])).json()).toEqual({
      root_id: rootIdOf(runId),
      binding: 'unchanged',
    });
    rmSync(a, { recursive: true });
    expect((await loopxAsync(['authority', 'bind-root', '--root', copy, '--json'])).json()).toEqual({
      root_id: rootIdOf(runId),
      binding: 'rebound',
    });
    expect((await loopxAsync(['run', 'resume', runId, '--root', copy, '--json'])).status).toBe(0);
  });

  it('run inspect --verify creates no run authority where there is none', async () => {
    const a = tempRoot();
    const runId = await suspendedRun(a);
    const file = join(a, '..', 'r.snapshot');
    expect((await loopxAsync(['run', 'export', runId, '--out', file, '--root', a])).status).toBe(0);
    const elsewhere = mkdtempSync(join(tmpdir(), 'loopx-no-authority-'));
    const r = await loopxAsync(['run', 'inspect', file, '--verify', '--json'], { XDG_STATE_HOME: elsewhere });
    expect(r.status).toBe(3);
    expect(r.json().error.code).toBe('authority_missing');
    expect(readdirSync(elsewhere)).toEqual([]);
  });

  it('bindings are private files; a damaged one is authority_root_binding_corrupt, never a silent rebind', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'loopx-bind-')), 'authority');
    const root = mkdtempSync(join(tmpdir(), 'loopx-bind-root-'));
    chmodSync(root, 0o700);
    const authority = openRunAuthority({ dir, create: true });
    try {
      await authority.bindRoot('root_aaaa', rootDirectoryIdentity(root));
      await authority.bindRoot('root_aaaa', rootDirectoryIdentity(root)); // idempotent
      expect(statSync(join(dir, 'roots', 'root_aaaa.json')).mode & 0o777).toBe(0o600);
      const other = mkdtempSync(join(tmpdir(), 'loopx-bind-other-'));
      await expect(authority.bindRoot('root_aaaa', rootDirectoryIdentity(other))).rejects.toMatchObject({
        code: 'root_is_copy',
      });
      // An inode number alone is not an identity: the same one on another device is another root, and
      // at the bound path the operator must decide (a renumbered device, or a volume mounted there).
      const bound = rootDirectoryIdentity(root);
      const otherDevice = { ...bound, dev: `${bound.dev}1` };
      await expect(authority.bindRoot('root_aaaa', { ...otherDevice, path: other })).rejects.toMatchObject({
        code: 'root_is_copy',
      });
      await expect(authority.bindRoot('root_aaaa', otherDevice)).rejects.toMatchObject({ code: 'root_binding_moved' });
      writeFileSync(join(dir, 'roots', 'root_aaaa.json'), '{"schema":"nope"}\n', { mode: 0o600 });
      await expect(authority.bindRoot('root_aaaa', rootDirectoryIdentity(root))).rejects.toMatchObject({
        code: 'authority_root_binding_corrupt',
      });
    } finally {
      await authority.close();
    }
  });
});

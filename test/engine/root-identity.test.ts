/**
 * A root's identity is not its bytes: the run authority binds each root id to the directory it was
 * first used from, so a byte copy of a root — the review resumed a copy's run and completed the
 * live root's suspended run under the live root's id — is a different root that owns nothing.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { defaultAuthorityDir, openRunAuthority, rootDirectoryIdentity } from '../../src/run-authority/index.js';
import { loopx, REPO, STATE_HOME, tempRoot } from '../support/cli.js';

const AGENT = join(REPO, 'examples/agents/researcher.json');

function suspendedRun(root: string): string {
  const r = loopx(['run', 'start', '--agent', AGENT, '--suspend-after-turns', '2', '--root', root, '--json']);
  expect(r.status, r.stderr).toBe(0);
  return r.json().run_id;
}

const authorityRecord = (runId: string) => JSON.parse(readFileSync(join(defaultAuthorityDir({ XDG_STATE_HOME: STATE_HOME }), 'runs', `${runId}.json`), 'utf8'));

describe('root identity', () => {
  it("a byte copy of a root can neither resume, export nor start runs: root_is_copy (exit 3), and the original's run is not stranded", () => {
    const a = tempRoot();
    const runId = suspendedRun(a);
    const before = authorityRecord(runId);
    const copy = join(a, '..', 'copy');
    execFileSync('cp', ['-a', a, copy]);

    for (const argv of [
      ['run', 'resume', runId],
      ['run', 'export', runId, '--out', join(a, '..', 'stolen.snapshot')],
      ['run', 'cancel', runId],
      ['run', 'start', '--agent', AGENT],
    ]) {
      const r = loopx([...argv, '--root', copy, '--json']);
      expect({ argv, status: r.status }).toEqual({ argv, status: 3 });
      expect(r.json().error).toMatchObject({ code: 'root_is_copy', next_action: 'start a new root instead: loopx init --root <new-root>' });
    }
    expect(authorityRecord(runId)).toEqual(before);

    // The live root still owns its suspended run and completes it.
    const resumed = loopx(['run', 'resume', runId, '--root', a, '--json']);
    expect(resumed.status, resumed.stderr).toBe(0);
    expect(authorityRecord(runId).owner_root).toBe(before.owner_root);
    // Reading a copy stays possible (it needs no authority) and shows the history it holds.
    expect(loopx(['run', 'show', runId, '--root', copy, '--json']).json().status).toBe('suspended');
  });

  it('a root moved with mv on one file system keeps its identity and its runs', () => {
    const a = tempRoot();
    const runId = suspendedRun(a);
    const moved = join(a, '..', 'moved');
    renameSync(a, moved);
    const r = loopx(['run', 'resume', runId, '--root', moved, '--json']);
    expect(r.status, r.stderr).toBe(0);
  });

  it('a copy opened first does not steal the binding: the original was bound when its first run started', () => {
    const a = tempRoot();
    const runId = suspendedRun(a);
    const copy = join(a, '..', 'copy');
    execFileSync('cp', ['-a', a, copy]);
    expect(loopx(['run', 'resume', runId, '--root', copy, '--json']).json().error.code).toBe('root_is_copy');
    expect(loopx(['run', 'resume', runId, '--root', a, '--json']).status).toBe(0);
  });

  it('bindings are private files; a damaged one is authority_root_binding_corrupt, never a silent rebind', async () => {
    const dir = join(mkdtempSync(join(tmpdir(), 'loopx-bind-')), 'authority');
    const root = mkdtempSync(join(tmpdir(), 'loopx-bind-root-'));
    chmodSync(root, 0o700);
    const authority = openRunAuthority({ dir, create: true });
    try {
      authority.bindRoot('root_aaaa', rootDirectoryIdentity(root));
      authority.bindRoot('root_aaaa', rootDirectoryIdentity(root)); // idempotent
      expect(statSync(join(dir, 'roots', 'root_aaaa.json')).mode & 0o777).toBe(0o600);
      const other = mkdtempSync(join(tmpdir(), 'loopx-bind-other-'));
      expect(() => authority.bindRoot('root_aaaa', rootDirectoryIdentity(other))).toThrow(expect.objectContaining({ code: 'root_is_copy' }));
      writeFileSync(join(dir, 'roots', 'root_aaaa.json'), '{"schema":"nope"}\n', { mode: 0o600 });
      expect(() => authority.bindRoot('root_aaaa', rootDirectoryIdentity(root))).toThrow(expect.objectContaining({ code: 'authority_root_binding_corrupt' }));
    } finally {
      await authority.close();
    }
  });
});

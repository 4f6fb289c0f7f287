/**
 * Every backup says where it lies against the root it protects: the default `<root>/backups` is
 * inside it (and on its file system), and the CLI warns with the one command that puts the next
 * backup elsewhere; a backup on another file system (a tmpfs the test mounts) gets no warning.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loopxAsync, tempRoot } from '../support/cli.js';
import { mountTmpfs, type Tmpfs } from '../support/tmpfs.js';

let other: Tmpfs | undefined;
afterAll(() => other?.unmount());

describe('backup placement', () => {
  const root = tempRoot('loopx-placement-');
  beforeAll(async () => {
    expect((await loopxAsync(['init', '--root', root])).status).toBe(0);
  });

  it('warns when the backup lies inside the root it protects, naming how to put it elsewhere', async () => {
    const human = await loopxAsync(['backup-state', '--execute', '--backup-id', 'p1', '--root', root]);
    expect(human.status, human.stderr).toBe(0);
    expect(human.stdout).toContain(
      'warning: This backup lies inside the root it protects: losing the root loses the backup too.',
    );
    expect(human.stdout).toContain(
      'put it elsewhere (another disk or host): loopx backup-state --execute --output-dir DIR',
    );
    const json = (
      await loopxAsync(['backup-state', '--execute', '--backup-id', 'p2', '--root', root, '--json'])
    ).json();
    expect(json.placement).toEqual({ inside_root: true, same_filesystem: true });
  });

  it('warns of the same file system outside the root, and says nothing on another file system', async () => {
    const beside = mkdtempSync(join(tmpdir(), 'loopx-placement-out-'));
    try {
      const same = await loopxAsync([
        'backup-state',
        '--execute',
        '--backup-id',
        'p3',
        '--output-dir',
        beside,
        '--root',
        root,
      ]);
      expect(same.stdout).toContain(
        'warning: This backup is on the same file system as the root it protects: a lost disk loses both.',
      );
      expect(
        (
          await loopxAsync([
            'backup-state',
            '--execute',
            '--backup-id',
            'p4',
            '--output-dir',
            beside,
            '--root',
            root,
            '--json',
          ])
        ).json().placement,
      ).toEqual({
        inside_root: false,
        same_filesystem: true,
      });
    } finally {
      rmSync(beside, { recursive: true, force: true });
    }
    other = mountTmpfs(mkdtempSync(join(tmpdir(), 'loopx-placement-fs-')), 64 * 1024 * 1024);
    if (other === undefined) return; // a developer's machine that cannot mount; CI=true throws instead
    const elsewhere = await loopxAsync([
      'backup-state',
      '--execute',
      '--backup-id',
      'p5',
      '--output-dir',
      other.dir,
      '--root',
      root,
    ]);
    expect(elsewhere.status, elsewhere.stderr).toBe(0);
    expect(elsewhere.stdout).not.toContain('warning:');
    expect(
      (
        await loopxAsync([
          'backup-state',
          '--execute',
          '--backup-id',
          'p6',
          '--output-dir',
          other.dir,
          '--root',
          root,
          '--json',
        ])
      ).json().placement,
    ).toEqual({
      inside_root: false,
      same_filesystem: false,
    });
  });
});

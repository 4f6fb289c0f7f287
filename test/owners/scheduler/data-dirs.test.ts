/**
 * Automations and skills are plain directories listed as disabled data: names only, nothing
 * inside is read or executed, and anything that is not a plain directory is a finding.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { listAutomations, listSkills } from '../../../src/owners/scheduler/index.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const tempRoot = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'loopx-datadirs-'));
  dirs.push(d);
  return d;
};

describe('automations and skills', () => {
  it('a root without the directories lists nothing and reports nothing', () => {
    const root = tempRoot();
    expect(listAutomations(root)).toEqual({ kind: 'automations', entries: [], findings: [] });
    expect(listSkills(root)).toEqual({ kind: 'skills', entries: [], findings: [] });
  });

  it('lists directory names sorted, every one disabled, without executing anything inside', () => {
    const root = tempRoot();
    const marker = join(root, 'executed');
    for (const name of ['nightly-report', 'heartbeat']) {
      mkdirSync(join(root, 'automations', name), { recursive: true });
      const script = join(root, 'automations', name, 'run.sh');
      writeFileSync(script, `#!/bin/sh\ntouch ${marker}\n`);
      chmodSync(script, 0o755);
    }
    mkdirSync(join(root, 'skills', 'loopx-review'), { recursive: true });
    expect(listAutomations(root)).toEqual({
      kind: 'automations',
      entries: [
        { name: 'heartbeat', disabled: true },
        { name: 'nightly-report', disabled: true },
      ],
      findings: [],
    });
    expect(listSkills(root).entries).toEqual([{ name: 'loopx-review', disabled: true }]);
    expect(existsSync(marker)).toBe(false);
  });

  it('files, symlinks and unsafe names are findings, not entries', () => {
    const root = tempRoot();
    mkdirSync(join(root, 'skills', 'ok'), { recursive: true });
    writeFileSync(join(root, 'skills', 'stray.txt'), 'x');
    symlinkSync(join(root, 'skills', 'ok'), join(root, 'skills', 'alias'));
    mkdirSync(join(root, 'skills', 'has space'));
    const l = listSkills(root);
    expect(l.entries).toEqual([{ name: 'ok', disabled: true }]);
    expect(l.findings.map((f) => `${f.code} ${f.subject}`).sort()).toEqual([
      'skill_name_unsafe dir:skills',
      'skill_not_directory skill:alias',
      'skill_not_directory skill:stray.txt',
    ]);
    expect(l.findings.every((f) => f.severity === 'error' && f.next_action.length > 0)).toBe(true);
  });

  it('an automations/ that is a symlink is not followed', () => {
    const root = tempRoot();
    const elsewhere = tempRoot();
    mkdirSync(join(elsewhere, 'hidden'));
    symlinkSync(elsewhere, join(root, 'automations'));
    expect(listAutomations(root)).toMatchObject({
      entries: [],
      findings: [{ code: 'automations_dir_not_directory', subject: 'dir:automations' }],
    });
  });
});

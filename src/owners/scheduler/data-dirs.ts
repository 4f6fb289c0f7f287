/**
 * Automations and skills: plain directories under `automations/` and `skills/` of a root (live
 * or restored). They are data. Listing reads directory entries only — it never opens, loads,
 * installs or executes anything inside them — and every entry is reported disabled: enabling
 * one is a decision for its current owner, never a side effect of a restore.
 */
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { LAYOUT } from '../layout.js';
import type { DataDirectoryEntry, DataDirectoryListing, SchedulerFinding } from './contract.js';

/** Names reported publicly: short, printable, no path syntax. */
const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export const listAutomations = (rootDir: string): DataDirectoryListing => listDataDirectory(rootDir, 'automations');
export const listSkills = (rootDir: string): DataDirectoryListing => listDataDirectory(rootDir, 'skills');

function listDataDirectory(rootDir: string, kind: 'automations' | 'skills'): DataDirectoryListing {
  const singular = kind === 'automations' ? 'automation' : 'skill';
  const dir = join(rootDir, kind === 'automations' ? LAYOUT.automationsDir : LAYOUT.skillsDir);
  const findings: SchedulerFinding[] = [];
  let st;
  try {
    st = lstatSync(dir);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return { kind, entries: [], findings };
    throw e;
  }
  if (!st.isDirectory()) {
    findings.push({
      code: `${kind}_dir_not_directory`,
      severity: 'error',
      subject: `dir:${kind}`,
      next_action: `replace ${kind}/ with a plain directory`,
    });
    return { kind, entries: [], findings };
  }
  const entries: DataDirectoryEntry[] = [];
  let unsafe = 0;
  for (const d of readdirSync(dir, { withFileTypes: true })) {
    if (!SAFE_NAME.test(d.name)) {
      unsafe++;
      continue;
    }
    // Dirent types come from lstat semantics: a symlink to a directory is not a directory.
    if (d.isDirectory()) entries.push({ name: d.name, disabled: true });
    else
      findings.push({
        code: `${singular}_not_directory`,
        severity: 'error',
        subject: `${singular}:${d.name}`,
        next_action: `keep only plain directories in ${kind}/`,
      });
  }
  if (unsafe > 0) {
    findings.push({
      code: `${singular}_name_unsafe`,
      severity: 'error',
      subject: `dir:${kind}`,
      next_action: `rename the ${unsafe} entr${unsafe === 1 ? 'y' : 'ies'} in ${kind}/ to letters, digits, . _ and -`,
    });
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return { kind, entries, findings };
}

/**
 * The goal owner's recovery-contract read side: decode every goal.json of a COPY of a root and
 * check each recorded document against its digest. Read-only: no lock, no directory, no write,
 * no registry, no authority — the result is history. Linked directories are unreadable (never
 * followed out of the copy); entries of goals/ that are not Goal ids belong to no Goal here.
 */
import { lstatSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { sha256Hex, isLoopxError } from '../../core/index.js';
import { LAYOUT } from '../layout.js';
import { decodeGoal, GOAL_DOC_MAX_BYTES, GOAL_MAX_BYTES, isGoalId } from './codec.js';
import type { GoalFinding, GoalFindingCode, GoalHistoricalRead, GoalRecord } from './contract.js';
import { readOnce } from './file.js';

const kindOf = (path: string): 'dir' | 'absent' | 'other' => {
  try {
    return lstatSync(path).isDirectory() ? 'dir' : 'other';
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ENOENT' ? 'absent' : 'other';
  }
};

const CODES: readonly GoalFindingCode[] = [
  'goal_unknown_schema',
  'goal_malformed',
  'goal_unreadable',
  'goal_id_mismatch',
];

export function readHistoricalCopy(copiedRootDir: string): GoalHistoricalRead {
  const findings: GoalFinding[] = [];
  const goals: GoalRecord[] = [];
  const add = (code: GoalFindingCode, subject: string, next_action: string): void => {
    findings.push({ code, severity: 'error', subject, next_action });
  };
  const rootKind = kindOf(copiedRootDir);
  const goalsKind = kindOf(join(copiedRootDir, LAYOUT.goalsDir));
  if (rootKind !== 'dir' || goalsKind === 'other') {
    add(
      'goal_unreadable',
      rootKind !== 'dir' ? '.' : LAYOUT.goalsDir,
      'extract the backup again; a state directory must be a real directory',
    );
    return { ok: false, goals, findings };
  }
  if (goalsKind === 'absent') return { ok: true, goals, findings };

  for (const id of readdirSync(join(copiedRootDir, LAYOUT.goalsDir)).sort()) {
    if (!isGoalId(id)) continue;
    const dirKind = kindOf(join(copiedRootDir, LAYOUT.goalDir(id)));
    if (dirKind !== 'dir') {
      add('goal_unreadable', LAYOUT.goalDir(id), 'extract the backup again; a Goal directory must be a real directory');
      continue;
    }
    let goal: GoalRecord;
    try {
      const bytes = readOnce(join(copiedRootDir, LAYOUT.goalFile(id)), GOAL_MAX_BYTES);
      if (bytes === null) continue; // a directory without goal.json holds no Goal identity
      goal = decodeGoal(bytes, id);
    } catch (e) {
      if (!isLoopxError(e) || !CODES.includes(e.code as GoalFindingCode)) throw e;
      add(e.code as GoalFindingCode, LAYOUT.goalFile(id), e.nextAction ?? "restore the Goal's goal.json from a backup");
      continue;
    }
    goals.push(goal);
    if (goal.docs.length === 0) continue;
    const docsDir = join(copiedRootDir, LAYOUT.goalDocsDir(id));
    if (kindOf(docsDir) === 'other') {
      add(
        'goal_unreadable',
        LAYOUT.goalDocsDir(id),
        'extract the backup again; a docs directory must be a real directory',
      );
      continue;
    }
    for (const doc of goal.docs) {
      const subject = `${LAYOUT.goalDocsDir(id)}/${doc.name}`;
      try {
        const bytes = readOnce(join(docsDir, doc.name), GOAL_DOC_MAX_BYTES);
        if (bytes === null) add('goal_doc_missing', subject, 'restore the document from a backup that holds it');
        else if (bytes.byteLength !== doc.bytes || sha256Hex(bytes) !== doc.sha256)
          add('goal_doc_digest_mismatch', subject, 'use an intact copy; the document differs from its recorded digest');
      } catch (e) {
        if (!isLoopxError(e) || e.code !== 'goal_unreadable') throw e;
        add('goal_unreadable', subject, e.nextAction ?? 'restore the document from a backup');
      }
    }
  }
  return { ok: findings.length === 0, goals, findings };
}

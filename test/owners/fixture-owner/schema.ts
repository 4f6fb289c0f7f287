/**
 * The fixture owner's database (`fixture-notes.db`, at the root's top): one table of notes and the
 * row decoder its live API and its historical reader share. A row the decoder cannot prove
 * well-formed is refused (live) or a finding (historical).
 */
import { instantColumn, sha256Column, textColumn, type Migration } from '../../../src/store/index.js';

/** Its one member, root-relative (a real owner's name would be in LAYOUT). */
export const FIXTURE_FILE = 'fixture-notes.db';

export const MIGRATIONS: readonly Migration[] = [
  `CREATE TABLE notes (
     note_id TEXT PRIMARY KEY,
     goal_id TEXT NOT NULL,
     body_sha256 TEXT NOT NULL,
     created_at TEXT NOT NULL
   );`,
];

/** A note: which Goal it is about and the digest of its body (never the body). */
export interface Note {
  readonly note_id: string;
  readonly goal_id: string;
  readonly body_sha256: string;
  readonly created_at: string;
}

export interface NoteRow {
  note_id: unknown;
  goal_id: unknown;
  body_sha256: unknown;
  created_at: unknown;
}

export const decodeNote = (r: NoteRow): Note => ({
  note_id: textColumn(r.note_id, 'note_id'),
  goal_id: textColumn(r.goal_id, 'goal_id'),
  body_sha256: sha256Column(r.body_sha256, 'body_sha256'),
  created_at: instantColumn(r.created_at, 'created_at'),
});

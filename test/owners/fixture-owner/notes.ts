/**
 * The fixture owner's live API: notes about a Goal, added once under their id (a repeat of the
 * same note replays it, another note under a used id is `fixture_note_conflict`). Decides nothing
 * else; it exists to show an owner joining a root by its folder and one row of the table.
 */
import { sha256Hex } from '../../../src/core/index.js';
import { openSqlite, setup } from '../../../src/store/index.js';
import { invalidInput, noteConflict } from './errors.js';
import { MIGRATIONS, decodeNote, type Note, type NoteRow } from './schema.js';

export interface FixtureNotes {
  add(note: { readonly note_id: string; readonly goal_id: string; readonly body: string }): Note;
  list(): Note[];
  close(): void;
}

export function openFixtureNotes(path: string, now: () => Date = () => new Date()): FixtureNotes {
  const db = openSqlite(path);
  setup(db, MIGRATIONS);
  const get = db.prepare('SELECT * FROM notes WHERE note_id = ?');
  const insert = db.prepare(
    'INSERT INTO notes (note_id, goal_id, body_sha256, created_at) VALUES (@note_id, @goal_id, @body_sha256, @created_at)',
  );
  const all = db.prepare('SELECT * FROM notes ORDER BY rowid');
  return {
    add({ note_id, goal_id, body }) {
      if (note_id.length === 0) throw invalidInput('A note id is not empty.', 'note_id');
      if (goal_id.length === 0) throw invalidInput('A Goal id is not empty.', 'goal_id');
      const body_sha256 = sha256Hex(body);
      const stored = get.get(note_id) as NoteRow | undefined;
      if (stored !== undefined) {
        const n = decodeNote(stored);
        if (n.goal_id !== goal_id || n.body_sha256 !== body_sha256) throw noteConflict(note_id);
        return n;
      }
      const note: Note = { note_id, goal_id, body_sha256, created_at: now().toISOString() };
      insert.run(note);
      return note;
    },
    list: () => (all.all() as NoteRow[]).map(decodeNote),
    close: () => db.close(),
  };
}

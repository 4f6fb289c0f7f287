/**
 * Historical readback of a COPY of the fixture owner's database, through the owners' one SQLite
 * history reader (src/owners/sqlite-history.ts): the owner supplies its name, file, schema
 * version, table and row decoder, and gets the copy discipline and the `fixture_copy_unreadable`,
 * `fixture_schema_unsupported` and `fixture_db_corrupt` findings from it.
 */
import type { OwnerFinding } from '../../../src/owners/index.js';
import {
  VERIFY_COPY_AGAIN,
  readSqliteHistory,
  type ReadSqliteHistoryOptions,
  type SqliteHistorySpec,
} from '../../../src/owners/sqlite-history.js';
import type { TableQueries, TableRows } from '../../../src/owners/table-rows.js';
import { RowInvalid } from '../../../src/store/index.js';
import { FIXTURE_FILE, MIGRATIONS, decodeNote, type Note, type NoteRow } from './schema.js';

export interface FixtureHistory {
  readonly owner: 'fixture';
  readonly schema_version: number | null;
  readonly notes: readonly Note[];
  readonly findings: readonly OwnerFinding[];
}

export const FIXTURE_TABLES: TableQueries<'notes'> = {
  notes: { sqlite: 'SELECT * FROM notes ORDER BY rowid', postgresql: 'SELECT * FROM notes ORDER BY note_id' },
};

export function decodeNotes(
  rows: TableRows<'notes'>,
  findings: OwnerFinding[],
): Omit<FixtureHistory, 'schema_version'> {
  const notes: Note[] = [];
  for (const row of rows('notes') as unknown as NoteRow[]) {
    try {
      notes.push(decodeNote(row));
    } catch (e) {
      if (!(e instanceof RowInvalid)) throw e;
      findings.push({
        code: 'fixture_row_invalid',
        severity: 'error',
        subject: `note:${String(row.note_id)}`,
        next_action: VERIFY_COPY_AGAIN,
      });
    }
  }
  return { owner: 'fixture', notes, findings };
}

const FIXTURE_HISTORY: SqliteHistorySpec<'notes', FixtureHistory> = {
  owner: 'fixture',
  file: FIXTURE_FILE,
  version: MIGRATIONS.length,
  tables: FIXTURE_TABLES,
  none: () => ({ notes: [] }),
  decode: decodeNotes,
};

export const readHistoricalFile = (copiedFilePath: string, options: ReadSqliteHistoryOptions = {}): FixtureHistory =>
  readSqliteHistory(FIXTURE_HISTORY, copiedFilePath, options);

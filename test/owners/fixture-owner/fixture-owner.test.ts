/**
 * Adding an owner is its folder and one row: the fixture owner lives only in this folder (its
 * database, live API, refusals from the owners' error factory, historical reader from the owners'
 * SQLite history reader, recovery contract from the owners' kit) and joins a root by one row of a
 * table of owners built with `ownerTable` — the function the OWNERS table is built with — and its
 * rows of ADOPTION and HISTORICAL_PREVIEW. Nothing in src/ names it. It then passes the recovery
 * contract's conformance suite, as every owner of the OWNERS table does.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exitCodeOf } from '../../../src/core/index.js';
import {
  ADOPTION,
  HISTORICAL_PREVIEW,
  MACHINE,
  OWNERS,
  OwnerError,
  goalScope,
  ownerOfMember,
  ownerTable,
  session,
  type AdoptionContext,
  type HistoricalPreview,
  type OwnerAdoptionStep,
  type OwnerRecovery,
} from '../../../src/owners/index.js';
import { describeOwnerContract, ownerTableProblems } from '../conformance/owner-contract.conformance.js';
import * as fixture from './index.js';

const dirs: string[] = [];
const fresh = (prefix: string): string => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
};
let root: string;

beforeAll(() => {
  root = fresh('loopx-fixture-root-');
  const notes = fixture.openFixtureNotes(join(root, fixture.FIXTURE_FILE), () => new Date('2030-01-01T00:00:00.000Z'));
  notes.add({ note_id: 'n-1', goal_id: 'launch', body: 'outline agreed' });
  notes.add({ note_id: 'n-2', goal_id: 'launch', body: 'design review on Friday' });
  notes.close();
});

afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** The OWNERS table's rows and one more: the whole registration. */
const ROWS = { ...OWNERS, fixture: fixture.recovery };
const TABLE = ownerTable(ROWS);
// The adoption tables ask for a row of every owner of ROWS (a missing one does not type-check).
const ADOPT: Readonly<Record<keyof typeof ROWS, readonly OwnerAdoptionStep[]>> = {
  ...ADOPTION,
  fixture: fixture.adoptionSteps,
};
const PREVIEW: Readonly<Record<keyof typeof ROWS, HistoricalPreview>> = {
  ...HISTORICAL_PREVIEW,
  fixture: fixture.historicalPreview,
};

describe('an owner added by its folder and one row', () => {
  it('joins the table after the owners it depends on, and every lookup derived from the table finds it', () => {
    expect(TABLE.list.map((o) => o.name)).toEqual([...Object.keys(OWNERS), 'fixture']);
    expect(ownerTableProblems(ROWS)).toEqual([]);
    expect(TABLE.ownerOfMember(fixture.FIXTURE_FILE)).toEqual({
      owner: fixture.recovery,
      store: 'fixture',
      scope: MACHINE,
    });
    expect(TABLE.rootDatabases).toContain(fixture.FIXTURE_FILE);
    expect(TABLE.documentOwners).not.toContain(fixture.recovery);
    expect(TABLE.descriptions()).toContainEqual({
      name: 'fixture',
      decides: fixture.recovery.decides,
      scope: 'machine',
      required_for_goal: false,
      classification: 'historical_only',
    });
  });

  it("the table's rows before it answer as the OWNERS table does, and the OWNERS table itself is untouched", () => {
    const base = ownerTable(OWNERS);
    for (const rel of ['sessions.db', 'registry.json', 'goals/launch/work.db', 'engine.db', fixture.FIXTURE_FILE]) {
      expect(base.ownerOfMember(rel), rel).toEqual(ownerOfMember(rel));
      if (rel !== fixture.FIXTURE_FILE) expect(TABLE.ownerOfMember(rel), rel).toEqual(ownerOfMember(rel));
    }
    expect(ownerOfMember(fixture.FIXTURE_FILE)).toBeNull();
    expect(Object.keys(OWNERS)).not.toContain('fixture');
  });

  it('its adoption row keeps its state as history, read back through its own reader', async () => {
    const captured = fresh('loopx-fixture-capture-');
    await fixture.recovery.capture({ root }, MACHINE, captured);
    const [retain] = ADOPT.fixture;
    expect(retain).toMatchObject({ action: 'fixture:retain_historical', disposition: 'retain_historical' });
    const ctx = {
      workspace_root: captured,
      scratch_dir: fresh('loopx-scratch-'),
      key: (action: string) => `key-${action}`,
    } as unknown as AdoptionContext;
    const receipt = await retain!.apply(ctx);
    const h = fixture.recovery.readHistorical({ root: captured, scratchDir: fresh('loopx-scratch-') }, MACHINE);
    expect(receipt).toMatchObject({
      owner: 'fixture',
      result: 'already',
      idempotency_key: 'key-fixture:retain_historical',
      readback: { kept_in: 'recovery_workspace', counts: { notes: 2 }, revision: h.revision },
      execution_authority_granted: false,
    });
    expect(PREVIEW.fixture.words?.({ effects: [], sessions: 0 })).toBe('the notes as captured');
  });

  it("its refusals are its own typed errors, told apart from every other owner's", () => {
    const notes = fixture.openFixtureNotes(join(fresh('loopx-fixture-live-'), fixture.FIXTURE_FILE));
    try {
      notes.add({ note_id: 'n-1', goal_id: 'launch', body: 'one' });
      expect(notes.add({ note_id: 'n-1', goal_id: 'launch', body: 'one' }).body_sha256).toMatch(/^[0-9a-f]{64}$/);
      let refusal: unknown;
      try {
        notes.add({ note_id: 'n-1', goal_id: 'launch', body: 'another' });
      } catch (e) {
        refusal = e;
      }
      expect(refusal).toBeInstanceOf(OwnerError);
      expect(fixture.isFixtureError(refusal, 'fixture_note_conflict')).toBe(true);
      expect(fixture.isFixtureError(refusal, 'fixture_input_invalid')).toBe(false);
      expect(session.isSessionError(refusal)).toBe(false);
      expect(refusal).toMatchObject({
        name: 'FixtureError',
        owner: 'fixture',
        kind: 'conflict',
        code: 'fixture_note_conflict',
        nextAction: expect.any(String),
      });
      expect(Object.keys(refusal as object)).not.toContain('owner');
      expect(exitCodeOf(refusal)).toBe(4);
    } finally {
      notes.close();
    }
  });

  it("the owners' SQLite history reader gives it its copy findings: unreadable, unknown schema, corrupt", () => {
    const dir = fresh('loopx-fixture-copies-');
    const notSqlite = join(dir, 'not-sqlite.db');
    writeFileSync(notSqlite, 'not a database');
    expect(fixture.readHistoricalFile(notSqlite, { scratchDir: dir })).toMatchObject({
      owner: 'fixture',
      schema_version: null,
      notes: [],
      findings: [{ code: 'fixture_copy_unreadable', severity: 'error', subject: `file:${fixture.FIXTURE_FILE}` }],
    });
    const newer = join(dir, 'newer.db');
    const db = new Database(newer);
    db.pragma('user_version = 7');
    db.close();
    expect(fixture.readHistoricalFile(newer, { scratchDir: dir })).toMatchObject({
      schema_version: 7,
      notes: [],
      findings: [
        {
          code: 'fixture_schema_unsupported',
          subject: 'schema:7',
          next_action: 'read this backup with the loopx version that wrote it or a newer one',
        },
      ],
    });
    const read = fixture.readHistoricalFile(join(root, fixture.FIXTURE_FILE), { scratchDir: dir });
    expect(read).toMatchObject({ schema_version: 1, findings: [] });
    expect(read.notes.map((n) => n.note_id)).toEqual(['n-1', 'n-2']);
  });
});

const scopeOf = (o: OwnerRecovery) => (o.scope === 'goal' ? goalScope('launch') : MACHINE);
describeOwnerContract(fixture.recovery, { root: () => root, scopeOf, fresh });

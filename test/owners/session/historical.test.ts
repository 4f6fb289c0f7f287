/**
 * Historical readback of a copied sessions.db: decoded rows plus findings, never a write to the
 * copy. Damaged copies (one defect each) produce their finding code.
 */
import Database from 'better-sqlite3';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../../src/core/index.js';
import { openSqliteSessionStore } from '../../../src/owners/session/index.js';
import { readHistoricalFile as readHistorical } from '../../../src/owners/session/historical.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'loopx-session-hist-'));
  dirs.push(d);
  return d;
};

/** A sessions.db with one settled turn and one in-progress turn, copied into a fresh workspace. */
async function copiedFixture() {
  const live = join(tempDir(), 'sessions.db');
  const store = openSqliteSessionStore(live);
  const s = await store.openSession({ goal_id: 'g1', goal_instance_id: 'gi_1' });
  const gen = (await store.bindRun(s.session_id, 'run-1', 1)).execution_generation;
  const t0 = (await store.beginTurn(s.session_id, 0, gen)).turn;
  for (const p of ['host_execute', 'typed_result', 'validation', 'durable_writeback'] as const)
    await store.recordPhase(t0.turn_key, p, gen);
  await store.settleTurn(t0.turn_key, {
    settlement_id: 'st-0',
    status: 'committed',
    expected_execution_generation: gen,
  });
  const t1 = (await store.beginTurn(s.session_id, 1, gen)).turn;
  await store.recordPhase(t1.turn_key, 'host_execute', gen, 'op-1#host_execute');
  const retired = await store.openSession({ goal_id: 'g2', goal_instance_id: 'gi_2' });
  await store.retireSession(retired.session_id, 1);
  store.close();
  const workspace = tempDir();
  const copy = join(workspace, 'sessions.db');
  copyFileSync(live, copy);
  return { copy, workspace, sessionId: s.session_id, t0: t0.turn_key, t1: t1.turn_key, retiredId: retired.session_id };
}

/** Damage a copy through the raw driver, as a corrupted archive member would arrive. */
function damage(path: string, sql: string): void {
  const db = new Database(path);
  db.pragma('ignore_check_constraints = ON');
  db.exec(sql);
  db.close();
}

const codes = (h: { findings: readonly { code: string }[] }) => h.findings.map((f) => f.code).sort();

describe('session readHistorical', () => {
  it('decodes sessions, turns and settlements of a copy and holds the active binding and the unsettled turn', async () => {
    const f = await copiedFixture();
    const h = readHistorical(f.copy);
    expect(h.schema_version).toBe(1);
    expect(h.sessions.map((s) => [s.session_id, s.status])).toEqual([
      [f.sessionId, 'active'],
      [f.retiredId, 'retired'],
    ]);
    expect(h.turns.map((t) => [t.turn_key, t.status, t.phases.length])).toEqual([
      [f.t0, 'committed', 4],
      [f.t1, 'in_progress', 1],
    ]);
    expect(h.turns[1]!.phases[0]).toMatchObject({ phase: 'host_execute', ref: 'op-1#host_execute' });
    expect(h.settlements.map((s) => s.settlement_id)).toEqual(['st-0']);
    expect(h.findings).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ code: 'turn_unsettled', severity: 'hold', subject: `turn:${f.t1}` }),
        expect.objectContaining({
          code: 'session_binding_historical',
          severity: 'hold',
          subject: `session:${f.sessionId}`,
        }),
      ]),
    );
    expect(h.findings).toHaveLength(2);
    for (const finding of h.findings) expect(finding.next_action).toBeTruthy();
  });

  it('never writes the copy: same bytes, no sidecars beside it', async () => {
    const f = await copiedFixture();
    const before = sha256Hex(readFileSync(f.copy));
    const listing = readdirSync(f.workspace).sort();
    readHistorical(f.copy);
    expect(sha256Hex(readFileSync(f.copy))).toBe(before);
    expect(readdirSync(f.workspace).sort()).toEqual(listing);
  });

  it('a file that is not SQLite is session_copy_unreadable', () => {
    const path = join(tempDir(), 'sessions.db');
    writeFileSync(path, 'not a database at all, just some bytes');
    expect(codes(readHistorical(path))).toEqual(['session_copy_unreadable']);
    expect(codes(readHistorical(join(tempDir(), 'missing.db')))).toEqual(['session_copy_unreadable']);
  });

  it('a schema newer than this loopx is session_schema_unsupported', async () => {
    const f = await copiedFixture();
    damage(f.copy, 'PRAGMA user_version = 99');
    const h = readHistorical(f.copy);
    expect(codes(h)).toEqual(['session_schema_unsupported']);
    expect(h.sessions).toEqual([]);
  });

  it('a session row with an unknown status is session_row_invalid and is not decoded', async () => {
    const f = await copiedFixture();
    damage(f.copy, `UPDATE sessions SET status = 'resurrected' WHERE session_id = '${f.retiredId}'`);
    const h = readHistorical(f.copy);
    expect(h.findings).toContainEqual(
      expect.objectContaining({ code: 'session_row_invalid', severity: 'error', subject: `session:${f.retiredId}` }),
    );
    expect(h.sessions.map((s) => s.session_id)).toEqual([f.sessionId]);
  });

  it('phases that are not an ordered prefix make the turn invalid', async () => {
    const f = await copiedFixture();
    damage(f.copy, `DELETE FROM turn_phases WHERE turn_key = '${f.t0}' AND position = 1`);
    const h = readHistorical(f.copy);
    expect(h.findings).toContainEqual(
      expect.objectContaining({ code: 'session_row_invalid', subject: `turn:${f.t0}` }),
    );
    expect(h.turns.map((t) => t.turn_key)).toEqual([f.t1]);
  });

  it('a turn whose key does not match its session and index is turn_key_mismatch', async () => {
    const f = await copiedFixture();
    damage(f.copy, `UPDATE turns SET turn_index = 7 WHERE turn_key = '${f.t1}'`);
    expect(readHistorical(f.copy).findings).toContainEqual(
      expect.objectContaining({ code: 'turn_key_mismatch', subject: `turn:${f.t1}` }),
    );
  });

  it('a settlement whose digest does not match its fields is settlement_turn_mismatch, and its turn lacks a settlement', async () => {
    const f = await copiedFixture();
    damage(f.copy, `UPDATE settlements SET result_kind = 'validated_completion' WHERE settlement_id = 'st-0'`);
    const h = readHistorical(f.copy);
    expect(codes(h)).toEqual([
      'session_binding_historical',
      'settlement_missing',
      'settlement_turn_mismatch',
      'turn_unsettled',
    ]);
    expect(h.settlements).toEqual([]);
  });
});

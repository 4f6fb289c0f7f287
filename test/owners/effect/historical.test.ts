/**
 * Historical readback of a copied effects.db: decoded rows, holds for every uncertain or
 * undelivered effect, error findings for damage — and never a write to the copy.
 */
import Database from 'better-sqlite3';
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { sha256Hex } from '../../../src/core/index.js';
import { openSqliteEffectJournal, type RecordIntentRequest } from '../../../src/owners/effect/index.js';
import { readHistoricalFile as readHistorical } from '../../../src/owners/effect/historical.js';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));
const tempDir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'loopx-effect-hist-'));
  dirs.push(d);
  return d;
};
const intent = (n: number): RecordIntentRequest => ({
  operation_id: `op-${n}`,
  idempotency_key: `key-${n}`,
  goal_id: 'g1',
  kind: 'webhook.deliver',
  target: 'webhook:127.0.0.1:9',
  intent: { url: 'http://127.0.0.1:9/deliveries?token=secret', body: { n } },
});

/** op-1 committed, op-2 unknown, op-3 waiting in the outbox, op-4 dispatched and never settled. */
async function copiedFixture() {
  const live = join(tempDir(), 'effects.db');
  const j = openSqliteEffectJournal(live);
  for (const n of [1, 2, 3, 4]) await j.recordIntent(intent(n));
  await j.beginDispatch('op-1');
  await j.settle('op-1', 'committed', { http_status: 201 });
  await j.beginDispatch('op-2');
  await j.settle('op-2', 'unknown', { reason: 'timeout' });
  await j.beginDispatch('op-4');
  j.close();
  const workspace = tempDir();
  const copy = join(workspace, 'effects.db');
  copyFileSync(live, copy);
  return { copy, workspace };
}
function damage(path: string, sql: string): void {
  const db = new Database(path);
  db.pragma('ignore_check_constraints = ON');
  db.pragma('foreign_keys = OFF');
  db.exec(sql);
  db.close();
}
const codes = (h: { findings: readonly { code: string; subject: string }[] }) =>
  h.findings.map((f) => `${f.code} ${f.subject}`).sort();

describe('effect readHistorical', () => {
  it('decodes effects, outbox and history, and holds every uncertain or undelivered effect', async () => {
    const { copy } = await copiedFixture();
    const h = readHistorical(copy);
    expect(h.schema_version).toBe(1);
    expect(h.effects.map((e) => [e.operation_id, e.outcome])).toEqual([
      ['op-1', 'committed'],
      ['op-2', 'unknown'],
      ['op-3', 'pending'],
      ['op-4', 'pending'],
    ]);
    expect(h.outbox.map((o) => o.operation_id)).toEqual(['op-3']);
    expect(h.transitions.filter((t) => t.operation_id === 'op-1').map((t) => t.event)).toEqual([
      'intent',
      'dispatch',
      'settle',
    ]);
    expect(codes(h)).toEqual([
      'effect_delivery_pending effect:op-3',
      'effect_dispatch_in_flight effect:op-4',
      'effect_outcome_unknown effect:op-2',
    ]);
    expect(h.findings.every((f) => f.severity === 'hold' && f.next_action.length > 0)).toBe(true);
    expect(JSON.stringify(h.findings)).not.toContain('secret');
  });

  it('never writes the copy: same bytes, no sidecars beside it', async () => {
    const { copy, workspace } = await copiedFixture();
    const before = sha256Hex(readFileSync(copy));
    const listing = readdirSync(workspace).sort();
    readHistorical(copy);
    expect(sha256Hex(readFileSync(copy))).toBe(before);
    expect(readdirSync(workspace).sort()).toEqual(listing);
  });

  it('a file that is not SQLite is effect_copy_unreadable; a newer schema is effect_schema_unsupported', async () => {
    const path = join(tempDir(), 'effects.db');
    writeFileSync(path, Buffer.alloc(4096, 7));
    expect(codes(readHistorical(path))).toEqual(['effect_copy_unreadable file:effects.db']);
    const { copy } = await copiedFixture();
    damage(copy, 'PRAGMA user_version = 2');
    expect(codes(readHistorical(copy))).toEqual(['effect_schema_unsupported schema:2']);
  });

  it('an intent changed after it was recorded is effect_intent_digest_mismatch', async () => {
    const { copy } = await copiedFixture();
    damage(
      copy,
      `UPDATE effects SET intent = '{"body":{"n":99},"url":"http://127.0.0.1:9/deliveries"}' WHERE operation_id = 'op-1'`,
    );
    const h = readHistorical(copy);
    expect(codes(h)).toContain('effect_intent_digest_mismatch effect:op-1');
    expect(h.effects.map((e) => e.operation_id)).not.toContain('op-1');
  });

  it('an unknown outcome word is effect_row_invalid', async () => {
    const { copy } = await copiedFixture();
    damage(copy, `UPDATE effects SET outcome = 'probably_fine' WHERE operation_id = 'op-2'`);
    expect(codes(readHistorical(copy))).toContain('effect_row_invalid effect:op-2');
  });

  it('an outbox row for a settled effect, or a pending effect missing from the outbox, is effect_outbox_inconsistent', async () => {
    const { copy } = await copiedFixture();
    damage(
      copy,
      `INSERT INTO outbox (operation_id, enqueued_at) VALUES ('op-1', '2026-01-01T00:00:00.000Z'); DELETE FROM outbox WHERE operation_id = 'op-3'`,
    );
    const c = codes(readHistorical(copy));
    expect(c).toContain('effect_outbox_inconsistent effect:op-1');
    expect(c).toContain('effect_outbox_inconsistent effect:op-3');
  });

  it('history that does not end in the current outcome, or has a gap, is effect_history_invalid', async () => {
    const { copy } = await copiedFixture();
    damage(
      copy,
      `DELETE FROM effect_history WHERE operation_id = 'op-1' AND seq = 3; DELETE FROM effect_history WHERE operation_id = 'op-2' AND seq = 2`,
    );
    const c = codes(readHistorical(copy));
    expect(c).toContain('effect_history_invalid effect:op-1');
    expect(c).toContain('effect_history_invalid effect:op-2');
  });
});

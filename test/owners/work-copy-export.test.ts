/**
 * The work owner's export with its records left in the copy (`from_copy`): the hand-written record
 * text is exactly `canonicalJson` of the record for every row a provider wrote (strings that need
 * escaping included), the chain it builds is the retained-prefix export's chain, and a copy or a
 * header changed after capture is caught — the seal no longer matches and the rebuilt digest is
 * not the captured one. The same holds for a SQLite machine owner (quota), whose records are its
 * reader's items.
 */
import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../src/core/index.js';
import { LAYOUT, MACHINE, OWNERS, goalScope, quota, type OwnerCapture } from '../../src/owners/index.js';
import { openGoalWork } from '../../src/owners/work/index.js';
import {
  COPY_EXPORT_SCHEMA,
  CopySeal,
  exportWorkCopy,
  framedRow,
  type StoredCommit,
} from '../../src/owners/work/copy-export.js';
import { REPO } from '../support/cli.js';
import { openWorkDbCopy, openSqliteWorkProvider } from '../../src/owners/work/sqlite.js';
import { exportRetainedPrefix } from '../../src/owners/work/retained-prefix.js';

const GOAL = 'copy-export';
const dirs: string[] = [];
const fresh = (prefix: string): string => {
  const d = mkdtempSync(join(tmpdir(), prefix));
  dirs.push(d);
  return d;
};
let root: string;

/** Titles and notes that canonical JSON must escape or keep verbatim. */
const AWKWARD = [
  'quote " and backslash \\',
  'line\nbreak\ttab',
  'é ü 日本語 🚀',
  'separators \u2028 \u2029',
  'control \u0001\u001f',
  '</script>',
];

beforeAll(async () => {
  root = fresh('loopx-copy-export-');
  mkdirSync(join(root, 'goals', GOAL), { recursive: true, mode: 0o700 });
  const w = await openGoalWork({ root, goal_id: GOAL, synchronous: 'OFF' });
  for (const [i, title] of AWKWARD.entries()) await w.addTodo({ operation_id: `add-${i}`, title });
  for (let i = 0; i < 40; i++)
    await w.updateTodo({
      operation_id: `note-${i}`,
      todo_id: `t${(i % AWKWARD.length) + 1}`,
      note: `${AWKWARD[i % AWKWARD.length]} #${i}`,
    });
  w.close();
  const ledger = quota.openSqliteQuotaLedger(join(root, LAYOUT.quotaDb));
  for (let i = 0; i < 5; i++)
    await ledger.spend({
      effect_id: `turn-${i}#quota_spend`,
      goal_id: GOAL,
      goal_instance_id: 'gi-1',
      amount: 1,
      unit: 'turn',
    });
  await ledger.close();
});

afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe("the work owner's export from its copy", () => {
  it('seals the stored rows exactly as documented, and binds the same head and rows as the live retained-prefix export', async () => {
    const ex = exportWorkCopy(join(root, LAYOUT.workDb(GOAL)), GOAL, { start: 'a', end: 'b' });
    // The framing, computed here independently of the implementation: the header line, then each
    // row's cursor, three JSON strings, and events and receipt after their UTF-8 byte lengths.
    const copy = openWorkDbCopy(join(root, LAYOUT.workDb(GOAL)));
    const rows = copy.scanRows(0, 1000);
    copy.close();
    expect(rows.length).toBe(AWKWARD.length + 40);
    const parts: Buffer[] = [Buffer.from(`${canonicalJson(ex.header)}\n`)];
    for (const r of rows) {
      const field = (text: string): Buffer =>
        Buffer.concat([
          Buffer.from(`${Buffer.from(text, 'utf8').length}\n`),
          Buffer.from(text, 'utf8'),
          Buffer.from('\n'),
        ]);
      parts.push(
        Buffer.from(
          `${r.cursor}\n${JSON.stringify(r.provider_revision)}\n${JSON.stringify(r.operation_id)}\n${JSON.stringify(r.request_digest)}\n`,
        ),
      );
      parts.push(field(r.events), field(r.receipt));
    }
    expect(ex.seal).toEqual({
      record: 'seal',
      record_count: rows.length,
      records_sha256: createHash('sha256').update(Buffer.concat(parts)).digest('hex'),
    });
    expect(ex.archive_sha256).toBe(createHash('sha256').update(canonicalJson(ex.seal)).digest('hex'));

    const provider = openSqliteWorkProvider(join(root, LAYOUT.workDb(GOAL)), { goal_id: GOAL, create: false });
    const live = await exportRetainedPrefix(provider, () => new Date());
    provider.close();
    const {
      schema_version: liveSchema,
      captured_at_start: _s,
      captured_at_end: _e,
      ...liveHead
    } = live.records[0] as unknown as Record<string, unknown>;
    const {
      schema_version: copySchema,
      captured_at_start: _s2,
      captured_at_end: _e2,
      ...copyHead
    } = ex.header as unknown as Record<string, unknown>;
    expect([liveSchema, copySchema]).toEqual(['loopx_work_retained_prefix_v0', COPY_EXPORT_SCHEMA]);
    expect(copyHead).toEqual(liveHead);
    expect(ex.record_count).toBe(live.records.length - 2);
  });

  it('frames each field by its length: text moved between events and receipt changes the seal', () => {
    const row = { cursor: 1, provider_revision: 'r', operation_id: 'o', request_digest: 'd' };
    const a = new CopySeal('{}');
    a.add({ ...row, events: '[1]\n3', receipt: '{}' });
    const b = new CopySeal('{}');
    b.add({ ...row, events: '[1]', receipt: '3\n{}' });
    expect(a.seal().sha256).not.toBe(b.seal().sha256);
    expect(framedRow({ ...row, events: '["é"]', receipt: '{}' })).toBe('1\n"r"\n"o"\n"d"\n6\n["é"]\n2\n{}\n');
  });

  it('reproduces its test vector', () => {
    const vector = JSON.parse(readFileSync(join(REPO, 'docs/test-vectors/work-copy-export-v0.json'), 'utf8')) as {
      header_line: string;
      rows: StoredCommit[];
      framed_rows: string[];
      seal_line: string;
      content_digest: string;
    };
    const seal = new CopySeal(vector.header_line);
    vector.rows.forEach((r, i) => {
      expect(framedRow(r)).toBe(vector.framed_rows[i]);
      seal.add(r);
    });
    expect([seal.seal().line, seal.seal().sha256]).toEqual([vector.seal_line, vector.content_digest]);
  });

  describe('verified against a copy', () => {
    let into: string;
    let cap: OwnerCapture;
    beforeAll(async () => {
      into = fresh('loopx-copy-export-into-');
      cap = await OWNERS.work.capture({ root }, goalScope(GOAL), into);
    });
    const verify = (exp: readonly unknown[] = cap.export) =>
      OWNERS.work.verifyOffline({ root: into, scratchDir: fresh('loopx-scratch-') }, goalScope(GOAL), {
        export: exp,
        exportItems: 'from_copy',
      });

    it('archives the header and the seal only, and the copy rebuilds that seal', () => {
      expect(cap.export_items).toBe('from_copy');
      expect(cap.export.map((r) => (r as { record: string }).record)).toEqual(['header', 'seal']);
      expect(cap.record_count).toBe(AWKWARD.length + 40);
      const v = verify();
      expect(v.findings.filter((f) => f.severity === 'error')).toEqual([]);
      expect(v.export_sha256).toBe(cap.export_sha256);
    });

    it('a header that names another head is refused', () => {
      const [header, seal] = cap.export as [Record<string, unknown>, unknown];
      const v = verify([{ ...header, head_cursor: 3 }, seal]);
      expect(v.ok).toBe(false);
      expect(v.findings.map((f) => f.code)).toContain('retained_prefix_head_mismatch');
    });

    it('a missing seal, or records after it, are refused', () => {
      expect(verify([cap.export[0]]).findings.map((f) => f.code)).toContain('retained_prefix_seal_missing');
      expect(verify([...cap.export, cap.export[1]]).findings.map((f) => f.code)).toContain(
        'retained_prefix_trailing_records',
      );
    });

    it('a row changed in the copy after capture (still a sound database) breaks the seal and changes the digest', () => {
      const tampered = fresh('loopx-copy-export-tampered-');
      mkdirSync(join(tampered, 'goals', GOAL), { recursive: true });
      const db = new Database(join(into, LAYOUT.workDb(GOAL)), { readonly: true });
      db.exec(`VACUUM INTO '${join(tampered, LAYOUT.workDb(GOAL))}'`);
      db.close();
      const w = new Database(join(tampered, LAYOUT.workDb(GOAL)));
      w.prepare('UPDATE commits SET operation_id = ? WHERE cursor = 7').run('note-forged');
      w.close();
      const v = OWNERS.work.verifyOffline({ root: tampered, scratchDir: fresh('loopx-scratch-') }, goalScope(GOAL), {
        export: cap.export,
        exportItems: 'from_copy',
      });
      expect(v.ok).toBe(false);
      expect(v.findings.map((f) => f.code)).toContain('retained_prefix_seal_mismatch');
      expect(v.export_sha256).not.toBe(cap.export_sha256);
    });
  });
});

describe("a SQLite machine owner's export from its copy (quota)", () => {
  it('rebuilds the captured seal from the copy; a spend changed after capture changes the digest', async () => {
    const into = fresh('loopx-copy-export-quota-');
    const cap = await OWNERS.quota.capture({ root }, MACHINE, into);
    expect(cap.export_items).toBe('from_copy');
    expect(cap.export).toHaveLength(2);
    const v = OWNERS.quota.verifyOffline({ root: into, scratchDir: fresh('loopx-scratch-') }, MACHINE, {
      export: cap.export,
      exportItems: 'from_copy',
    });
    expect(v.findings.filter((f) => f.severity === 'error')).toEqual([]);
    expect(v.export_sha256).toBe(cap.export_sha256);

    const db = new Database(join(into, LAYOUT.quotaDb));
    const table = (
      db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE '%amount%'").get() as {
        name: string;
      }
    ).name;
    db.prepare(`UPDATE ${table} SET amount = amount + 1 WHERE rowid = 1`).run();
    db.close();
    const after = OWNERS.quota.verifyOffline({ root: into, scratchDir: fresh('loopx-scratch-') }, MACHINE, {
      export: cap.export,
      exportItems: 'from_copy',
    });
    expect(after.ok).toBe(false);
    expect(after.export_sha256).not.toBe(cap.export_sha256);
    expect(after.findings.map((f) => f.code)).toEqual(expect.arrayContaining(['owner_export_seal_mismatch']));
  });
});

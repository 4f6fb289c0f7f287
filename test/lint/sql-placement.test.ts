/**
 * SQL lives with the owner of the tables it reads or writes (src/owners/<owner>/, the run store in
 * src/engine/run-store/, the run authority in src/run-authority/, the plumbing in src/store/) and
 * nowhere in the layers that compose them: src/runtime, src/cli and src/daemon hold no SQL. A
 * source scan over every string literal and template of those folders — a statement keyword
 * (`SELECT `, `INSERT INTO`, `UPDATE … SET`, `DELETE FROM`, `CREATE TABLE`, …, `pg_notify`) — and
 * every SQL handed to a driver (`.prepare(…)`, `.pragma(…)`, `.exec(…)` with a literal); comments
 * are not code. What must stay is listed in ALLOWED with its reason, and an entry that no longer
 * matches fails too, so the list only shrinks.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { REPO } from '../support/cli.js';

const SCANNED = ['src/runtime', 'src/cli', 'src/daemon'];

/** A statement keyword as SQL writes it (upper case, followed by what a statement needs). */
const SQL =
  /\b(SELECT\s+(\*|DISTINCT\b|[\w"(]+[\s\S]*\bFROM\b|[\w"(]+\s*\()|INSERT\s+INTO\b|UPDATE\s+[\w".]+\s+(AS\s+\w+\s+)?SET\b|DELETE\s+FROM\b|(CREATE|ALTER|DROP)\s+(UNIQUE\s+)?(TABLE|INDEX|SCHEMA|VIEW|FUNCTION|TRIGGER)\b|TRUNCATE\s+\w|PRAGMA\s+\w|(LISTEN|NOTIFY)\s+\w)|\bpg_notify\b/;
/** Driver calls whose argument is SQL (better-sqlite3's `prepare`/`pragma`/`exec`, a client's `exec`). */
const DRIVER_CALLS = new Set(['prepare', 'pragma', 'exec']);

/** SQL that stays outside the owners, each with its reason (file → reason): none, and the list only shrinks. */
const ALLOWED: Readonly<Record<string, string>> = {};

interface SqlFinding {
  readonly file: string;
  readonly line: number;
  readonly text: string;
}

/** Every SQL-looking literal and driver call of one source text. */
function sqlIn(file: string, source: string): SqlFinding[] {
  const sf = ts.createSourceFile(
    file,
    source,
    ts.ScriptTarget.Latest,
    true,
    file.endsWith('x') ? ts.ScriptKind.TSX : ts.ScriptKind.TS,
  );
  const found: SqlFinding[] = [];
  const add = (node: ts.Node, text: string) =>
    found.push({ file, line: sf.getLineAndCharacterOfPosition(node.getStart()).line + 1, text: text.slice(0, 80) });
  const visit = (node: ts.Node): void => {
    if (ts.isStringLiteral(node) || ts.isNoSubstitutionTemplateLiteral(node)) {
      if (SQL.test(node.text)) add(node, node.text);
    } else if (ts.isTemplateExpression(node)) {
      // The template's text with each substitution as a placeholder, so a keyword split by `${…}` is still seen.
      const text = [node.head.text, ...node.templateSpans.map((s) => s.literal.text)].join(' $x ');
      if (SQL.test(text)) add(node, text);
      node.templateSpans.forEach((s) => visit(s.expression));
      return;
    } else if (
      ts.isCallExpression(node) &&
      ts.isPropertyAccessExpression(node.expression) &&
      DRIVER_CALLS.has(node.expression.name.text)
    ) {
      const [arg] = node.arguments;
      if (arg && (ts.isStringLiteral(arg) || ts.isNoSubstitutionTemplateLiteral(arg) || ts.isTemplateExpression(arg)))
        add(node, `.${node.expression.name.text}(${arg.getText(sf)})`);
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return found;
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return /\.tsx?$/.test(e.name) ? [p] : [];
  });
}

const scan = (): SqlFinding[] =>
  SCANNED.flatMap((d) => sources(join(REPO, d))).flatMap((f) => sqlIn(relative(REPO, f), readFileSync(f, 'utf8')));

describe('SQL stays with the owners of its tables', () => {
  it('src/runtime, src/cli and src/daemon hold no SQL outside the reasoned allow-list', () => {
    const outside = scan().filter((f) => ALLOWED[f.file] === undefined);
    expect(outside.map((f) => `${f.file}:${f.line}: ${f.text}`)).toEqual([]);
  });

  it('every allowed file still holds the SQL it was allowed for (the list only shrinks)', () => {
    const files = new Set(scan().map((f) => f.file));
    expect(Object.keys(ALLOWED).filter((f) => !files.has(f))).toEqual([]);
  });

  it('the scan finds a statement in every form it takes, and passes prose and comments', () => {
    const found = (code: string) => sqlIn('src/runtime/probe.ts', code).length;
    for (const statement of [
      "q('SELECT 1 FROM cluster_work WHERE run_id = $1')",
      'q(`SELECT count(*) AS n FROM runs`)',
      "q('SELECT pg_notify($1, $2)')",
      'q(`INSERT INTO cluster_work (run_id) VALUES ($1)`)',
      "q(`UPDATE cluster_work SET state = 'held' WHERE run_id = ${'$'}1`)",
      'q(`UPDATE run_leases AS l SET released = true`)',
      "q('DELETE FROM outbox WHERE operation_id = $1')",
      'q(`CREATE TABLE t (a INT)`)',
      "q('CREATE UNIQUE INDEX i ON t (a)')",
      "q('ALTER TABLE t ADD COLUMN b INT')",
      'q(`DROP SCHEMA ${s} CASCADE`)',
      "q('LISTEN loopx_cluster')",
      "db.prepare('select 1').get()",
      "db.pragma('user_version = 999')",
      "db.exec('vacuum')",
    ]) {
      expect(found(statement), statement).toBe(1);
    }
    for (const prose of [
      "log('update the Todo, then select another one')",
      "rejected('x', 'Select a run to update; created tables are kept.')",
      '// SELECT 1 FROM runs\nconst a = 1;',
      '/* INSERT INTO t */ const b = 2;',
      "const code = 'update_todos';",
      're.exec(text);',
    ]) {
      expect(found(prose), prose).toBe(0);
    }
  });
});

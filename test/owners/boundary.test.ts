/**
 * The owners' map is kept: outside src/owners/ no code names an owner's files (they come from
 * LAYOUT and the OWNERS table) and no code switches on an owner's kind (it iterates the table);
 * outside the tables (src/owners/table.ts, src/owners/adoption.ts) no code compares a value with
 * an owner's name (`c.owner !== 'session'`, `owner_kind === 'goal'`): a per-owner policy is a
 * column of a table, read from its row. A source scan over string literals, switch statements and
 * comparisons; comments are not code.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { LAYOUT, OWNER_LIST, UNOWNED_STORES } from '../../src/owners/index.js';
import { REPO } from '../support/cli.js';

function sources(dir: string, withOwners = false): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory())
      return (p.endsWith(join('src', 'owners')) && !withOwners) || e.name === 'gen' ? [] : sources(p, withOwners);
    return /\.tsx?$/.test(e.name) ? [p] : [];
  });
}

/** The file without its comments (line and block), string contents kept. */
const code = (text: string): string => text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`\\])\/\/.*$/gm, '$1');

const FILES = [...sources(join(REPO, 'src')), ...sources(join(REPO, 'ui', 'src'))];
const NAMES = [...OWNER_LIST.map((o) => o.name), ...UNOWNED_STORES.map((s) => s.name)];
/** The base names of every owner's files, as the table and LAYOUT give them. */
const BASENAMES = [
  ...new Set(
    [
      ...OWNER_LIST.flatMap((o) => o.members(o.scope === 'goal' ? { goal_id: 'g' } : { goal_id: null })),
      ...UNOWNED_STORES.map((s) => s.member),
    ]
      .filter((m) => m.kind !== 'directory')
      .map((m) => m.path.split('/').at(-1)!)
      .concat(LAYOUT.goalFile('g').split('/').at(-1)!, LAYOUT.machineConfiguration.split('/').at(-1)!),
  ),
];
/** The tables: the one place a row names its owner. */
const TABLES = ['src/owners/table.ts', 'src/owners/adoption.ts'];
const COMPARED_FILES = [...sources(join(REPO, 'src'), true), ...sources(join(REPO, 'ui', 'src'))].filter(
  (f) => !TABLES.includes(relative(REPO, f)),
);

/**
 * Comparisons with an owner's name left outside the tables, each with its reason (none: the list
 * only shrinks). A new one fails the test: make the policy a column of the OWNERS table (or of the
 * adoption table) instead, as `recoveryPoint` is for the drill's RPO figure.
 */
const ALLOWED_COMPARISONS: Readonly<Record<string, string>> = {};

const EQUALITY = new Set([
  ts.SyntaxKind.EqualsEqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsEqualsToken,
  ts.SyntaxKind.EqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsToken,
]);
/** An owner's scope (`'machine' | 'goal'`): its `goal` is a scope, not the goal owner. */
const isScope = (e: ts.Expression): boolean =>
  (ts.isPropertyAccessExpression(e) && ['scope', 'boundary'].includes(e.name.text)) ||
  (ts.isCallExpression(e) && e.expression.getText() === 'boundaryOf');

/** Every `=== '<owner name>'` (and `!==`, `==`, `!=`) in `text`, as written. */
function ownerComparisons(file: string, text: string): string[] {
  const sf = ts.createSourceFile(
    file,
    text,
    ts.ScriptTarget.Latest,
    true,
    file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS,
  );
  const hits: string[] = [];
  const visit = (n: ts.Node): void => {
    if (ts.isBinaryExpression(n) && EQUALITY.has(n.operatorToken.kind)) {
      const pairs: [ts.Expression, ts.Expression][] = [
        [n.left, n.right],
        [n.right, n.left],
      ];
      if (
        pairs.some(
          ([literal, other]) => ts.isStringLiteralLike(literal) && NAMES.includes(literal.text) && !isScope(other),
        )
      )
        hits.push(n.getText(sf));
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return hits;
}

const COMPARISONS = COMPARED_FILES.flatMap((f) =>
  ownerComparisons(f, readFileSync(f, 'utf8')).map((c) => `${relative(REPO, f)}: ${c}`),
);

const escape = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const OWNER_FILE = new RegExp(`['"\`/](${BASENAMES.map(escape).join('|')})['"\`]`);

describe('the owners map', () => {
  it('no file outside src/owners/ names an owner file in a string literal', () => {
    const hits = FILES.flatMap((f) =>
      code(readFileSync(f, 'utf8'))
        .split('\n')
        .filter((line) => OWNER_FILE.test(line))
        .map((line) => `${relative(REPO, f)}: ${line.trim()}`),
    );
    expect(hits).toEqual([]);
  });

  it('no file outside src/owners/ switches on an owner kind', () => {
    const caseOf = new RegExp(`case '(${NAMES.join('|')})':`);
    const hits = FILES.filter((f) => caseOf.test(code(readFileSync(f, 'utf8')))).map((f) => relative(REPO, f));
    expect(hits).toEqual([]);
  });

  it('no file outside the tables compares a value with an owner name (a per-owner policy is a column of a table)', () => {
    expect(COMPARISONS.filter((c) => ALLOWED_COMPARISONS[c] === undefined)).toEqual([]);
  });

  it('every comparison still allowed is still in the source (a moved one leaves the list)', () => {
    expect(Object.keys(ALLOWED_COMPARISONS).filter((c) => !COMPARISONS.includes(c))).toEqual([]);
  });

  it('the comparison scan would see a violation, and not a scope or a comment', () => {
    expect(ownerComparisons('x.ts', `if (c.owner !== 'session') go();`)).toEqual([`c.owner !== 'session'`]);
    expect(ownerComparisons('x.ts', 'const n = list.filter((c) => `goal` === c.owner_kind).length;')).toEqual([
      '`goal` === c.owner_kind',
    ]);
    expect(ownerComparisons('x.tsx', `const e = owner == "effect" ? <b /> : null;`)).toEqual([`owner == "effect"`]);
    expect(
      ownerComparisons('x.ts', `const s = o.scope === 'goal' || boundaryOf(o) === 'goal' || r.boundary !== 'goal';`),
    ).toEqual([]);
    expect(ownerComparisons('x.ts', `// if (owner === 'quota')\nconst q = owner === other;`)).toEqual([]);
    expect(COMPARED_FILES.some((f) => relative(REPO, f) === 'src/recovery/adopt-plan.ts')).toBe(true);
    expect(COMPARED_FILES.some((f) => relative(REPO, f).startsWith('src/owners/'))).toBe(true);
  });

  it('the scan would see a violation', () => {
    expect(BASENAMES).toEqual(
      expect.arrayContaining([
        'registry.json',
        'work.db',
        'sessions.db',
        'engine.db',
        'goal.json',
        'configuration.json',
      ]),
    );
    expect(OWNER_FILE.test(`const p = join(root, 'sessions.db');`)).toBe(true);
    expect(OWNER_FILE.test('const p = `${dir}/work.db`;')).toBe(true);
    expect(OWNER_FILE.test(`// sessions.db in a comment`.replace(/\/\/.*/, ''))).toBe(false);
  });
});

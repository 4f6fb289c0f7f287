/**
 * Providers are a table, not conditionals: outside the provider table (src/owners/providers/) no
 * code compares a value with a storage provider's name — `location.provider === 'postgresql'`,
 * `provider !== 'sqlite'`, `… === POSTGRESQL_PROVIDER`, a `case 'postgresql':` on a provider — it
 * asks the location's row (`providerOf`, `serviceOf`, `inRoot`, …) instead. A provider's own
 * implementation file (`<owner>/postgres.ts`, `sqlite.ts`, `memory.ts`, `pg-*.ts`) may check that
 * an identity is its OWN provider's, and nothing else. A source scan of every comparison and
 * switch in src/ (comments are not code); what must stay is listed with its reason, and an entry
 * that no longer matches fails too, so the list only shrinks.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { STORE_PROVIDERS } from '../../../src/owners/index.js';
import { REPO } from '../../support/cli.js';

/** The registry: the one place provider names meet behaviour. */
const REGISTRY = 'src/owners/providers/';
const NAMES = new Set(STORE_PROVIDERS.map((p) => p.name));
/** The constants src/store exports for the names (`<NAME>_PROVIDER`), by the name they hold. */
const CONSTANTS: Readonly<Record<string, string>> = {
  POSTGRESQL_PROVIDER: 'postgresql',
  SQLITE_PROVIDER: 'sqlite',
  MEMORY_PROVIDER: 'memory',
};
/** A provider's own implementation files, by their base name: the provider they implement. */
const ownProvider = (file: string): string | undefined => {
  const name = basename(file, '.ts');
  if (name === 'postgres' || name.startsWith('pg-')) return 'postgresql';
  return name === 'sqlite' || name === 'memory' ? name : undefined;
};

/** Comparisons left outside the registry, each with its reason (none: the list only shrinks, and it is empty). */
const ALLOWED: Readonly<Record<string, string>> = {};

const EQUALITY = new Set([
  ts.SyntaxKind.EqualsEqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsEqualsToken,
  ts.SyntaxKind.EqualsEqualsToken,
  ts.SyntaxKind.ExclamationEqualsToken,
]);

/** The provider a literal or a provider constant names, if it is one. */
function named(e: ts.Expression): string | undefined {
  if (ts.isStringLiteralLike(e) && NAMES.has(e.text)) return e.text;
  if (ts.isIdentifier(e)) return CONSTANTS[e.text];
  return undefined;
}

/** Every comparison of a provider-ish value with a provider's name in `text`, as written, with the name compared. */
export function providerConditionals(file: string, text: string): { text: string; provider: string }[] {
  const sf = ts.createSourceFile(
    file,
    text,
    ts.ScriptTarget.Latest,
    true,
    file.endsWith('.tsx') ? ts.ScriptKind.TSX : ts.ScriptKind.TS,
  );
  const hits: { text: string; provider: string }[] = [];
  const about = (e: ts.Expression) => /provider/i.test(e.getText(sf));
  const visit = (n: ts.Node): void => {
    if (ts.isBinaryExpression(n) && EQUALITY.has(n.operatorToken.kind)) {
      for (const [name, other] of [
        [n.left, n.right],
        [n.right, n.left],
      ] as const) {
        const provider = named(name);
        // A literal compared with something about a provider (a member kind `'sqlite'` is not); a constant always.
        if (provider !== undefined && (ts.isIdentifier(name) || about(other))) {
          hits.push({ text: n.getText(sf), provider });
          break;
        }
      }
    } else if (ts.isSwitchStatement(n) && about(n.expression)) {
      for (const clause of n.caseBlock.clauses) {
        const provider = ts.isCaseClause(clause) ? named(clause.expression) : undefined;
        if (provider !== undefined)
          hits.push({ text: `switch (${n.expression.getText(sf)}) ${clause.getText(sf).split('\n')[0]}`, provider });
      }
    }
    ts.forEachChild(n, visit);
  };
  visit(sf);
  return hits;
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'gen' ? [] : sources(p);
    return /\.tsx?$/.test(e.name) ? [p] : [];
  });
}

const FILES = [...sources(join(REPO, 'src')), ...sources(join(REPO, 'ui', 'src'))].map((f) => relative(REPO, f));
const FOUND = FILES.filter((f) => !f.startsWith(REGISTRY)).flatMap((f) =>
  providerConditionals(f, readFileSync(join(REPO, f), 'utf8'))
    // Its own implementation file names its own provider (an identity it minted is its own).
    .filter((c) => ownProvider(f) !== c.provider)
    .map((c) => `${f}: ${c.text}`),
);

describe('storage providers are a table, not conditionals', () => {
  it('no file outside the provider table compares a value with a provider name (ask the location’s row)', () => {
    expect(FOUND.filter((c) => ALLOWED[c] === undefined)).toEqual([]);
  });

  it('every comparison still allowed is still in the source (a moved one leaves the list)', () => {
    expect(Object.keys(ALLOWED).filter((c) => !FOUND.includes(c))).toEqual([]);
  });

  it('the scan sees every form a provider conditional takes, and passes member kinds, other providers and comments', () => {
    const seen = (code: string) => providerConditionals('x.ts', code).map((c) => c.text);
    expect(seen(`if (location.provider === 'postgresql') go();`)).toEqual([`location.provider === 'postgresql'`]);
    expect(seen(`const x = 'sqlite' !== at.provider;`)).toEqual([`'sqlite' !== at.provider`]);
    expect(seen(`const x = parseStoreIdentity(id)?.provider === POSTGRESQL_PROVIDER;`)).toEqual([
      `parseStoreIdentity(id)?.provider === POSTGRESQL_PROVIDER`,
    ]);
    expect(seen(`const pg = provider == "postgresql";`)).toEqual([`provider == "postgresql"`]);
    expect(seen(`switch (l.provider) {\n case 'sqlite': break;\n case 'x': break; }`)).toEqual([
      `switch (l.provider) case 'sqlite': break;`,
    ]);
    expect(seen(`const db = members.filter((m) => m.kind === 'sqlite');`)).toEqual([]);
    expect(seen(`if (def.model.provider === SCRIPTED_PROVIDER || model.provider === 'scripted') go();`)).toEqual([]);
    expect(seen(`// if (location.provider === 'postgresql')\nconst a = 1;`)).toEqual([]);
    expect(FILES).toContain('src/owners/work/work.ts');
    expect(FILES.some((f) => f.startsWith(REGISTRY))).toBe(true);
  });

  it('a provider implementation file may name its own provider only', () => {
    expect(ownProvider('src/owners/work/postgres.ts')).toBe('postgresql');
    expect(ownProvider('src/owners/pg-port.ts')).toBe('postgresql');
    expect(ownProvider('src/owners/work/sqlite.ts')).toBe('sqlite');
    expect(ownProvider('src/owners/work/work.ts')).toBeUndefined();
  });
});

/**
 * Operator text speaks of what the operator sees and can do: no roadmap labels (M1…M4) and no
 * specification section numbers (§9, RFC 0007) in any text the CLI, the daemon or the UI shows.
 * Every string literal, template part and JSX text of the sources is read with the TypeScript
 * parser (comments, which are for the developers, are not text anyone is shown).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { REPO } from '../support/cli.js';

// The project's own specifications (RFC 0007) — not IETF standards such as RFC 3339, which name a format.
const LABELS: readonly RegExp[] = [/\bM[1-4]\b/, /§\s?\d/, /\bRFC[ -]?0\d{3}\b/i];

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((n) => {
    const p = join(dir, n);
    if (statSync(p).isDirectory()) return n === 'generated' || n === 'gen' ? [] : files(p); // generated code (protobuf, schema validators) shows no text of its own
    return /\.(ts|tsx)$/.test(n) && !n.endsWith('.d.ts') ? [p] : [];
  });
}

/** The texts a source file can show: its string literals, template parts and JSX text, with their lines. */
function texts(path: string): { line: number; text: string }[] {
  const src = ts.createSourceFile(
    path,
    readFileSync(path, 'utf8'),
    ts.ScriptTarget.Latest,
    true,
    /\.tsx(\.txt)?$/.test(path) ? ts.ScriptKind.TSX : ts.ScriptKind.TS,
  );
  const out: { line: number; text: string }[] = [];
  const visit = (node: ts.Node) => {
    if (
      ts.isStringLiteral(node) ||
      ts.isNoSubstitutionTemplateLiteral(node) ||
      ts.isTemplateHead(node) ||
      ts.isTemplateMiddle(node) ||
      ts.isTemplateTail(node) ||
      ts.isJsxText(node)
    ) {
      // An import's module name is not shown to anyone.
      if (!ts.isImportDeclaration(node.parent) && !ts.isExportDeclaration(node.parent)) {
        out.push({ line: src.getLineAndCharacterOfPosition(node.getStart()).line + 1, text: node.text });
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(src);
  return out;
}

describe('operator text', () => {
  it('names no roadmap label or specification section in the CLI, the daemon or the UI', () => {
    const found: string[] = [];
    for (const f of [...files(join(REPO, 'src')), ...files(join(REPO, 'ui', 'src'))]) {
      for (const t of texts(f))
        if (LABELS.some((re) => re.test(t.text)))
          found.push(`${relative(REPO, f)}:${t.line}: ${t.text.trim().slice(0, 120)}`);
    }
    expect(found).toEqual([]);
  });

  it('would notice one (the scanner reads JSX text and template parts, not comments)', () => {
    const probe = join(REPO, 'test', 'cli', 'fixtures', 'operator-text-probe.tsx.txt');
    const shown = texts(probe).map((t) => t.text);
    expect(shown.filter((t) => LABELS.some((re) => re.test(t)))).toHaveLength(3);
  });
});

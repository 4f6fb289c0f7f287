/**
 * The size rules and the formatter `npm run lint` runs, shown at work with the project's own
 * configuration: a function over 80 lines (blank lines and comments not counted) and a file over
 * 600 are refused unless the function states its reason; the formatter refuses text it would
 * change and accepts text it wrote — so a configuration that accepts everything cannot pass.
 */
import { join } from 'node:path';
import { ESLint } from 'eslint';
import * as prettier from 'prettier';
import { describe, expect, it } from 'vitest';
import { REPO } from '../support/cli.js';

const eslint = new ESLint({ cwd: REPO });

async function sizeFindings(at: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(source, { filePath: join(REPO, at) });
  return result!.messages
    .filter((m) => m.ruleId === 'max-lines-per-function' || m.ruleId === 'max-lines')
    .map((m) => m.ruleId!);
}

const functionOf = (statements: number, header = '') =>
  `${header}export function long(): number {\n  let n = 0;\n${'  n += 1;\n\n  // a comment\n'.repeat(statements)}  return n;\n}\n`;

describe('size rules', () => {
  it('a function of more than 80 lines of code is refused; blank lines and comments do not count', async () => {
    expect(await sizeFindings('src/core/probe.ts', functionOf(79))).toEqual(['max-lines-per-function']);
    expect(await sizeFindings('src/core/probe.ts', functionOf(70))).toEqual([]); // 212 lines, 72 of code
    expect(await sizeFindings('ui/src/probe.tsx', functionOf(79))).toEqual(['max-lines-per-function']);
  });

  it('a longer function passes only with its reason at the end of its header comment', async () => {
    const reasoned =
      '/**\n * One closure over shared state.\n */\n// eslint-disable-next-line max-lines-per-function -- one closure over shared state\n';
    expect(await sizeFindings('src/core/probe.ts', functionOf(79, reasoned))).toEqual([]);
  });

  it('a file over 600 lines is refused', async () => {
    const lines = Array.from({ length: 601 }, (_, i) => `export const v${i} = ${i};`).join('\n');
    expect(await sizeFindings('src/core/probe.ts', `${lines}\n`)).toEqual(['max-lines']);
  });
});

describe('formatter', () => {
  const options = async (at: string) => ({
    ...(await prettier.resolveConfig(join(REPO, at))),
    filepath: join(REPO, at),
  });

  it('refuses text it would change and accepts what it wrote', async () => {
    const opts = await options('src/core/probe.ts');
    const messy = 'export const x = {a:1,\n  b : "two"}\n';
    expect(await prettier.check(messy, opts)).toBe(false);
    expect(await prettier.check(await prettier.format(messy, opts), opts)).toBe(true);
  });

  it('every committed source file is formatted (what `npm run lint` checks)', async () => {
    const info = await prettier.getFileInfo(join(REPO, 'src/runtime/index.ts'), {
      ignorePath: join(REPO, '.prettierignore'),
    });
    expect(info.ignored).toBe(false);
    const { readFileSync } = await import('node:fs');
    for (const file of ['src/runtime/index.ts', 'src/engine/engine.ts', 'ui/src/App.tsx']) {
      expect(await prettier.check(readFileSync(join(REPO, file), 'utf8'), await options(file)), file).toBe(true);
    }
  });
});

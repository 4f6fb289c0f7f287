/**
 * The owners' map is kept: outside src/owners/ no code names an owner's files (they come from
 * LAYOUT and the OWNERS table) and no code switches on an owner's kind (it iterates the table).
 * A source scan over string literals and switch statements; comments are not code.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import { LAYOUT, OWNER_LIST, UNOWNED_STORES } from '../../src/owners/index.js';
import { REPO } from '../support/cli.js';

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return p.endsWith(join('src', 'owners')) || e.name === 'gen' ? [] : sources(p);
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
    [...OWNER_LIST.flatMap((o) => o.members(o.scope === 'goal' ? { goal_id: 'g' } : { goal_id: null })), ...UNOWNED_STORES.map((s) => s.member)]
      .filter((m) => m.kind !== 'directory')
      .map((m) => m.path.split('/').at(-1)!)
      .concat(LAYOUT.goalFile('g').split('/').at(-1)!, LAYOUT.machineConfiguration.split('/').at(-1)!),
  ),
];
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

  it('the scan would see a violation', () => {
    expect(BASENAMES).toEqual(expect.arrayContaining(['registry.json', 'work.db', 'sessions.db', 'engine.db', 'goal.json', 'configuration.json']));
    expect(OWNER_FILE.test(`const p = join(root, 'sessions.db');`)).toBe(true);
    expect(OWNER_FILE.test('const p = `${dir}/work.db`;')).toBe(true);
    expect(OWNER_FILE.test(`// sessions.db in a comment`.replace(/\/\/.*/, ''))).toBe(false);
  });
});

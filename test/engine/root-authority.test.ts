/**
 * A root belongs to one run authority (engine/ownership.ts): it records the authority that binds
 * it, a root made before that was recorded takes the authority that already holds its binding, a
 * root with committed work that an authority never bound is refused under it, and the move to
 * another authority is the operator's, previewed and confirmed by digest (`loopx authority
 * bind-root --adopt`). A Goal work store ahead of its mark — a writer killed between its commit and
 * its mark — advances the mark and is never refused. The real CLI, real SQLite.
 */
import Database from 'better-sqlite3';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { addTodo } from '../../src/runtime/index.js';
import { loopxAsync, tempRoot } from '../support/cli.js';

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Doc = any;

const ok = async (args: readonly string[]): Promise<Doc> => {
  const r = await loopxAsync([...args, '--json']);
  expect(r.status, `${args.join(' ')}\n${r.stderr}${r.stdout}`).toBe(0);
  return r.json();
};
const refusal = async (args: readonly string[]): Promise<{ status: number | null; error: Doc }> => {
  const r = await loopxAsync([...args, '--json']);
  expect(r.status, `${args.join(' ')} was admitted`).not.toBe(0);
  return { status: r.status, error: JSON.parse(r.stdout || '{}').error };
};

/** A root with a Goal and a Todo, made under the authority directory `authority`. */
async function rootUnder(authority: string): Promise<string> {
  const root = tempRoot('loopx-root-authority-');
  const at = ['--root', root, '--authority-dir', authority];
  await ok(['init', ...at]);
  await ok(['goal', 'create', 'launch', '--title', 'Ship the launch post', ...at]);
  await ok(['todo', 'add', '--goal', 'launch', '--title', 'Draft the outline', ...at]);
  return root;
}

/** The root as one made before it recorded its authority: the facts removed from its engine.db. */
function forgetRecordedAuthority(root: string): void {
  const db = new Database(join(root, 'engine.db'));
  try {
    db.prepare("DELETE FROM meta WHERE key IN ('authority_scope', 'authority_revision')").run();
  } finally {
    db.close();
  }
}

const newAuthority = () => join(mkdtempSync(join(tmpdir(), 'loopx-authority-')), 'authority');

describe('a root belongs to one run authority', () => {
  it('a root made before the authority was recorded takes the authority that holds its binding, at its first open; another authority is refused', async () => {
    const a = newAuthority();
    const root = await rootUnder(a);
    forgetRecordedAuthority(root);
    await ok([
      'todo',
      'add',
      '--goal',
      'launch',
      '--title',
      'Review with design',
      '--root',
      root,
      '--authority-dir',
      a,
    ]);
    const other = await refusal([
      'todo',
      'add',
      '--goal',
      'launch',
      '--title',
      'Not here',
      '--root',
      root,
      '--authority-dir',
      newAuthority(),
    ]);
    expect(other).toMatchObject({ status: 3, error: { code: 'root_authority_mismatch' } });
    expect((await ok(['todo', 'list', '--goal', 'launch', '--root', root])).todos).toHaveLength(2);
  });

  it('a root with committed work that this authority never bound (and that records none) is refused root_authority_mismatch, not adopted silently', async () => {
    const root = await rootUnder(newAuthority());
    forgetRecordedAuthority(root);
    const r = await refusal([
      'work',
      'run',
      '--goal',
      'launch',
      '--agent',
      'examples/agents/goal-worker.json',
      '--root',
      root,
      '--authority-dir',
      newAuthority(),
    ]);
    expect(r).toMatchObject({ status: 3, error: { code: 'root_authority_mismatch' } });
    expect(r.error.message).toContain('never bound it');
  });

  it('bind-root --adopt previews the move with a digest, refuses another digest, and with it moves the root: the new authority writes, the old one is refused', async () => {
    const a = newAuthority();
    const b = newAuthority();
    const root = await rootUnder(a);
    const at = (dir: string) => ['--root', root, '--authority-dir', dir];
    const preview = await ok(['authority', 'bind-root', '--adopt', ...at(b)]);
    expect(preview).toMatchObject({
      state: 'preview',
      from_authority: expect.stringMatching(/^[0-9a-f]{16}$/),
      to_authority: expect.stringMatching(/^[0-9a-f]{16}$/),
    });
    expect(preview.from_authority).not.toBe(preview.to_authority);
    // The preview changed nothing: the root still belongs to its authority.
    await ok(['todo', 'add', '--goal', 'launch', '--title', 'Still here', ...at(a)]);
    expect(
      (await refusal(['authority', 'bind-root', '--adopt', '--confirm', '0'.repeat(64), ...at(b)])).error.code,
    ).toBe('authority_adoption_digest_mismatch');
    expect((await refusal(['authority', 'bind-root', '--confirm', preview.digest, ...at(b)])).status).toBe(2);
    // The digest is over what the move does now: adding a Todo did not change it.
    expect(await ok(['authority', 'bind-root', '--adopt', '--confirm', preview.digest, ...at(b)])).toMatchObject({
      state: 'adopted',
      to_authority: preview.to_authority,
    });
    await ok(['todo', 'add', '--goal', 'launch', '--title', 'Under the new authority', ...at(b)]);
    expect(
      (await refusal(['todo', 'add', '--goal', 'launch', '--title', 'Under the old one', ...at(a)])).error.code,
    ).toBe('root_authority_mismatch');
    expect((await ok(['authority', 'bind-root', '--adopt', ...at(b)])).state).toBe('unchanged');
  });

  it('a Goal work store ahead of its mark (committed without one) advances the mark and is not refused', async () => {
    const a = newAuthority();
    const root = await rootUnder(a);
    // Committed by a writer that never marked it, as one killed between its commit and its mark.
    await addTodo(root, 'launch', { operation_id: 'unmarked-1', title: 'Committed, not marked' });
    await addTodo(root, 'launch', { operation_id: 'unmarked-2', title: 'Also not marked' });
    await ok(['todo', 'add', '--goal', 'launch', '--title', 'After the crash', '--root', root, '--authority-dir', a]);
    expect((await ok(['todo', 'list', '--goal', 'launch', '--root', root])).todos).toHaveLength(4);
  });
});

/**
 * §9 "New live work blocks byte rollback": a Goal recovered into R, then new live work in R (a
 * Todo added, a work run that delivers). Asking to roll the recovery back is refused — abort is
 * too late and its one next action, run as printed, only finishes forward (changing nothing). A
 * byte copy of R taken before the new write is no root and no recovery: at a new path, or put in
 * R's place, its engine writers and every `recover` command there refuse. The same backup cannot
 * be adopted again elsewhere by the same user. The inert workspace the recovery was planned from
 * can be removed, and removing it changes no live state.
 *
 * The work-store writers (`todo add|update`, `goal create|pause|resume|retire`) check the root's
 * binding too (test/daemon/goals.test.ts), and a rollback of R's files in place — the directory
 * kept, its contents replaced by an earlier copy — is refused `root_rolled_back`
 * (test/recovery/rolled-back.test.ts).
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWebhookSink, type WebhookSink } from '../../src/dev/index.js';
import { loopxAsync } from '../support/cli.js';
import { okAsync, planAsync, sourceWithBackup, type Doc, type Source } from './support/adopt.js';
import { refusedAs } from './support/adopt-users.js';

let sink: WebhookSink;
let s: Source;
let R: string;
let digest: string;
/** A byte copy of R taken after the adoption, before the new live work. */
let earlier: string;

const copy = (from: string, to: string) => expect(spawnSync('cp', ['-a', from, to]).status).toBe(0);

beforeAll(async () => {
  sink = await startWebhookSink({ port: 0 });
  s = await sourceWithBackup(sink, { afterCapture: false });
  const p = await planAsync(s);
  R = p.destination;
  digest = p.doc.plan_digest;
  expect((await okAsync(s, ['recover', 'apply', '--destination', R, '--confirm', digest])).state).toBe('complete');
  earlier = join(s.dir, 'earlier');
  copy(R, earlier);
  // New live work in R: a Todo added, and a run that finishes t3 and delivers.
  await okAsync(s, ['todo', 'add', '--goal', 'launch', '--title', 'Write the follow-up', '--root', R]);
  expect((await okAsync(s, ['work', 'run', '--goal', 'launch', '--agent', s.agents.cont, '--root', R])).status).toBe(
    'completed',
  );
}, 240_000);
afterAll(async () => {
  await sink.close();
});

/** Every file under `dir` with the sha256 of its bytes. */
function tree(dir: string, base = dir): Record<string, string> {
  const out: Record<string, string> = {};
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, e.name);
    if (e.isDirectory()) Object.assign(out, tree(path, base));
    else out[path.slice(base.length + 1)] = createHash('sha256').update(readFileSync(path)).digest('hex');
  }
  return out;
}
const todos = async (root: string): Promise<Doc[]> =>
  (await okAsync(s, ['todo', 'list', '--goal', 'launch', '--root', root])).todos;

/** The engine's writers and every `recover` command in `dir`, each with its refusal. */
async function writersIn(dir: string) {
  return {
    work: await refusedAs(s, ['work', 'run', '--goal', 'launch', '--agent', s.agents.cont, '--root', dir]),
    status: await refusedAs(s, ['recover', 'status', '--destination', dir]),
    apply: await refusedAs(s, ['recover', 'apply', '--destination', dir, '--confirm', digest]),
    resolve: await refusedAs(s, [
      'recover',
      'resolve',
      '--destination',
      dir,
      '--hold',
      `receiver:webhook:127.0.0.1:${sink.port}`,
    ]),
    abort: await refusedAs(s, ['recover', 'abort', '--destination', dir]),
  };
}
const REFUSED_COPY = {
  work: { status: 3, code: 'root_is_copy' },
  status: { status: 3, code: 'recover_plan_elsewhere' },
  apply: { status: 3, code: 'recover_plan_elsewhere' },
  resolve: { status: 3, code: 'recover_plan_elsewhere' },
  abort: { status: 3, code: 'recover_plan_elsewhere' },
};

describe('new live work after an adoption blocks a byte rollback', () => {
  it('refuses to abort the adoption; the one next action, run as printed, only finishes forward and changes nothing', async () => {
    const before = tree(R);
    const r = await loopxAsync(['recover', 'abort', '--destination', R, '--authority-dir', s.authority, '--json']);
    expect(r.status).toBe(4);
    const error = r.json().error as { code: string; next_action: string };
    expect(error.code).toBe('recover_abort_too_late');
    expect(tree(R)).toEqual(before);
    const command = /^[^:]+: loopx (.+)$/.exec(error.next_action)![1]!.split(' ');
    expect(command.slice(0, 2)).toEqual(['recover', 'apply']);
    const forward = await loopxAsync([...command, '--json']);
    expect(forward.status, forward.stderr).toBe(0);
    expect(forward.json()).toMatchObject({ state: 'complete', plan_digest: digest, holds: [] });
    // Nothing was applied again: R's files are as the new live work left them.
    expect(tree(R)).toEqual(before);
    expect((await todos(R)).map((t) => [t.todo_id, t.status])).toEqual([
      ['t1', 'done'],
      ['t2', 'blocked'],
      ['t3', 'done'],
      ['t4', 'open'],
    ]);
  }, 180_000);

  it('a byte copy of R taken before the new write, at a new path, is no root and no recovery: its writers refuse', async () => {
    const at = join(s.dir, 'copy-elsewhere');
    copy(earlier, at);
    const live = tree(R);
    const attempts = sink.attempts().attempts.length;
    expect(await writersIn(at)).toEqual(REFUSED_COPY);
    expect(tree(R)).toEqual(live);
    expect(sink.attempts().attempts.length).toBe(attempts);
  }, 180_000);

  it('the same backup cannot be adopted again into another destination by the same user', async () => {
    const other = await planAsync(s, 'again');
    expect(
      await refusedAs(s, ['recover', 'apply', '--destination', other.destination, '--confirm', other.doc.plan_digest]),
    ).toEqual({
      status: 4,
      code: 'recover_lifetime_superseded_elsewhere',
    });
    expect(readdirSync(other.destination)).toEqual(['recovery']);
  }, 180_000);

  it('the inert workspace the recovery was planned from stays removable: removing it changes no live state', async () => {
    const live = tree(R);
    const source = tree(s.root);
    rmSync(s.workspace, { recursive: true });
    expect(tree(R)).toEqual(live);
    expect(tree(s.root)).toEqual(source);
    expect(await okAsync(s, ['recover', 'status', '--destination', R])).toMatchObject({
      state: 'complete',
      fences: { source_established: true, destination_established: true },
    });
    expect((await okAsync(s, ['todo', 'add', '--goal', 'launch', '--title', 'Still live', '--root', R])).result).toBe(
      'applied',
    );
  }, 180_000);

  it('R’s directory replaced by its earlier copy is no root and no recovery either', async () => {
    // Copied beside R first, then renamed into its place: a directory of its own (another inode).
    const ino = statSync(R).ino;
    const beside = `${R}.rollback`;
    copy(earlier, beside);
    rmSync(R, { recursive: true });
    renameSync(beside, R);
    expect(statSync(R).ino).not.toBe(ino);
    const attempts = sink.attempts().attempts.length;
    expect(await writersIn(R)).toEqual(REFUSED_COPY);
    expect(sink.attempts().attempts.length).toBe(attempts);
  }, 180_000);
});

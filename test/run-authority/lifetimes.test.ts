/**
 * Goal lifetime supersessions in the local authority's directory (lifetimes.ts): one private file
 * per superseded lifetime, `lifetimes/<goal_instance_id>.json` (0600 in a 0700 directory), created
 * exclusively and durably, read strictly — a damaged record, a planted symlink or anything but a
 * private regular file is refused with a typed code, never read as "not superseded" — and of two
 * processes racing to supersede one lifetime exactly one records it. The contract cases (replay,
 * conflict, invalid input, unknown id) are in the conformance suite.
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import {
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  symlinkSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { GOAL_ID } from '../../src/owners/index.js';
import { GOAL_ALIAS } from '../../src/run-authority/lifetimes.js';
import { exitCodeOf } from '../../src/core/index.js';
import { goalLifetimeSuperseded, type LifetimeSupersession } from '../../src/run-authority/index.js';
import {
  asyncCodeOf,
  asyncErrorOf,
  childReadLifetime,
  cleanup,
  FOREIGN_UID,
  ginst,
  modeOf,
  open,
  snapshotTree,
  spawnSuperseder,
  supersession,
  tempBase,
} from './support.js';

afterAll(cleanup);

const OLD = ginst('a');
const fileOf = (dir: string, id = OLD): string => join(dir, 'lifetimes', `${id}.json`);

/** A fresh authority with the supersession of OLD recorded; its file's exact bytes. */
async function superseded(): Promise<{ dir: string; stored: LifetimeSupersession; bytes: Buffer }> {
  const dir = join(tempBase(), 'authority');
  const stored = (await open(dir).supersedeLifetime(supersession())).record;
  return { dir, stored, bytes: readFileSync(fileOf(dir)) };
}

describe('the lifetime file', () => {
  it('is a private regular file (0600) in a private lifetimes/ directory (0700) even under umask 0, holding the v2 record, with no temp file left', async () => {
    const dir = join(tempBase(), 'authority');
    const previous = process.umask(0);
    let stored: LifetimeSupersession;
    try {
      stored = (await open(dir).supersedeLifetime(supersession())).record;
    } finally {
      process.umask(previous);
    }
    expect(modeOf(join(dir, 'lifetimes'))).toBe(0o700);
    expect(modeOf(fileOf(dir))).toBe(0o600);
    expect(readdirSync(join(dir, 'lifetimes'))).toEqual([`${OLD}.json`]);
    expect(JSON.parse(readFileSync(fileOf(dir), 'utf8'))).toStrictEqual({
      schema: 'loopx.run-authority.lifetime/v2',
      ...stored,
    });
  });

  it('survives reopening: another instance and the reopened authority read it exactly, replay it with its first recorded_at, and refuse a conflicting request', async () => {
    const dir = join(tempBase(), 'authority');
    const first = open(dir);
    const stored = (await first.supersedeLifetime(supersession())).record;
    expect(await open(dir, false).lifetimeSupersession(OLD)).toStrictEqual(stored);
    await first.close();
    const reopened = open(dir, false);
    expect(await reopened.lifetimeSupersession(OLD)).toStrictEqual(stored);
    expect(await reopened.supersedeLifetime(supersession())).toStrictEqual({ record: stored, replayed: true });
    expect(await asyncCodeOf(reopened.supersedeLifetime(supersession({ successor_instance_id: ginst('c') })))).toBe(
      'goal_lifetime_already_superseded',
    );
    expect(await reopened.lifetimeSupersession(OLD)).toStrictEqual(stored);
  });

  it('a writer of a superseded lifetime refuses with goal_lifetime_superseded: a conflict (exit 4) naming the Goal, whose one next action continues it in the root it was recovered into', () => {
    const refusal = goalLifetimeSuperseded('goal-a');
    expect(refusal).toMatchObject({ code: 'goal_lifetime_superseded', kind: 'conflict' });
    expect(exitCodeOf(refusal)).toBe(4);
    expect(refusal.message).toBe(
      "Goal goal-a's lifetime was replaced by a recovery into another root; this root may no longer write or deliver for it.",
    );
    expect(refusal.nextAction).toBe(
      "see where this Goal's lifetime went (this root keeps it as history): loopx goal show goal-a",
    );
    expect(goalLifetimeSuperseded('goal-a', '../recovered').nextAction).toBe(
      'continue the Goal in the root it was recovered into: loopx goal show goal-a --root ../recovered',
    );
  });

  it('the alias form checked here is the goal owner’s (owners/layout.ts GOAL_ID)', () => {
    expect(GOAL_ALIAS.source).toBe(GOAL_ID.source);
    expect(GOAL_ALIAS.flags).toBe(GOAL_ID.flags);
  });
});

describe('records across versions, and the source root', () => {
  it('a v1 record (written before the source root was kept) reads with source_root null and answers a request naming a source root as a replay', async () => {
    const dir = join(tempBase(), 'authority');
    await open(dir).close();
    const v1 = {
      schema: 'loopx.run-authority.lifetime/v1',
      ...supersession(),
      recorded_at: '2025-01-01T00:00:00.000Z',
    };
    writeFileSync(fileOf(dir), `${JSON.stringify(v1)}\n`, { mode: 0o600 });
    const a = open(dir, false);
    expect(await a.lifetimeSupersession(OLD)).toMatchObject({ goal_instance_id: OLD, source_root: null });
    expect((await a.supersedeLifetime({ ...supersession(), source_root: 'root_source' })).replayed).toBe(true);
    expect(await a.lifetimesSupersededIn('root_source', 'launch')).toEqual([]);
  });

  it('a v2 record names its source root; lifetimesSupersededIn finds it by that root and alias only', async () => {
    const dir = join(tempBase(), 'authority');
    const a = open(dir);
    const { record } = await a.supersedeLifetime({ ...supersession(), source_root: 'root_source' });
    expect(record.source_root).toBe('root_source');
    expect(await a.lifetimesSupersededIn('root_source', record.goal_id)).toEqual([record]);
    expect(await a.lifetimesSupersededIn('root_other', record.goal_id)).toEqual([]);
    expect(await a.lifetimesSupersededIn('root_source', 'another-goal')).toEqual([]);
    expect(await asyncCodeOf(a.supersedeLifetime({ ...supersession(), source_root: 'root_elsewhere' }))).toBe(
      'goal_lifetime_already_superseded',
    );
  });
});

describe('the authority’s revision is kept outside lifetimes/', () => {
  it('counts every record; a lifetimes/ holding fewer (moved away, or a partial copy) is authority_rolled_back on every read, never "not superseded"', async () => {
    const dir = join(tempBase(), 'authority');
    const a = open(dir);
    await a.supersedeLifetime(supersession());
    expect(await a.revision()).toBe(1);
    expect(JSON.parse(readFileSync(join(dir, 'revision'), 'utf8'))).toEqual({ lifetimes: 1 });
    renameSync(join(dir, 'lifetimes'), join(dir, 'lifetimes-aside'));
    const b = open(dir, false);
    expect(await asyncCodeOf(b.lifetimeSupersession(OLD))).toBe('authority_rolled_back');
    expect(await asyncCodeOf(b.revision())).toBe('authority_rolled_back');
    expect(await asyncCodeOf(b.supersedeLifetime(supersession({ goal_instance_id: ginst('d') })))).toBe(
      'authority_rolled_back',
    );
  });

  it('an authority from before the revision was kept counts what it holds at its first read', async () => {
    const dir = join(tempBase(), 'authority');
    await open(dir).supersedeLifetime(supersession());
    unlinkSync(join(dir, 'revision'));
    const a = open(dir, false);
    expect(await a.lifetimeSupersession(OLD)).toMatchObject({ goal_instance_id: OLD });
    expect(JSON.parse(readFileSync(join(dir, 'revision'), 'utf8'))).toEqual({ lifetimes: 1 });
  });
});

describe('a damaged record is refused, never read as not superseded', () => {
  const valid = (): Record<string, unknown> => ({
    schema: 'loopx.run-authority.lifetime/v1',
    ...supersession(),
    recorded_at: '2025-01-01T00:00:00.000Z',
  });
  const json = (doc: unknown): string => `${JSON.stringify(doc)}\n`;
  const { schema: _schema, ...withoutSchema } = valid();
  const cases: Array<[string, string]> = [
    ['not JSON', 'not json\n'],
    ['truncated', json(valid()).slice(0, 40)],
    ['empty', ''],
    ['null', 'null\n'],
    ['an array', json([valid()])],
    ['a foreign field', json({ ...valid(), superseded_by: 'someone' })],
    ['a missing field', json(withoutSchema)],
    ['another schema', json({ ...valid(), schema: 'loopx.run-authority.lifetime/v3' })],
    ['a v2 record without its source root', json({ ...valid(), schema: 'loopx.run-authority.lifetime/v2' })],
    [
      'a source root that is a path',
      json({ ...valid(), schema: 'loopx.run-authority.lifetime/v2', source_root: '../root' }),
    ],
    ['the record of another lifetime', json({ ...valid(), goal_instance_id: ginst('e') })],
    ['its own successor', json({ ...valid(), successor_instance_id: OLD })],
    ['a string fence', json({ ...valid(), fence: '7' })],
    ['fence 0', json({ ...valid(), fence: 0 })],
    ['a malformed recovery id', json({ ...valid(), recovery_id: 'xyz' })],
    ['a successor root that is a path', json({ ...valid(), successor_root: '../root' })],
    ['a recorded_at that is no ISO timestamp', json({ ...valid(), recorded_at: 'yesterday' })],
  ];

  it.each(cases)(
    '%s: authority_lifetime_corrupt (one next action) on read and on a new request, and the file is left as it is',
    async (_label, bytes) => {
      const { dir } = await superseded();
      writeFileSync(fileOf(dir), bytes, { mode: 0o600 });
      const a = open(dir, false);
      const refused = await asyncErrorOf(a.lifetimeSupersession(OLD));
      expect(refused).toMatchObject({ code: 'authority_lifetime_corrupt', kind: 'internal' });
      expect((refused as { nextAction?: string }).nextAction).toContain(`lifetimes/${OLD}.json`);
      expect(await asyncCodeOf(a.supersedeLifetime(supersession()))).toBe('authority_lifetime_corrupt');
      expect(await asyncCodeOf(a.supersedeLifetime(supersession({ successor_instance_id: ginst('c') })))).toBe(
        'authority_lifetime_corrupt',
      );
      expect(readFileSync(fileOf(dir), 'utf8')).toBe(bytes);
    },
  );
});

/** Child processes of the current test, killed when it ends (also when it failed waiting for them). */
const children: Array<{ readonly child: ChildProcess }> = [];
afterEach(() => {
  for (const c of children.splice(0)) c.child.kill('SIGKILL');
});

describe('what stands at lifetimes/<goal_instance_id>.json must be a private regular file', () => {
  it('a symlink planted there (to a valid record elsewhere) is refused with authority_entry_symlink on read and on write; its target is neither read nor written', async () => {
    const base = tempBase();
    const dir = join(base, 'authority');
    const a = open(dir);
    const victim = join(base, 'victim.json');
    const forged = `${JSON.stringify({ schema: 'loopx.run-authority.lifetime/v1', ...supersession(), recorded_at: '2025-01-01T00:00:00.000Z' })}\n`;
    writeFileSync(victim, forged, { mode: 0o600 });
    symlinkSync(victim, fileOf(dir));
    expect(await asyncCodeOf(a.lifetimeSupersession(OLD))).toBe('authority_entry_symlink');
    expect(await asyncCodeOf(a.supersedeLifetime(supersession()))).toBe('authority_entry_symlink');
    expect(readFileSync(victim, 'utf8')).toBe(forged);
    expect(readdirSync(join(dir, 'lifetimes'))).toEqual([`${OLD}.json`]);
  });

  it('a dangling symlink planted there is refused on write, and its target is not created', async () => {
    const base = tempBase();
    const dir = join(base, 'authority');
    const a = open(dir);
    const target = join(base, 'created-through-the-link.json');
    symlinkSync(target, fileOf(dir));
    expect(await asyncCodeOf(a.supersedeLifetime(supersession()))).toBe('authority_entry_symlink');
    expect(existsSync(target)).toBe(false);
    expect(await asyncCodeOf(a.lifetimeSupersession(OLD))).toBe('authority_entry_symlink');
  });

  it('a directory, a record readable by others (0644) or one owned by another user is refused with authority_entry_unsafe on read and on write', async () => {
    const plant: Array<[string, (path: string) => void]> = [
      ['a directory', (p) => (unlinkSync(p), mkdirSync(p, { mode: 0o700 }))],
      ['a 0644 record', (p) => chmodSync(p, 0o644)],
      ['a foreign record', (p) => chownSync(p, FOREIGN_UID, FOREIGN_UID)],
    ];
    for (const [label, make] of plant) {
      const { dir } = await superseded();
      const path = fileOf(dir);
      make(path);
      const a = open(dir, false);
      expect(await asyncCodeOf(a.lifetimeSupersession(OLD)), label).toBe('authority_entry_unsafe');
      expect(await asyncCodeOf(a.supersedeLifetime(supersession())), label).toBe('authority_entry_unsafe');
    }
  });

  it('a FIFO is refused with authority_entry_unsafe on read and on write, never waited on (other processes read and write it, so a wait fails this test instead of hanging the suite)', async () => {
    const { dir } = await superseded();
    unlinkSync(fileOf(dir));
    expect(spawnSync('mkfifo', ['-m', '600', fileOf(dir)]).status).toBe(0);
    const reader = childReadLifetime(dir, OLD);
    const writer = spawnSuperseder(dir, supersession());
    children.push(reader, writer);
    await writer.ready;
    writer.go();
    expect(await reader.answer).toEqual({ code: 'authority_entry_unsafe' });
    expect(await writer.answer).toEqual({ code: 'authority_entry_unsafe' });
  });

  it('lifetimes/ renamed away and replaced by a directory holding a forged record: reads and writes are refused with authority_dir_substituted, the substitute untouched', async () => {
    const { dir, bytes } = await superseded();
    const a = open(dir, false);
    renameSync(join(dir, 'lifetimes'), join(dir, '..', 'lifetimes.moved'));
    mkdirSync(join(dir, 'lifetimes'), { mode: 0o700 });
    writeFileSync(fileOf(dir, ginst('c')), bytes, { mode: 0o600 });
    const substituteBefore = snapshotTree(join(dir, 'lifetimes'));
    expect(await asyncCodeOf(a.lifetimeSupersession(OLD))).toBe('authority_dir_substituted');
    expect(await asyncCodeOf(a.lifetimeSupersession(ginst('c')))).toBe('authority_dir_substituted');
    expect(await asyncCodeOf(a.supersedeLifetime(supersession({ goal_instance_id: ginst('e') })))).toBe(
      'authority_dir_substituted',
    );
    expect(snapshotTree(join(dir, 'lifetimes'))).toEqual(substituteBefore);
    expect(readFileSync(join(dir, '..', 'lifetimes.moved', `${OLD}.json`)).equals(bytes)).toBe(true);
  });
});

describe('two processes racing to supersede one lifetime (released together at a latch)', () => {
  /** Start both, wait until both have opened the authority, release them together, collect both answers. */
  async function race(dir: string, requests: ReturnType<typeof supersession>[]): Promise<Record<string, unknown>[]> {
    const racers = requests.map((r) => spawnSuperseder(dir, r));
    children.push(...racers);
    await Promise.all(racers.map((r) => r.ready));
    for (const r of racers) r.go();
    return Promise.all(racers.map((r) => r.answer));
  }

  it('with different successors, exactly one records its request and the other gets goal_lifetime_already_superseded; the stored record is the winner’s', async () => {
    const dir = join(tempBase(), 'authority');
    await open(dir).close();
    const requests = [
      supersession({ successor_instance_id: ginst('b'), successor_root: 'root_b' }),
      supersession({ successor_instance_id: ginst('c'), successor_root: 'root_c' }),
    ];
    const answers = await race(dir, requests);
    const winners = answers.filter((a) => a.replayed === false);
    const losers = answers.filter((a) => a.code === 'goal_lifetime_already_superseded');
    expect(winners).toHaveLength(1);
    expect(losers).toHaveLength(1);
    const winner = winners[0]!.record as LifetimeSupersession;
    expect(requests).toContainEqual(
      Object.fromEntries(Object.entries(winner).filter(([k]) => k !== 'recorded_at' && k !== 'source_root')),
    );
    expect(await open(dir, false).lifetimeSupersession(OLD)).toStrictEqual(winner);
    expect(readdirSync(join(dir, 'lifetimes'))).toEqual([`${OLD}.json`]);
  });

  it('with the same request, one records it and the other replays it: the same record, recorded_at included', async () => {
    const dir = join(tempBase(), 'authority');
    await open(dir).close();
    const answers = await race(dir, [supersession(), supersession()]);
    expect(answers.map((a) => a.replayed).sort()).toEqual([false, true]);
    expect(answers[0]!.record).toStrictEqual(answers[1]!.record);
    expect(await open(dir, false).lifetimeSupersession(OLD)).toStrictEqual(answers[0]!.record);
    expect(readdirSync(join(dir, 'lifetimes'))).toEqual([`${OLD}.json`]);
  });
});

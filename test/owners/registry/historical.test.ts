/**
 * The registry's recovery read side and its exact-read guarantee under a live writer:
 * readHistorical reads a copied root without any write or lock, and a readExact racing a child
 * that flips the file A↔B always returns the bytes it decoded (never bytes of one version and
 * the value of another).
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { cpSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { decodeRegistry, openFileRegistry } from '../../../src/owners/registry/index.js';
import { readHistoricalCopy as readHistorical } from '../../../src/owners/registry/historical.js';
import { cleanup, inst, REPO, snapshotTree, tempRoot, utf8 } from './support.js';

afterAll(cleanup);

const FLIP = join(REPO, 'test/owners/registry/fixtures/flip.ts');

function populated(): string {
  const root = tempRoot();
  const r = openFileRegistry(root);
  const p = r.addProject({ project_id: 'proj', name: 'P' }, 'absent');
  r.registerGoal({ goal_id: 'g1', goal_instance_id: inst(1), project_id: 'proj', status: 'active' }, p.revision);
  return root;
}

function copyOf(root: string): string {
  const copy = join(tempRoot(), 'copy');
  cpSync(root, copy, { recursive: true });
  return copy;
}

describe('registry readHistorical', () => {
  it('reads a copied root exactly and writes nothing (no lock file, no directory)', () => {
    const root = populated();
    const live = openFileRegistry(root).readExact();
    const copy = copyOf(root);
    const before = snapshotTree(copy);
    const h = readHistorical(copy);
    expect(snapshotTree(copy)).toEqual(before);
    expect(h.ok).toBe(true);
    if (!h.ok) return;
    expect(h.read.absent).toBe(false);
    expect(h.read.value).toEqual(live.value);
    expect(h.read.revision).toBe(`sha256:${createHash('sha256').update(h.read.bytes!).digest('hex')}`);
  });

  it('a copy without registry.json reads as a confirmed absence', () => {
    const copy = tempRoot();
    const h = readHistorical(copy);
    expect(h.ok && h.read.absent && h.read.revision).toBe('absent');
  });

  it('an unknown schema in the copy is a registry_unknown_schema finding', () => {
    const copy = tempRoot();
    writeFileSync(
      join(copy, 'registry.json'),
      utf8(JSON.stringify({ schema_version: 'loopx_registry_v9', projects: [], goals: [] })),
    );
    const h = readHistorical(copy);
    expect(h.ok).toBe(false);
    expect(h.findings).toEqual([
      expect.objectContaining({ code: 'registry_unknown_schema', severity: 'error', subject: 'registry.json' }),
    ]);
    expect(h.findings[0]!.next_action).toBeTruthy();
  });

  it('a linked registry.json or a non-directory copy is a registry_unreadable finding, not an absence', () => {
    const copy = tempRoot();
    const outside = join(tempRoot(), 'outside.json');
    writeFileSync(outside, utf8(JSON.stringify({ schema_version: 'loopx_registry_v0', projects: [], goals: [] })));
    symlinkSync(outside, join(copy, 'registry.json'));
    expect(readHistorical(copy).findings.map((f) => f.code)).toEqual(['registry_unreadable']);
    expect(readHistorical(join(copy, 'missing')).findings.map((f) => f.code)).toEqual(['registry_unreadable']);
  });
});

describe('exact reads under a live writer', () => {
  it('while a child flips registry.json A↔B, every readExact returns the bytes it decoded', async () => {
    const root = populated();
    const a = openFileRegistry(root).readExact();
    const versions = tempRoot();
    mkdirSync(versions, { recursive: true });
    const b = {
      ...a.value,
      projects: [...a.value.projects, { project_id: 'second', name: 'Second project with a longer name' }],
    };
    writeFileSync(join(versions, 'a.json'), a.bytes!);
    writeFileSync(join(versions, 'b.json'), utf8(`${JSON.stringify(b, null, 2)}\n`));

    const child = spawn(
      process.execPath,
      ['--import', 'tsx', FLIP, root, join(versions, 'a.json'), join(versions, 'b.json')],
      { cwd: REPO },
    );
    const exited = new Promise<void>((res) => child.on('exit', () => res()));
    try {
      await new Promise<void>((res, rej) => {
        let out = '';
        child.stdout.on('data', (d) => {
          out += String(d);
          if (out.includes('flipping\n')) res();
        });
        child.on('exit', (code) => rej(new Error(`flipper exited early (${code})`)));
      });
      const registry = openFileRegistry(root);
      const seen = new Set<number>();
      for (let i = 0; i < 20_000 && (i < 300 || seen.size < 2); i++) {
        const r = registry.readExact();
        expect(r.absent).toBe(false);
        expect(decodeRegistry(r.bytes!)).toEqual(r.value);
        expect(r.revision).toBe(`sha256:${createHash('sha256').update(r.bytes!).digest('hex')}`);
        seen.add(r.value.projects.length);
      }
      expect([...seen].sort()).toEqual([1, 2]);
    } finally {
      child.kill('SIGKILL');
      await exited;
    }
  });
});

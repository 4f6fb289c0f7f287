/**
 * The conformance suite of the one recovery contract (src/owners/contract.ts): an owner's
 * capture() → verifyOffline() → readHistorical() round-trips (the same revision and cursor at each
 * step, the export verified against the copy), observe() reads the live position in capture's
 * domain, a damaged export is the owner's typed finding, and a corrupted copy of its store is that
 * owner's typed finding with one next action. A table of owners keeps its rows in dependency order,
 * keyed by their names, each member owned once.
 *
 * Every row of the OWNERS table runs it (test/owners/contract.test.ts, on a real root a Goal work
 * run worked), and so does an owner that lives only in the test tree
 * (test/owners/fixture-owner/fixture-owner.test.ts): `describeOwnerContract(owner, env)`.
 */
import { readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { goalScope, type OwnerCapture, type OwnerRecovery, type OwnerScope } from '../../../src/owners/index.js';

/** Where the suite finds the owner's live state, and where it writes. */
export interface OwnerContractEnv {
  /** The live runtime root holding the owner's state (read once the suite's own beforeAll runs). */
  root(): string;
  /** The scope the owner's state is checked in. */
  scopeOf(o: OwnerRecovery): OwnerScope;
  /** A new private directory, removed after the file's tests. */
  fresh(prefix: string): string;
}

/** What is wrong with a table of owners, by row: keyed by its name, dependencies on earlier rows only, no member owned twice. */
export function ownerTableProblems(rows: Readonly<Record<string, OwnerRecovery>>): string[] {
  const problems: string[] = [];
  const earlier = new Set<string>();
  const ownerOf = new Map<string, string>();
  for (const [key, o] of Object.entries(rows)) {
    if (o.name !== key) problems.push(`${key}: its row is named ${o.name}`);
    for (const d of o.dependsOn)
      if (!earlier.has(d)) problems.push(`${key}: depends on ${d}, which is not an earlier row`);
    for (const m of o.members(o.scope === 'goal' ? goalScope('g') : { goal_id: null })) {
      const other = ownerOf.get(m.path);
      if (other !== undefined) problems.push(`${key}: member ${m.path} is ${other}'s`);
      ownerOf.set(m.path, key);
    }
    earlier.add(key);
  }
  return problems;
}

/** The contract's cases for `owner`, over the live state `env` gives. */
export function describeOwnerContract(owner: OwnerRecovery, env: OwnerContractEnv): void {
  describe(`the ${owner.name} owner`, () => {
    const scope = env.scopeOf(owner);
    let into: string;
    let cap: OwnerCapture;

    beforeAll(async () => {
      into = env.fresh(`loopx-capture-${owner.name}-`);
      cap = await owner.capture({ root: env.root() }, scope, into);
    });

    it('capture() copies its members and exports them canonically, with its revision interval', () => {
      expect(cap.owner).toBe(owner.name);
      expect(cap.members.length).toBeGreaterThan(0);
      for (const m of cap.members) expect(statSync(join(into, m)).isFile()).toBe(true);
      expect(cap.export_sha256).toMatch(/^[0-9a-f]{64}$/);
      expect(cap.record_count).toBeGreaterThan(0);
      // Nothing wrote to the root while it was captured: the interval did not move.
      expect(cap.start.revision).toBe(cap.end.revision);
      expect(cap.captured.revision).toBe(cap.end.revision);
    });

    it('verifyOffline() accepts the copy with its export, at the captured revision', () => {
      const v = owner.verifyOffline({ root: into, scratchDir: env.fresh('loopx-scratch-') }, scope, {
        export: cap.export,
        exportItems: cap.export_items,
      });
      expect(v.findings.filter((f) => f.severity === 'error')).toEqual([]);
      expect(v.ok).toBe(true);
      expect(v.revision).toBe(cap.captured.revision);
      // A database owner's records are its copy's: the export is its header and seal, and the owner rebuilds the same seal from the copy.
      const database = owner.members(scope).every((m) => m.kind === 'sqlite');
      expect(cap.export_items).toBe(database ? 'from_copy' : 'in_export');
      if (database) {
        expect(cap.export).toHaveLength(2);
        expect(v.export_sha256).toBe(cap.export_sha256);
      }
    });

    it('readHistorical() reads the captured state back: same revision and cursor, no authority', () => {
      const h = owner.readHistorical({ root: into, scratchDir: env.fresh('loopx-scratch-') }, scope);
      expect(h.owner).toBe(owner.name);
      expect(h.ok).toBe(true);
      expect(h.revision).toBe(cap.captured.revision);
      if (h.cursor !== null) expect(h.cursor).toBe(cap.captured.cursor);
      expect(h.execution_authority_granted).toBe(false);
      expect(Object.values(h.counts).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
    });

    it("observe() reads the live position in capture's domain: the capture's end while nothing moved", async () => {
      const now = await owner.observe({ root: env.root() }, scope);
      expect(now).not.toBeNull();
      expect(now!.revision).toBe(cap.end.revision);
      if (cap.end.cursor !== null) expect(now!.cursor).toBe(cap.end.cursor);
    });

    it('a changed export record is refused with the export finding, never accepted', () => {
      const damaged = cap.export.map((r, i) => (i === 1 ? { ...(r as object), tampered: true } : r));
      const v = owner.verifyOffline({ root: into, scratchDir: env.fresh('loopx-scratch-') }, scope, {
        export: damaged,
        exportItems: cap.export_items,
      });
      expect(v.ok).toBe(false);
      expect(v.findings.some((f) => f.severity === 'error' && /^(owner_export|retained_prefix)_/.test(f.code))).toBe(
        true,
      );
    });

    it("a corrupted copy of its store is that owner's typed finding with one next action", () => {
      const damaged = env.fresh(`loopx-damaged-${owner.name}-`);
      const copy = owner.capture({ root: env.root() }, scope, damaged);
      return copy.then((c) => {
        const member = c.members.find((m) => m.endsWith('.db')) ?? c.members.find((m) => m.endsWith('.json'))!;
        const abs = join(damaged, member);
        if (member.endsWith('.db')) {
          // Past the header: a page of garbage where SQLite's b-tree pages are.
          const bytes = readFileSync(abs);
          bytes.fill(0xa5, 100, Math.min(bytes.length, 8192));
          writeFileSync(abs, bytes);
        } else {
          writeFileSync(abs, '{"not": "this owner\'s document"');
        }
        const v = owner.verifyOffline({ root: damaged, scratchDir: env.fresh('loopx-scratch-') }, scope);
        expect(v.ok).toBe(false);
        const errors = v.findings.filter((f) => f.severity === 'error');
        expect(errors.length, JSON.stringify(v.findings)).toBeGreaterThan(0);
        for (const f of errors) {
          expect(
            f.code.startsWith(`${owner.name}_`) || f.code.startsWith('registry_') || f.code.startsWith('goal_'),
            f.code,
          ).toBe(true);
          expect(f.next_action.length).toBeGreaterThan(0);
          expect(f.next_action).not.toMatch(/\n/);
          expect(f.subject).not.toContain(damaged);
        }
      });
    });
  });

  if (owner.members(env.scopeOf(owner)).some((m) => m.kind === 'sqlite')) {
    describe(`the ${owner.name} owner (a database)`, () => {
      it('observe() of a root where it never created its database is a confirmed absence (null)', async () => {
        expect(await owner.observe({ root: env.fresh('loopx-empty-root-') }, env.scopeOf(owner))).toBeNull();
      });
    });
  }
}

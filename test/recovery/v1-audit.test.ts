/**
 * A v1 recovery set is checked exhaustively, and each defect is a typed finding: one real v1 backup
 * (the producer's own), re-packed with exactly one binding broken — a component's dependency, id,
 * owner, content digest, export bytes or the set's claimed profile — each asserting its code, its
 * deterministic order and that activation is no longer offered. Execution authority is never granted.
 */
import { describe, expect, it } from 'vitest';
import type { ManifestComponent, RecoverySetCapture } from '../../src/backup/index.js';
import { executeVerify, type RecoveryAudit } from '../../src/recovery/index.js';
import { useBaseBackup } from './support/base-fixture.js';
import { replaceEntry, type ManifestDoc } from './support/corpus.js';

const fx = useBaseBackup('loopx-v1-audit-', 'v1');

const list = (m: ManifestDoc): ManifestComponent[] => m.components as ManifestComponent[];
const byOwner = (m: ManifestDoc, owner: string, goal: string | null = null): ManifestComponent =>
  list(m).find((c) => c.owner_kind === owner && c.goal_id === goal)!;

async function audit(
  doc: (m: ManifestDoc) => void,
  entries?: Parameters<typeof fx.stage>[0]['entries'],
): Promise<RecoveryAudit> {
  const c = fx.stage({ doc, ...(entries ? { entries } : {}) });
  return (await executeVerify({ archive: c.archive, manifest: c.manifest, destination: c.destination })).audit;
}

/** A component as a mutable document (the cases break one binding). */
const edit = (c: ManifestComponent): Record<string, unknown> => c as unknown as Record<string, unknown>;

const codes = (a: RecoveryAudit, severity: string) =>
  a.findings.filter((f) => f.severity === severity).map((f) => [f.code, f.component]);

describe('a v1 recovery set, audited', () => {
  it('the untouched set is audited and activation-eligible for each Goal, without execution authority', async () => {
    const a = await audit(() => undefined);
    expect([a.phase, a.operator_state, a.activation_eligible, a.execution_authority_granted]).toEqual([
      'audited',
      'restored_inert',
      true,
      false,
    ]);
    expect(a.activation!.eligible_scopes.length).toBe(2);
    expect(codes(a, 'error')).toEqual([]);
    expect(a.counts.verification.ambiguous + a.counts.verification.unsupported + a.counts.verification.invalid).toBe(0);
  });

  it('a dependency on a component the set does not hold is dependency_missing', async () => {
    let id = '';
    const a = await audit((m) => {
      const work = byOwner(m, 'work', 'alpha');
      id = work.component_id;
      edit(work).dependency_ids = ['goal-000000000000'];
    });
    expect(codes(a, 'error')).toContainEqual(['dependency_missing', id]);
    expect(a.activation_eligible).toBe(false);
  });

  it('a duplicated component id is component_duplicate', async () => {
    const a = await audit((m) => {
      (m.components as ManifestComponent[]).push(structuredClone(byOwner(m, 'session')));
    });
    expect(codes(a, 'error')).toContainEqual(['component_duplicate', 'session']);
    expect(a.components.find((c) => c.component_id === 'session')!.verification).toBe('ambiguous');
    expect(a.counts.verification.ambiguous).toBe(1);
    expect(a.activation_eligible).toBe(false);
  });

  it('a cycle names every component on it, in id order', async () => {
    const a = await audit((m) => {
      edit(byOwner(m, 'registry')).dependency_ids = ['config'];
    });
    expect(codes(a, 'error').filter(([c]) => c === 'dependency_cycle')).toEqual([
      ['dependency_cycle', 'config'],
      ['dependency_cycle', 'registry'],
    ]);
  });

  it("a Goal's component that depends on another Goal's is dependency_cross_goal", async () => {
    let id = '';
    const a = await audit((m) => {
      const work = byOwner(m, 'work', 'alpha');
      id = work.component_id;
      edit(work).dependency_ids = [byOwner(m, 'goal', 'beta').component_id];
    });
    expect(codes(a, 'error')).toContainEqual(['dependency_cross_goal', id]);
  });

  it('a component of an owner this verifier does not know is unsupported, and its Goals lose eligibility', async () => {
    const a = await audit((m) => {
      edit(byOwner(m, 'scheduler')).owner_kind = 'nokv';
    });
    expect(codes(a, 'error')).toContainEqual(['component_owner_unknown', 'scheduler']);
    expect(a.counts.verification.unsupported).toBe(1);
    expect(a.findings.filter((f) => f.code === 'goal_closure_incomplete').length).toBe(2);
    expect(a.activation_eligible).toBe(false);
  });

  it('a content digest that is not the export seal is component_content_digest_mismatch', async () => {
    const a = await audit((m) => {
      edit(byOwner(m, 'session')).content_digest = '0'.repeat(64);
    });
    expect(codes(a, 'error')).toContainEqual(['component_content_digest_mismatch', 'session']);
    expect(a.components.find((c) => c.component_id === 'session')!.verification).toBe('invalid');
  });

  it('an export whose records were changed fails its owner verification (the chain no longer holds)', async () => {
    let id = '';
    const base = fx.base;
    const entries = replaceEntry(
      base.entries,
      byOwner(base.manifest as unknown as ManifestDoc, 'goal', 'alpha').export_member!,
      (e) => {
        id = byOwner(base.manifest as unknown as ManifestDoc, 'goal', 'alpha').component_id;
        const lines = e.data!.toString('utf8').trimEnd().split('\n');
        const item = JSON.parse(lines[1]!) as { value: { value: { title: string } } };
        item.value.value.title = 'changed';
        lines[1] = JSON.stringify(item);
        return { ...e, data: Buffer.from(`${lines.join('\n')}\n`) };
      },
    );
    const a = await audit(() => undefined, entries);
    const component = a.components.find((c) => c.component_id === id)!;
    expect(component.verification).toBe('invalid');
    expect(a.findings.some((f) => f.component === id && f.code.startsWith('owner_export_'))).toBe(true);
    expect(a.activation_eligible).toBe(false);
  });

  it("a work export's seal that is not the seal of the copied rows fails the work owner's verification", async () => {
    const base = fx.base;
    const work = byOwner(base.manifest as unknown as ManifestDoc, 'work', 'alpha');
    expect(work.export_items).toBe('from_copy');
    const entries = replaceEntry(base.entries, work.export_member!, (e) => {
      const [header, seal] = e.data!.toString('utf8').trimEnd().split('\n') as [string, string];
      const forged = { ...(JSON.parse(seal) as object), records_sha256: 'f'.repeat(64) };
      return { ...e, data: Buffer.from(`${header}\n${JSON.stringify(forged)}\n`) };
    });
    const a = await audit(() => undefined, entries);
    expect(a.components.find((c) => c.component_id === work.component_id)!.verification).toBe('invalid');
    expect(codes(a, 'error')).toContainEqual(['retained_prefix_seal_mismatch', work.component_id]);
    expect(a.activation_eligible).toBe(false);
  });

  it('a manifest that says a header-and-seal export holds every record is not verified', async () => {
    let id = '';
    const a = await audit((m) => {
      const work = byOwner(m, 'work', 'alpha');
      id = work.component_id;
      edit(work).export_items = 'in_export';
    });
    expect(a.components.find((c) => c.component_id === id)!.verification).toBe('invalid');
    expect(a.activation_eligible).toBe(false);
  });

  it('a set that claims more than its weakest required component is capture_profile_overclaimed and shown at the weaker profile', async () => {
    const a = await audit((m) => {
      const set = m.capture as unknown as { achieved_profile: string; profile: string; requested_profile: string };
      set.achieved_profile = 'quiescent';
      set.profile = 'quiescent';
      set.requested_profile = 'quiescent';
    });
    expect(codes(a, 'error')).toContainEqual(['capture_profile_overclaimed', null]);
    expect(a.capture.achieved_profile).toBe('online');
    expect(a.activation_eligible).toBe(false);
  });

  it('the findings come in the same order on every run', async () => {
    const damage = (m: ManifestDoc): void => {
      edit(byOwner(m, 'registry')).dependency_ids = ['config', 'nowhere'];
      edit(byOwner(m, 'quota')).owner_kind = 'nokv';
    };
    const one = await audit(damage);
    const two = await audit(damage);
    expect(one.findings.map((f) => [f.code, f.component])).toEqual(two.findings.map((f) => [f.code, f.component]));
    expect((one as unknown as { capture: RecoverySetCapture }).capture).toBeDefined();
  });
});

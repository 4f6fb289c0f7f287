/**
 * The configuration checkpoint `loopx_configuration_backup_v0`: built only from exact reads
 * (never live paths), inert, digest-bound; every tamper is a typed finding and all findings of a
 * damaged checkpoint are reported together.
 */
import { createHash } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { canonicalJson } from '../../../src/core/canonical-json.js';
import {
  buildConfigurationCheckpoint,
  openFileConfigStore,
  verifyConfigurationCheckpoint,
  type ConfigExactRead,
  type ConfigStore,
} from '../../../src/owners/config/index.js';
import { openFileRegistry, type Registry, type RegistryExactRead } from '../../../src/owners/registry/index.js';
import { cleanup, codeOf, inst, tempRoot, utf8 } from '../registry/support.js';

afterAll(cleanup);

const digestOf = (o: Record<string, unknown>): string => {
  const { sha256: _drop, ...rest } = o;
  return createHash('sha256').update(canonicalJson(rest)).digest('hex');
};

function populated(): { config: ConfigStore; registry: Registry } {
  const root = tempRoot();
  const registry = openFileRegistry(root);
  const p = registry.addProject({ project_id: 'proj', name: 'P' }, 'absent');
  const g2 = registry.registerGoal(
    { goal_id: 'zeta', goal_instance_id: inst(2), project_id: 'proj', status: 'paused' },
    p.revision,
  );
  registry.registerGoal(
    { goal_id: 'alpha', goal_instance_id: inst(1), project_id: 'proj', status: 'active' },
    g2.revision,
  );
  const config = openFileConfigStore(root);
  config.apply({
    expectedRevision: 'absent',
    transactionId: 't1',
    changes: { goal_storage: { schema_version: 'goal_storage_v1', new_goal_provider: 'sqlite' } },
  });
  return { config, registry };
}

/** A valid checkpoint as a mutable object, and a re-encoder that can keep the digest honest. */
function parsedCheckpoint(): Record<string, unknown> & {
  data: Record<string, unknown> & { goals: Array<Record<string, unknown>> };
} {
  const { config, registry } = populated();
  const built = buildConfigurationCheckpoint({
    machineConfiguration: config.readExact(),
    registry: registry.readExact(),
  });
  return JSON.parse(new TextDecoder().decode(built.bytes));
}
const encode = (o: Record<string, unknown>, redigest: boolean): Uint8Array =>
  utf8(JSON.stringify(redigest ? { ...o, sha256: digestOf(o) } : o));
const codes = (bytes: Uint8Array) => verifyConfigurationCheckpoint(bytes).findings.map((f) => `${f.code}@${f.subject}`);

describe('building the configuration checkpoint', () => {
  it('is built from exact reads: inert flags, complete registry rows sorted by goal_id, the canonical digest of the rest', () => {
    const { config, registry } = populated();
    const machine = config.readExact();
    const reg = registry.readExact();
    const built = buildConfigurationCheckpoint({ machineConfiguration: machine, registry: reg });
    const parsed = JSON.parse(new TextDecoder().decode(built.bytes));
    expect(parsed).toEqual(built.checkpoint);
    expect(new TextDecoder().decode(built.bytes)).toBe(`${canonicalJson(built.checkpoint)}\n`);
    expect(parsed.schema_version).toBe('loopx_configuration_backup_v0');
    expect(parsed.privacy_certified).toBe(false);
    expect(parsed.activation_performed).toBe(false);
    expect(parsed.data.machine_configuration).toEqual(machine.value);
    expect(parsed.data.goals).toEqual([
      { goal_id: 'alpha', goal_configuration: reg.value.goals.find((g) => g.goal_id === 'alpha') },
      { goal_id: 'zeta', goal_configuration: reg.value.goals.find((g) => g.goal_id === 'zeta') },
    ]);
    expect(parsed.sha256).toBe(digestOf(parsed));
    expect(built.sha256).toBe(parsed.sha256);
    expect(built.verification).toEqual({
      ok: true,
      sha256: parsed.sha256,
      goal_count: 2,
      machine_configuration_present: true,
      privacy_certified: false,
      activation_performed: false,
      readback_verified: true,
      findings: [],
    });
  });

  it('a confirmed absence becomes machine_configuration null and an absent registry no goals', () => {
    const built = buildConfigurationCheckpoint({
      machineConfiguration: { absent: true, revision: 'absent', value: null, bytes: null },
      registry: openFileRegistry(tempRoot()).readExact(),
    });
    expect(built.checkpoint.data).toEqual({ machine_configuration: null, goals: [] });
    expect(built.verification).toMatchObject({ ok: true, goal_count: 0, machine_configuration_present: false });
  });

  it('never reads a live path: changes after the reads (A→B) do not reach the checkpoint', () => {
    const { config, registry } = populated();
    const sources = { machineConfiguration: config.readExact(), registry: registry.readExact() };
    const first = buildConfigurationCheckpoint(sources);
    const cur = config.read().revision;
    config.apply({
      expectedRevision: cur,
      transactionId: 't2',
      changes: { goal_storage: { schema_version: 'goal_storage_v1', new_goal_provider: 'file' } },
    });
    const reg = registry.read();
    registry.updateGoalStatus({ goal_id: 'alpha', goal_instance_id: inst(1), status: 'paused' }, reg.revision);
    const second = buildConfigurationCheckpoint(sources);
    expect(Buffer.from(second.bytes).equals(Buffer.from(first.bytes))).toBe(true);
  });

  it('a read whose bytes do not decode to its value is refused with checkpoint_source_mismatch', () => {
    const { config, registry } = populated();
    const machine = config.readExact() as Extract<ConfigExactRead, { absent: false }>;
    const reg = registry.readExact() as Extract<RegistryExactRead, { absent: false }>;
    const otherValue = { ...machine.value, namespaces: {} };
    expect(
      codeOf(() =>
        buildConfigurationCheckpoint({ machineConfiguration: { ...machine, value: otherValue }, registry: reg }),
      ),
    ).toBe('checkpoint_source_mismatch');
    expect(
      codeOf(() =>
        buildConfigurationCheckpoint({
          machineConfiguration: { ...machine, revision: 'sha256:' + '0'.repeat(64) },
          registry: reg,
        }),
      ),
    ).toBe('checkpoint_source_mismatch');
    expect(
      codeOf(() =>
        buildConfigurationCheckpoint({
          machineConfiguration: machine,
          registry: { ...reg, value: { ...reg.value, goals: [] } },
        }),
      ),
    ).toBe('checkpoint_source_mismatch');
    expect(
      codeOf(() =>
        buildConfigurationCheckpoint({ machineConfiguration: machine, registry: { ...reg, bytes: utf8('{}') } }),
      ),
    ).toBe('checkpoint_source_mismatch');
  });
});

describe('verifying the configuration checkpoint', () => {
  it('a changed value under the old digest is checkpoint_digest_mismatch', () => {
    const c = parsedCheckpoint();
    c.data.goals[0]!.goal_configuration = { ...(c.data.goals[0]!.goal_configuration as object), status: 'retired' };
    const v = verifyConfigurationCheckpoint(encode(c, false));
    expect(v.findings.map((f) => f.code)).toEqual(['checkpoint_digest_mismatch']);
    expect(v).toMatchObject({ ok: false, readback_verified: false, goal_count: 2 });
    expect(v.sha256).toBe(digestOf(c));
  });

  it('privacy_certified other than false is checkpoint_privacy_certified_invalid, even with an honest digest', () => {
    const c = parsedCheckpoint();
    c.privacy_certified = true;
    const v = verifyConfigurationCheckpoint(encode(c, true));
    expect(codes(encode(c, true))).toEqual(['checkpoint_privacy_certified_invalid@$.privacy_certified']);
    expect(v).toMatchObject({ ok: false, privacy_certified: true, readback_verified: true });
  });

  it('activation_performed other than false is checkpoint_activation_performed_invalid', () => {
    const c = parsedCheckpoint();
    c.activation_performed = 'no';
    expect(codes(encode(c, true))).toEqual(['checkpoint_activation_performed_invalid@$.activation_performed']);
  });

  it('unknown fields at every level are checkpoint_unknown_field with their location', () => {
    const c = parsedCheckpoint();
    c.extra = 1;
    c.data.selector = 'x';
    c.data.goals[0]!.lease = {};
    c.data.goals[1]!.goal_configuration = { ...(c.data.goals[1]!.goal_configuration as object), quota: 3 };
    (c.data.machine_configuration as Record<string, unknown>).grant = true;
    expect(codes(encode(c, true)).sort()).toEqual(
      [
        'checkpoint_unknown_field@$.extra',
        'checkpoint_unknown_field@$.data.selector',
        'checkpoint_unknown_field@$.data.goals[0].lease',
        'checkpoint_unknown_field@$.data.goals[1].goal_configuration',
        'checkpoint_unknown_field@$.data.machine_configuration',
      ].sort(),
    );
  });

  it('an unknown schema_version is checkpoint_unknown_schema and nothing else is interpreted', () => {
    const c = parsedCheckpoint();
    c.schema_version = 'loopx_configuration_backup_v1';
    c.privacy_certified = true;
    expect(codes(encode(c, true))).toEqual(['checkpoint_unknown_schema@$.schema_version']);
  });

  it('bytes that are not JSON, or too large, are refused before decoding', () => {
    expect(codes(utf8('{"schema_version":'))).toEqual(['checkpoint_not_json@$']);
    expect(codes(new Uint8Array(16 * 1024 * 1024 + 1))).toEqual(['checkpoint_too_large@$']);
  });

  it('a malformed digest or goal row is checkpoint_malformed', () => {
    const c = parsedCheckpoint();
    expect(codes(encode({ ...c, sha256: 'ABC' }, false))).toEqual(['checkpoint_malformed@$.sha256']);
    const d = parsedCheckpoint();
    d.data.goals[1]!.goal_id = 'alpha';
    expect(codes(encode(d, true))).toEqual(['checkpoint_malformed@$.data.goals[1].goal_id']);
  });

  it('every defect of a damaged checkpoint is reported, not just the first', () => {
    const c = parsedCheckpoint();
    c.privacy_certified = true;
    c.activation_performed = true;
    c.extra = 1;
    c.data.goals = [...c.data.goals, { goal_id: 'x', goal_configuration: { goal_id: 'x' } }];
    const v = verifyConfigurationCheckpoint(encode(c, false));
    expect(v.findings.map((f) => f.code).sort()).toEqual(
      [
        'checkpoint_activation_performed_invalid',
        'checkpoint_digest_mismatch',
        'checkpoint_malformed',
        'checkpoint_privacy_certified_invalid',
        'checkpoint_unknown_field',
      ].sort(),
    );
    expect(v.goal_count).toBe(3);
    for (const f of v.findings) expect(f.next_action).toBeTruthy();
  });
});

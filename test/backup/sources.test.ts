/**
 * The configuration checkpoint envelope and the BackupSources seam: the checkpoint verifies only
 * when it is canonical, untampered and says exactly what the exact reads say; a source whose
 * checkpoint does not refuses publication.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { create, ownerBackupSources, plan, type BackupSources } from '../../src/backup/index.js';
import { canonicalJson } from '../../src/core/canonical-json.js';
import { sha256Hex } from '../../src/core/digest.js';
import { isLoopxError } from '../../src/core/errors.js';
import * as configOwner from '../../src/owners/config/index.js';
import { configOf, machineDoc, makeRoot, registryOf, tempBase } from './support/fixtures.js';

const text = (b: Uint8Array) => new TextDecoder().decode(b);
const bytes = (s: string) => new TextEncoder().encode(s);

describe('the owner sources', () => {
  it('the owner sources (the default) keep the same contract: exactly the bytes the owners decoded, revisions over their canonical JSON', async () => {
    const base = tempBase();
    const root = join(base, 'root');
    const { alpha, beta } = await makeRoot(root, { specials: false });
    const sources = ownerBackupSources(root);
    const reg = sources.readRegistryExact();
    const mac = sources.readMachineConfigurationExact();
    if (reg.absent || mac.absent) throw new Error('fixture has both');
    const registry = registryOf(root).readExact();
    const config = configOf(root).readExact();
    if (registry.absent || config.absent) throw new Error('fixture has both');
    expect(Buffer.from(reg.bytes).equals(Buffer.from(registry.bytes))).toBe(true);
    expect(Buffer.from(mac.bytes).equals(Buffer.from(config.bytes))).toBe(true);
    expect(reg.revision).toBe(`sha256:${sha256Hex(canonicalJson(JSON.parse(text(reg.bytes))))}`);
    expect(mac.revision).toBe(`sha256:${sha256Hex(canonicalJson(machineDoc))}`);
    expect(mac.revision).toBe(config.revision);
    expect(reg.value.goals).toEqual([
      { goal_id: 'alpha', goal_instance_id: alpha.goal_instance_id, route: 'goals/alpha' },
      { goal_id: 'beta', goal_instance_id: beta.goal_instance_id, route: 'goals/beta' },
    ]);
    expect(reg.value.projects).toEqual([{ project_id: 'proj', name: 'Project' }]);
    // The checkpoint comes from those same reads and verifies with the owner's verifier.
    const v = sources.verifyConfigurationCheckpoint(sources.buildConfigurationCheckpoint(reg, mac));
    expect(v).toMatchObject({
      ok: true,
      goal_count: 2,
      machine_configuration_present: true,
      readback_verified: true,
      problems: [],
    });
    // A read the sources did not hand out is not one a checkpoint is built from.
    expect(() => sources.buildConfigurationCheckpoint({ ...reg }, mac)).toThrow(
      expect.objectContaining({ code: 'backup_source_unusable' }),
    );
  });
});

/** Checkpoints in the config owner's envelope that verify but misstate the reads. */
const KINDS = {
  owner: {
    sources: ownerBackupSources,
    dropsMachine: (root: string) =>
      configOwner.buildConfigurationCheckpoint({
        registry: registryOf(root).readExact(),
        machineConfiguration: configOwner.memoryConfigStore().readExact(),
      }).bytes,
    otherMachine: (root: string) =>
      configOwner.buildConfigurationCheckpoint({
        registry: registryOf(root).readExact(),
        machineConfiguration: configOwner
          .memoryConfigStore(bytes(JSON.stringify({ ...machineDoc, namespaces: {} })))
          .readExact(),
      }).bytes,
  },
} as const;

describe.each(['owner'] as const)('a source whose checkpoint does not say what the reads say (%s sources)', (kind) => {
  async function refusalWith(override: (root: string) => Partial<BackupSources>) {
    const base = tempBase();
    const root = join(base, 'root');
    await makeRoot(root, { specials: false });
    const sources = { ...KINDS[kind].sources(root), ...override(root) };
    const out = join(base, 'out');
    try {
      await create(plan(root, { outputDir: out, sources }));
    } catch (e) {
      if (!isLoopxError(e)) throw e;
      expect(readdirSync(out)).toEqual([]);
      return e.code;
    }
    throw new Error('create was expected to refuse');
  }

  it('refuses a checkpoint that fails its verifier', async () => {
    expect(
      await refusalWith(() => ({
        buildConfigurationCheckpoint: () => bytes('{"schema_version":"loopx_configuration_backup_v0"}'),
      })),
    ).toBe('backup_configuration_checkpoint_invalid');
  });

  it('refuses a valid checkpoint that dropped the machine configuration the plan read', async () => {
    expect(
      await refusalWith((root) => {
        const checkpoint = KINDS[kind].dropsMachine(root);
        expect(KINDS[kind].sources(root).verifyConfigurationCheckpoint(checkpoint)).toMatchObject({
          ok: true,
          goal_count: 2,
          machine_configuration_present: false,
        });
        return { buildConfigurationCheckpoint: () => checkpoint };
      }),
    ).toBe('backup_configuration_checkpoint_invalid');
  });

  it('refuses a valid checkpoint whose machine configuration differs from the exact read', async () => {
    expect(
      await refusalWith((root) => {
        const checkpoint = KINDS[kind].otherMachine(root);
        expect(KINDS[kind].sources(root).verifyConfigurationCheckpoint(checkpoint)).toMatchObject({
          ok: true,
          goal_count: 2,
          machine_configuration_present: true,
        });
        return { buildConfigurationCheckpoint: () => checkpoint };
      }),
    ).toBe('backup_configuration_checkpoint_invalid');
  });
});

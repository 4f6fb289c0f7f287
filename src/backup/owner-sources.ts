/**
 * The production BackupSources: the registry and config owners themselves. Their `readExact()`
 * decodes the bytes of one read and hands back exactly those bytes; the configuration checkpoint
 * is built and verified by the config owner from those same reads — the backup producer decides
 * none of these facts itself.
 */
import { canonicalJson, sha256Hex } from '../core/index.js';
import { config as configOwner, registry as registryOwner } from '../owners/index.js';
import { sourceUnusable } from './errors.js';
import {
  WITNESSED_SOURCES,
  type BackupSources,
  type ConfigurationCheckpointVerification,
  type MachineConfigurationRead,
  type RegistryRead,
} from './sources.js';

const asUnusable = <T>(source: string, fn: () => T): T => {
  try {
    return fn();
  } catch (e) {
    throw sourceUnusable(source, 'its owner could not read it', e);
  }
};

export function ownerBackupSources(root: string): BackupSources {
  const registry = registryOwner.openFileRegistry(root);
  const config = configOwner.openFileConfigStore(root);
  // The owners' own reads, kept beside the producer's view so the checkpoint is built from them.
  const registryReads = new WeakMap<object, registryOwner.RegistryExactRead>();
  const configReads = new WeakMap<object, configOwner.ConfigExactRead>();

  return {
    readRegistryExact(): RegistryRead {
      const read = asUnusable(WITNESSED_SOURCES.registry, () => registry.readExact());
      if (read.absent) {
        const view = { absent: true as const };
        registryReads.set(view, read);
        return view;
      }
      // The BackupSources revision is over the canonical JSON of the decoded value (as the config
      // owner's is); the registry owner's own revision is over its exact bytes, so it is not passed through.
      const revision = `sha256:${sha256Hex(canonicalJson(read.value))}`;
      const view = {
        bytes: read.bytes,
        revision,
        value: {
          goals: read.value.goals.map((g) => ({
            goal_id: g.goal_id,
            goal_instance_id: g.goal_instance_id,
            route: g.route,
          })),
          projects: read.value.projects,
        },
      };
      registryReads.set(view, read);
      return view;
    },
    readMachineConfigurationExact(): MachineConfigurationRead {
      const read = asUnusable(WITNESSED_SOURCES.machineConfiguration, () => config.readExact());
      const view = read.absent ? { absent: true as const } : { bytes: read.bytes, revision: read.revision };
      configReads.set(view, read);
      return view;
    },
    buildConfigurationCheckpoint(registryRead: RegistryRead, machineRead: MachineConfigurationRead): Uint8Array {
      const r = registryReads.get(registryRead);
      const m = configReads.get(machineRead);
      if (!r || !m)
        throw sourceUnusable(
          'configuration-backup.json',
          "the checkpoint must be built from this source's own exact reads",
        );
      return configOwner.buildConfigurationCheckpoint({ registry: r, machineConfiguration: m }).bytes;
    },
    verifyConfigurationCheckpoint(bytes: Uint8Array): ConfigurationCheckpointVerification {
      const v = configOwner.verifyConfigurationCheckpoint(bytes);
      return {
        ok: v.ok,
        sha256: v.sha256 ?? '',
        goal_count: v.goal_count,
        machine_configuration_present: v.machine_configuration_present,
        privacy_certified: false,
        activation_performed: false,
        readback_verified: v.readback_verified,
        problems: v.findings.map((f) => f.code),
      };
    },
  };
}

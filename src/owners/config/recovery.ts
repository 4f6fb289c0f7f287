/**
 * The config owner's recovery contract: the machine configuration store and its transaction
 * receipts, read from a copy; and, when the copy has the configuration checkpoint beside it (a
 * backup's `configuration-backup.json`), the checkpoint's own verifier.
 */
import { dirname, join } from 'node:path';
import { readRegularFileOnce } from '../../core/index.js';
import type { HistoricalRead, OwnerFinding, OwnerRecovery, OwnerScope } from '../contract.js';
import { MACHINE, hasErrors } from '../contract.js';
import { OWNER_EXPORT_MAX_ITEMS, byKey, exportFindings } from '../export.js';
import { captureFiles } from '../file-recovery.js';
import { LAYOUT } from '../layout.js';
import { CHECKPOINT_MAX_BYTES, verifyConfigurationCheckpoint } from './checkpoint.js';
import { CHECKPOINT_FILE, MACHINE_CONFIGURATION_SCHEMA, type ConfigHistoricalRead } from './contract.js';
import { openFileConfigStore } from './file.js';
import { readHistoricalCopy } from './historical.js';

const EXPORT_SCHEMA = 'loopx_config_export_v0';
/** The config owner's directory in a root: its configuration file and its transactions. */
const MACHINE_DIR = dirname(LAYOUT.machineConfiguration);

function readHistorical(root: string, scope: OwnerScope): HistoricalRead<ConfigHistoricalRead> {
  const c = readHistoricalCopy(root);
  return {
    owner: 'config',
    scope,
    readable: c.configuration !== null,
    ok: c.ok,
    schema_version: c.configuration !== null ? MACHINE_CONFIGURATION_SCHEMA : null,
    source_identity: null,
    revision: c.configuration?.revision ?? null,
    cursor: null,
    counts: {
      namespaces: c.configuration?.value ? Object.keys(c.configuration.value.namespaces).length : 0,
      receipts: c.receipts.length,
    },
    value: c,
    findings: c.findings,
    execution_authority_granted: false,
  };
}

/** The checkpoint beside the copy: read once, bounded, never through a link. */
function checkpointOf(beside: string) {
  let bytes: Uint8Array | null = null;
  try {
    bytes = readRegularFileOnce(join(beside, CHECKPOINT_FILE), CHECKPOINT_MAX_BYTES);
  } catch {
    bytes = null;
  }
  if (bytes === null) {
    const findings: OwnerFinding[] = [
      {
        code: 'checkpoint_unreadable',
        severity: 'error',
        subject: CHECKPOINT_FILE,
        next_action: 'use another backup of this root',
      },
    ];
    return { ok: false, sha256: null, goal_count: 0, machine_configuration_present: false, findings };
  }
  const v = verifyConfigurationCheckpoint(bytes);
  return {
    ok: v.ok,
    sha256: v.sha256,
    goal_count: v.goal_count,
    machine_configuration_present: v.machine_configuration_present,
    findings: v.findings as readonly OwnerFinding[],
  };
}

export const recovery: OwnerRecovery<ConfigHistoricalRead> = {
  name: 'config',
  decides: 'the machine configuration store and the configuration checkpoint',
  scope: 'machine',
  members: () => [{ path: MACHINE_DIR, kind: 'directory' }],
  requiredForGoal: true,
  dependsOn: ['registry'],
  observe: async (live) => ({
    revision: openFileConfigStore(live.root).readExact().revision,
    cursor: null,
    at: new Date().toISOString(),
  }),
  classification: 'recovered_readable',
  verificationProfile: 'loopx.config.checkpoint+readHistorical/v0',
  capture: async (live, scope, into) =>
    captureFiles(
      {
        owner: 'config',
        exportSchema: EXPORT_SCHEMA,
        members: [MACHINE_DIR],
        liveRevision: (l) => openFileConfigStore(l.root).readExact().revision,
        readHistorical,
        items: (v) => [
          ...Object.keys(v.configuration?.value?.namespaces ?? {})
            .sort()
            .map((name) => ({ kind: 'namespace', name, value: v.configuration!.value!.namespaces[name]! })),
          ...byKey(v.receipts, (r) => r.transaction_id).map((value) => ({ kind: 'receipt', value })),
        ],
      },
      live,
      scope,
      into,
    ),
  verifyOffline(copy, scope = MACHINE, options = {}) {
    const h = readHistorical(copy.root, scope);
    const checkpoint = copy.beside === undefined ? null : checkpointOf(copy.beside);
    const findings = [
      ...(checkpoint?.findings ?? []),
      ...h.findings,
      ...(options.export === undefined
        ? []
        : exportFindings(
            options.export,
            { schema: EXPORT_SCHEMA, owner: 'config', scope, maxItems: OWNER_EXPORT_MAX_ITEMS },
            h.revision,
          )),
    ];
    const ok = h.ok && (checkpoint?.ok ?? true) && !hasErrors(findings);
    return {
      owner: 'config',
      scope,
      members: [],
      ok,
      readback: { ok: h.ok, counts: h.counts },
      source_identity: null,
      revision: h.revision,
      cursor: null,
      facts: {
        checkpoint: checkpoint && {
          ok: checkpoint.ok,
          sha256: checkpoint.sha256,
          goal_count: checkpoint.goal_count,
          machine_configuration_present: checkpoint.machine_configuration_present,
          codes: checkpoint.findings.map((f) => f.code),
        },
        config_ok: h.ok,
        configuration_revision: h.revision,
        configuration_receipts: h.value.receipts.length,
      },
      findings,
    };
  },
  readHistorical: (copy, scope) => readHistorical(copy.root, scope),
};

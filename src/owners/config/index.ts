/** Public API of the config owner: the machine configuration store and the configuration checkpoint. */
export {
  CHECKPOINT_FILE,
  CHECKPOINT_SCHEMA,
  MACHINE_CONFIGURATION_SCHEMA,
  TRANSACTION_SCHEMA,
  STORE_CONFIG_NAMESPACE,
  type BuiltCheckpoint,
  type CheckpointFinding,
  type CheckpointFindingCode,
  type CheckpointVerification,
  type ConfigExactRead,
  type ConfigFinding,
  type ConfigFindingCode,
  type ConfigHistoricalRead,
  type ConfigRead,
  type ConfigStore,
  type ConfigTransaction,
  type ConfigurationCheckpoint,
  type Finding,
  type MachineConfiguration,
  type NamespaceValue,
  type TransactionReceipt,
} from './contract.js';
export {
  CONFIG_MAX_BYTES,
  configRevision,
  decodeMachineConfiguration,
  EMPTY_CONFIGURATION,
  NAMESPACE_ID,
  TRANSACTION_ID,
} from './codec.js';
export { openFileConfigStore, TRANSACTIONS_DIR } from './file.js';
export { memoryConfigStore } from './memory.js';
export {
  buildConfigurationCheckpoint,
  verifyConfigurationCheckpoint,
  CHECKPOINT_MAX_BYTES,
  type CheckpointSources,
} from './checkpoint.js';
export { recovery } from './recovery.js';
export { adoptionSteps } from './adopt.js';

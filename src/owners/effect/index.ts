/**
 * Public API of the effect owner: the journal of external effects (operation identity, intent,
 * outcome, receipt, history) and its outbox; reconciliation of uncertain outcomes under their
 * original operation id; webhook delivery through the journal. Live API: `EffectJournal` (async),
 * the owner over an `EffectPort` — SQLite `effects.db` or the in-memory reference; a new provider
 * implements the port in its own file. Recovery contract:
 * `readHistorical` reads a copy of effects.db without authority and dispatches nothing.
 */
export {
  EFFECT_OUTCOMES,
  MAX_INTENT_BYTES,
  MAX_RECEIPT_BYTES,
  runEffectScope,
  type AdoptEffectRequest,
  type EffectEvent,
  type EffectJournal,
  type EffectJournalOptions,
  type EffectOutcome,
  type EffectRecord,
  type EffectTransition,
  type EffectWriteResult,
  type ExpectedEffectState,
  type JsonValue,
  type ListEffectsFilter,
  type OutboxEntry,
  type ReconcileObservation,
  type ReconcileQuery,
  type ReconcileResult,
  type RecordIntentRequest,
  type ResolvedOutcome,
  type SettledOutcome,
} from './contract.js';
export {
  EFFECT_ERROR_CODES,
  EFFECT_ERRORS,
  alreadySettled,
  isEffectError,
  outcomeUnknown,
  type EffectError,
  type EffectErrorCode,
} from './errors.js';
export { isUncertain } from './rules.js';
export {
  RECEIVER_GONE,
  TARGET_RETIRED_KIND,
  effectsToRetire,
  receiverGone,
  retireTarget,
  targetRetirement,
  type RetireTargetRequest,
} from './retire.js';
export type { EffectOutboxChange, EffectPort, EffectQuery, EffectRows, EffectWrite } from './port.js';
export {
  effectJournal,
  memoryEffectJournal,
  openSqliteEffectJournal,
  type SqliteEffectJournalOptions,
} from './journal.js';
export {
  createMemoryEffectState,
  memoryEffectPort,
  type MemoryEffectPortOptions,
  type MemoryEffectState,
} from './memory.js';
export { openSqliteEffectPort, type SqliteEffectPortOptions } from './sqlite.js';
export { EFFECT_PG_MIGRATIONS, EFFECT_SQL } from './sql.js';
export { openPgEffectPort, type PgEffectPortOptions } from './postgres.js';
export {
  DEFAULT_WEBHOOK_TIMEOUT_MS,
  FAULT_BEFORE_WEBHOOK_SEND,
  FAULT_AFTER_WEBHOOK_SEND,
  WEBHOOK_KIND,
  advanceReceiverFence,
  deliverWebhook,
  goalReceivers,
  receiverNewestFence,
  sendWebhook,
  webhookGoalQuery,
  webhookIntent,
  webhookOperationQuery,
  webhookTarget,
  type DeliveryFence,
  type ReceiverDelivery,
  type ReceiverFenceResult,
  type ReceiverNewestFence,
  type WebhookDeliveryRequest,
  type WebhookDeliveryResult,
  type WebhookGoalQueryResult,
  type WebhookIntent,
  type WebhookOptions,
  type WebhookSendResult,
} from './webhook.js';
export type { EffectFinding, EffectHistory, ReadHistoricalOptions } from './historical.js';
export { recovery } from './recovery.js';
export { adoptionSteps, EFFECTS_CONFIG_NAMESPACE, openRootEffectJournal, TODO_UPDATE_KIND } from './adopt.js';
export { readHistoricalFile } from './historical.js';

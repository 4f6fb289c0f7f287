/**
 * Public API of dev: development and test stand-ins for systems outside loopx. Nothing in an
 * owner, the engine or recovery imports this folder; tests, the demo and `loopx dev webhook-sink` use it.
 */
export {
  SINK_ATTEMPT_RESULTS,
  SINK_BODY_LIMIT,
  SINK_FAIL_MODES,
  startWebhookSink,
  type SinkAttempt,
  type SinkAttemptResult,
  type SinkAttempts,
  type SinkFailMode,
  type StoredDelivery,
  type WebhookSink,
  type WebhookSinkOptions,
} from './webhook-sink.js';
export {
  DEV_RECEIVER_PORT,
  devReceiverDir,
  devReceiverPort,
  devReceiverUsed,
  openDevReceiver,
  type DevReceiver,
} from './dev-receiver.js';

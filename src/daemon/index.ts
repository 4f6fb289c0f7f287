/**
 * Public API of daemon: the loopback HTTP API and the built Settings ▸ Capability Center UI
 * (docs/api.md). `buildApp` is the app as a value (tests inject requests without a port);
 * `startDaemon` runs it for one root on 127.0.0.1 with its lock and tokens. The sample root
 * (`npm start`) is the runtime's `seedSample`.
 */
export { buildApp, type AppOptions, type DaemonApp } from './app.js';
export { startDaemon, type DaemonOptions, type RunningDaemon } from './server.js';
export { LOOPBACK, requestLoginUrl } from './login-url.js';
export { LoginTokens, newToken } from './security.js';
export { MAX_PENDING_UPLOADS, STALE_UPLOAD_MS, type PendingUpload } from './backups.js';
export { DEFAULT_TIMEOUTS, type DaemonTimeouts } from './body.js';

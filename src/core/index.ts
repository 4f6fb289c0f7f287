/** Public API of core: typed errors, digests, canonical JSON, durable and private fs, locks, fault points, recovery-workspace recognition. */
export * from './errors.js';
export * from './digest.js';
export * from './canonical-json.js';
export * from './fs.js';
export * from './read-once.js';
export * from './flock.js';
export * from './faults.js';
export * from './version.js';
export * from './encoding.js';
export * from './recovery-workspace.js';

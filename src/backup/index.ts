/**
 * Public API of backup: backup-state plan/create (issue 4).
 * Empty until that issue lands; nothing imports it yet.
 */
export {};

/**
 * Public API of daemon: the loopback HTTP API and the built UI (issue 6).
 * Empty until that issue lands; nothing imports it yet.
 */
export {};

/**
 * Public API of recovery: M1 verify + audit, M2 profile checks, M3 adoption (issue 5 onward).
 * Empty until that issue lands; nothing imports it yet.
 */
export {};

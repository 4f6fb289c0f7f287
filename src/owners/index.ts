/**
 * Public API of owners: the decision owners of a runtime root: registry, config, goal, work, session, effect, quota, scheduler (issue 4).
 * Empty until that issue lands; nothing imports it yet.
 */
export {};

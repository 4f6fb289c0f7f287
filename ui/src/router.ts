/** Hash routes: #/settings/capability-center/backup, …/backup/audits/<recovery_id>, …/backup/recoveries/<recovery_id>, …/repositories, …/drills, …/drills/<drill_id>, #/goals, #/goals/<goal_id>, #/runs, #/runs/<run_id>; a recovered root's pages under #/roots/<name>/goals/<goal_id> and #/roots/<name>/runs/<run_id>. */
import { useEffect, useState } from 'react';

const rootPrefix = (root?: string | null) => (root ? `#/roots/${encodeURIComponent(root)}` : '');

export const ROUTES = {
  backup: '#/settings/capability-center/backup',
  audit: (recoveryId: string) => `#/settings/capability-center/backup/audits/${encodeURIComponent(recoveryId)}`,
  recovery: (recoveryId: string) => `#/settings/capability-center/backup/recoveries/${encodeURIComponent(recoveryId)}`,
  repositories: '#/settings/capability-center/repositories',
  drills: '#/settings/capability-center/drills',
  drill: (drillId: string) => `#/settings/capability-center/drills/${encodeURIComponent(drillId)}`,
  goals: '#/goals',
  /** A Goal of the daemon's root, or of a root one of its recoveries made (`root`, that root's name). */
  goal: (goalId: string, root?: string | null) =>
    (root ? `${rootPrefix(root)}/goals/` : '#/goals/') + encodeURIComponent(goalId),
  runs: '#/runs',
  run: (runId: string, root?: string | null) =>
    (root ? `${rootPrefix(root)}/runs/` : '#/runs/') + encodeURIComponent(runId),
} as const;

/** A run's API path (`suffix` after its id), in the root a page reads. */
export const runPath = (runId: string, root: string | null | undefined, suffix = '') =>
  `/api/runs/${encodeURIComponent(runId)}${suffix}${rootQuery(root, suffix.includes('?') ? '&' : '?')}`;

/** The API query naming the root a page reads (empty for the daemon's own). */
export const rootQuery = (root?: string | null, sep: '?' | '&' = '?') =>
  root ? `${sep}root=${encodeURIComponent(root)}` : '';

export type Route =
  | { readonly page: 'backup' }
  | { readonly page: 'audit'; readonly recoveryId: string }
  | { readonly page: 'recovery'; readonly recoveryId: string }
  | { readonly page: 'repositories' }
  | { readonly page: 'drills' }
  | { readonly page: 'drill'; readonly drillId: string }
  | { readonly page: 'goals' }
  | { readonly page: 'goal-page'; readonly goalId: string; readonly root?: string }
  | { readonly page: 'runs' }
  | { readonly page: 'run'; readonly runId: string; readonly root?: string }
  | { readonly page: 'not-found'; readonly hash: string };

export function parseRoute(hash: string): Route {
  if (hash.includes('login=')) return { page: 'backup' }; // being taken out of the address
  const raw = hash.replace(/^#\/?/, '');
  let parts: string[];
  try {
    parts = raw
      .split('/')
      .filter((p) => p.length > 0)
      .map((p) => decodeURIComponent(p));
  } catch {
    return { page: 'not-found', hash };
  }
  const [a, b, c, d, e, ...rest] = parts;
  if (parts.length === 0) return { page: 'backup' };
  // A root one of the daemon's recoveries made: its Goal and run pages, named by the root's name.
  if (a === 'roots' && b && d && parts.length === 4) {
    if (c === 'goals') return { page: 'goal-page', goalId: d, root: b };
    if (c === 'runs') return { page: 'run', runId: d, root: b };
  }
  if (a === 'settings') {
    if (parts.length === 1 || (b === 'capability-center' && parts.length === 2)) return { page: 'backup' };
    if (b === 'capability-center' && c === 'backup') {
      if (parts.length === 3) return { page: 'backup' };
      if (d === 'audits' && e && rest.length === 0) return { page: 'audit', recoveryId: e };
      if (d === 'recoveries' && e && rest.length === 0) return { page: 'recovery', recoveryId: e };
    }
    if (b === 'capability-center' && c === 'runs' && parts.length === 3) return { page: 'runs' };
    if (b === 'capability-center' && c === 'repositories' && parts.length === 3) return { page: 'repositories' };
    if (b === 'capability-center' && c === 'drills') {
      if (parts.length === 3) return { page: 'drills' };
      if (d && parts.length === 4) return { page: 'drill', drillId: d };
    }
  }
  if (a === 'goals') {
    if (parts.length === 1) return { page: 'goals' };
    if (b && parts.length === 2) return { page: 'goal-page', goalId: b };
  }
  if (a === 'runs') {
    if (parts.length === 1) return { page: 'runs' };
    if (b && parts.length === 2) return { page: 'run', runId: b };
  }
  return { page: 'not-found', hash };
}

/** True once the user has moved between routes (so a page moves focus to its heading). */
let navigated = false;

export function hasNavigated(): boolean {
  return navigated;
}

export function useRoute(): Route {
  const [hash, setHash] = useState(() => window.location.hash);
  useEffect(() => {
    const onChange = () => {
      navigated = true;
      setHash(window.location.hash);
    };
    window.addEventListener('hashchange', onChange);
    return () => window.removeEventListener('hashchange', onChange);
  }, []);
  return parseRoute(hash);
}

export function navigate(hash: string): void {
  if (window.location.hash === hash) return;
  window.location.hash = hash;
}

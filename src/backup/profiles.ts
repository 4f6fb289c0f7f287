/**
 * Capture consistency profiles and the downgrade reason codes of a `loopx_state_backup_v1` set —
 * defined once here. A profile states evidence, never a promise: each component's achieved profile
 * is the requested one only when its own evidence holds, and the set's is its weakest required
 * component's. A warning never upgrades a profile; a downgrade is always recorded with its code.
 */

export const CAPTURE_PROFILES = ['online', 'quiescent', 'crash_consistent'] as const;
export type CaptureProfile = (typeof CAPTURE_PROFILES)[number];

/** `online` is the weakest; the other two are never mixed in one set (a set requests one profile; a downgrade falls to online). */
const RANK: Record<CaptureProfile, number> = { online: 0, crash_consistent: 1, quiescent: 2 };

export const weakestProfile = (profiles: readonly CaptureProfile[], fallback: CaptureProfile): CaptureProfile =>
  profiles.reduce<CaptureProfile>((w, p) => (RANK[p] < RANK[w] ? p : w), fallback);

/** Why a component (or the set) achieved less than was requested, or why a required component is held. */
export const DOWNGRADE_CODES = {
  /** Quiescent: a writer did not drain within --quiesce-timeout, so admission closed over live work. */
  notDrained: 'capture_writers_not_drained',
  /** Quiescent: the component's revision moved between the quiescence epoch and the end re-check. */
  moved: 'capture_component_moved',
  /** Quiescent: an effect was dispatched and not settled when the component was captured. */
  effectInFlight: 'capture_effect_in_flight',
  /** The owner could not capture a required component: it is held, never silently optional. */
  unreadable: 'capture_component_unreadable',
  /** A Goal's required component has no store at all (its Goal is registered, its state is not there): held. */
  missing: 'capture_component_missing',
  /** The set achieved less than it requested (its weakest required component's profile). */
  setDowngraded: 'capture_profile_downgraded',
} as const;
export type DowngradeCode = (typeof DOWNGRADE_CODES)[keyof typeof DOWNGRADE_CODES];

/** The one next action of each code, in operator words. */
export const DOWNGRADE_NEXT: Record<DowngradeCode, string> = {
  capture_writers_not_drained:
    'stop or finish the running work, then back up again with --profile quiescent (or a longer --quiesce-timeout)',
  capture_component_moved: 'back up again with --profile quiescent once nothing writes to the root',
  capture_effect_in_flight:
    'let the external call finish, or settle it through the run that made it, then back up again with --profile quiescent',
  capture_component_unreadable: "repair this owner's store, then back up again",
  capture_component_missing:
    "restore the Goal's missing store from an earlier backup, or retire the Goal, then back up again",
  capture_profile_downgraded:
    'read the component downgrades; back up again when they are cleared if a stronger profile is needed',
};

/** The CLI spelling (`crash-consistent`) to the manifest's (`crash_consistent`). */
export function parseProfile(s: string): CaptureProfile | undefined {
  const p = s.replace(/-/g, '_');
  return (CAPTURE_PROFILES as readonly string[]).includes(p) ? (p as CaptureProfile) : undefined;
}

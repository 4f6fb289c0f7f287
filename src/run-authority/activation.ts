/**
 * The recovery activation switch (`loopx recover disable-activation` / `enable-activation`): one
 * per-user setting in the run authority, read on every request by every root and daemon of the
 * user. While it is off, `recover plan`, `apply` and `resolve` refuse `recover_activation_disabled`
 * and change nothing; verify, audit, status and abort keep working — the specification's rollback
 * of recovery: "disable the activation entry; keep verify and audit".
 *
 * Decided here once over a provider's table (`settings/activation.json` in the local directory, a
 * Map in memory, a row on PostgreSQL). A stored setting that does not decode is
 * `authority_activation_corrupt` — never "on".
 */
import { internal, rejected, usageError, type LoopxError } from '../core/index.js';
import type { WorkMarkTable } from './work-marks.js';

const SCHEMA = 'loopx.run-authority.activation/v1';
const KEY = 'activation';
const REASON = /^[^\u0000-\u001f\u007f]{1,500}$/u;

/** Whether recovery activation is on, and — when an operator turned it off — why and when. */
export interface ActivationSetting {
  readonly disabled: boolean;
  readonly reason: string | null;
  /** ISO timestamp of the last change; null when it was never changed (on). */
  readonly changed_at: string | null;
}

/** Where a provider keeps the setting: the same atomic, durable get/put as its work marks. */
export type SettingTable = WorkMarkTable;

const ON: ActivationSetting = { disabled: false, reason: null, changed_at: null };

const corrupt = (): LoopxError =>
  internal('authority_activation_corrupt', "The run authority's recovery activation setting is malformed.", {
    nextAction: 'set it again: loopx recover enable-activation',
  });

export const activationReasonInvalid = (): LoopxError =>
  usageError(
    'recover_activation_reason_invalid',
    'The reason is 1–500 characters on one line.',
    'say why in one line: loopx recover disable-activation --reason TEXT',
  );

/** A recovery refused while activation is off. */
export const recoverActivationDisabled = (s: ActivationSetting): LoopxError =>
  rejected(
    'recover_activation_disabled',
    `Recovery activation is turned off for this user${s.reason === null ? '' : ` (${s.reason})`}; verify and audit still work.`,
    {
      nextAction: 'turn it back on when recovery may continue: loopx recover enable-activation',
      details: { changed_at: s.changed_at },
    },
  );

function decode(raw: Uint8Array | string): ActivationSetting {
  let v: Record<string, unknown>;
  try {
    v = JSON.parse(typeof raw === 'string' ? raw : Buffer.from(raw).toString('utf8')) as Record<string, unknown>;
  } catch {
    throw corrupt();
  }
  const ok =
    v !== null &&
    typeof v === 'object' &&
    Object.keys(v).sort().join(',') === 'changed_at,disabled,reason,schema' &&
    v.schema === SCHEMA &&
    typeof v.disabled === 'boolean' &&
    (v.reason === null || (typeof v.reason === 'string' && REASON.test(v.reason))) &&
    typeof v.changed_at === 'string' &&
    !Number.isNaN(Date.parse(v.changed_at));
  if (!ok) throw corrupt();
  return { disabled: v.disabled as boolean, reason: v.reason as string | null, changed_at: v.changed_at as string };
}

export async function readActivation(table: SettingTable): Promise<ActivationSetting> {
  const raw = await table.get(KEY);
  return raw === undefined ? ON : decode(raw);
}

/** Turns activation off (with the operator's reason) or on; returns the setting as stored. */
export async function writeActivation(
  table: SettingTable,
  request: { readonly disabled: boolean; readonly reason?: string },
  now: Date = new Date(),
): Promise<ActivationSetting> {
  const reason = request.disabled ? (request.reason ?? null) : null;
  if (reason !== null && !REASON.test(reason)) throw activationReasonInvalid();
  const setting: ActivationSetting = { disabled: request.disabled, reason, changed_at: now.toISOString() };
  await table.put(KEY, JSON.stringify({ schema: SCHEMA, ...setting }));
  return setting;
}

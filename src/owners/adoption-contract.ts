/**
 * The types of an owner's adoption steps (adoption.ts has the table and the rules), and the one
 * step every owner whose state stays history shares: `retain_historical`.
 */
import type { CopiedRoot, HistoricalRead, OwnerScope } from './contract.js';

export const DISPOSITIONS = ['retain_historical', 'import_inert', 'rebind', 'reconcile', 'rebuild', 'discard'] as const;
export type Disposition = (typeof DISPOSITIONS)[number];

/** What an owner cannot settle during adoption: visible, owned, with one next action. */
export interface AdoptionHold {
  /** Stable within a recovery, e.g. `effect:<operation id>`. */
  readonly hold_id: string;
  readonly owner: string;
  readonly code: string;
  /** Public-safe subject: ids and labels, never URLs, paths or payloads. */
  readonly subject: string;
  /** What must become true for the hold to clear. */
  readonly continuation: string;
  /** Whether asking again (`recover resolve … --hold H`) can clear it. */
  readonly retryable: boolean;
}

export interface AdoptionStepReceipt {
  readonly owner: string;
  readonly action: string;
  readonly disposition: Disposition;
  readonly idempotency_key: string;
  readonly result: 'applied' | 'already';
  /** What the owner's readback shows after the step (ids, counts, revisions — never payloads). */
  readonly readback: Readonly<Record<string, unknown>>;
  readonly holds: readonly AdoptionHold[];
  /** A lifetime this step minted: the coordinator records the supersession outside the root before going on. */
  readonly lifetime?: {
    readonly goal_id: string;
    readonly superseded: string;
    readonly successor: string;
    readonly lineage_id: string;
    readonly generation: number;
  };
  readonly execution_authority_granted: false;
}

/** A component of the Goal's closure as the audit verified it. */
export interface AdoptionComponent {
  readonly component_id: string;
  readonly owner: string;
  readonly content_digest: string;
  readonly source_identity: string | null;
  readonly source_revision: string | null;
  /** The component's export in the workspace (relative to the workspace directory), if any. */
  readonly export_member: string | null;
}

/** An external receiver, asked by the effect owner during reconciliation (injectable for tests). */
export interface AdoptionOptions {
  readonly fetch?: typeof fetch;
  readonly timeoutMs?: number;
}

export interface AdoptionContext {
  readonly recovery_id: string;
  readonly goal_id: string;
  /**
   * The source root as the apply staged it (read only through owners' readers): the members of the
   * steps' components, copied from the recovery workspace into the destination's private staging
   * and checked there against the digests the audit verified. Never the workspace itself — bytes
   * changed there after the plan are refused before any step, or never read.
   */
  readonly workspace_root: string;
  /** The staged workspace directory (its manifest and the staged component exports, as in the workspace). */
  readonly workspace_dir: string;
  /**
   * The records of the workspace's components captured from a database service (no member in
   * `workspace_root`: the export is their state), by owner and scope, read from the staged exports;
   * undefined for the others.
   */
  readonly exports?: CopiedRoot['exports'];
  /** Private scratch for SQLite copies. */
  readonly scratch_dir: string;
  /** The destination runtime root. */
  readonly destination: string;
  /** This owner's components in the Goal's closure. */
  readonly components: readonly AdoptionComponent[];
  /** The idempotency key of one action: derived from (recovery id, component id, action). */
  key(action: string): string;
  /** Named crash points around owner commits (tests): `recover.<action>.before|after`. */
  fault(point: string): void;
  readonly options: AdoptionOptions;
}

export interface OwnerAdoptionStep {
  /** `<owner>:<disposition>`, unique in a recovery. */
  readonly action: string;
  readonly disposition: Disposition;
  /** One sentence for the preview. */
  readonly describes: string;
  /** The step mints a new Goal lifetime (its receipt's `lifetime`): the coordinator records the supersession outside the root right after it. */
  readonly mintsLifetime?: true;
  /**
   * `false`: the step reads nothing of the recovery workspace, and the coordinator stages nothing
   * for it. Otherwise it reads its own components' members and exports — only those, and only
   * through the context's paths (the apply's staged, verified copies).
   */
  readonly readsWorkspace?: false;
  apply(ctx: AdoptionContext): Promise<AdoptionStepReceipt>;
}

/** The receipt of a step, with the fields every receipt carries. */
export const stepReceipt = (
  step: Pick<OwnerAdoptionStep, 'action' | 'disposition'>,
  owner: string,
  ctx: AdoptionContext,
  result: 'applied' | 'already',
  readback: Record<string, unknown>,
  extra: { holds?: readonly AdoptionHold[]; lifetime?: AdoptionStepReceipt['lifetime'] } = {},
): AdoptionStepReceipt => ({
  owner,
  action: step.action,
  disposition: step.disposition,
  idempotency_key: ctx.key(step.action),
  result,
  readback,
  holds: extra.holds ?? [],
  ...(extra.lifetime ? { lifetime: extra.lifetime } : {}),
  execution_authority_granted: false,
});

/**
 * `retain_historical`: the owner's recovered state stays history, readable in the recovery
 * workspace the plan binds; nothing is written to the destination, and nothing of it is live.
 */
export function retainHistorical(
  owner: string,
  describes: string,
  read?: (ctx: AdoptionContext) => HistoricalRead<unknown>,
): OwnerAdoptionStep {
  const step: OwnerAdoptionStep = {
    action: `${owner}:retain_historical`,
    disposition: 'retain_historical',
    describes,
    ...(read ? {} : { readsWorkspace: false as const }),
    apply: async (ctx) => {
      const h = read?.(ctx);
      return stepReceipt(step, owner, ctx, 'already', {
        kept_in: 'recovery_workspace',
        ...(h ? { counts: h.counts, revision: h.revision } : {}),
      });
    },
  };
  return step;
}

export type { OwnerScope };

/**
 * `loopx recover` composed for the CLI and the daemon: the adoption coordinator (src/recovery/)
 * with its host — the new root made and bound through the engine (its identity in the run
 * authority), and the run authority's record of the superseded lifetime. It decides nothing the
 * coordinator, an owner or the authority decides.
 */
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { readHistoricalRootId } from '../engine/index.js';
import { LAYOUT } from '../owners/index.js';
import {
  abortAdoption,
  applyAdoption,
  planAdoption,
  recoveryStatus,
  resolveHold,
  type AdoptionHost,
  type AdoptionPlan,
  type AdoptionRunOptions,
  type DestinationStore,
  type PlannedStep,
  type RecoveryStatus,
} from '../recovery/index.js';
import type { RunAuthority } from '../run-authority/index.js';
import { databaseUrlFrom, schemaIdent } from '../store/index.js';
import { initDestinationRoot, withAuthority, withDestinationEngine } from './root.js';
import { initPostgresDestination } from './store-config.js';

export interface RecoverAccess {
  readonly authorityDir?: string;
  /** The live root of this invocation (never a destination). */
  readonly liveRoot?: string;
  /** Injected for tests (the receivers' HTTP client). */
  readonly fetch?: typeof fetch;
  readonly onStep?: (step: PlannedStep, index: number, total: number) => void;
}

function hostOf(a: RecoverAccess, authority: RunAuthority): AdoptionHost {
  return {
    async initDestination(root, store) {
      initDestinationRoot(root, { ownerStores: store === undefined });
      if (store) await initPostgresDestination(root, store);
      return withDestinationEngine({ root, ...(a.authorityDir !== undefined ? { authorityDir: a.authorityDir } : {}) }, (engine) => engine.rootId());
    },
    supersede: (request) => authority.supersedeLifetime(request),
    sourceRoot: (workspaceRoot) => {
      const copy = join(workspaceRoot, LAYOUT.engineDb);
      return existsSync(copy) ? readHistoricalRootId(copy) : null;
    },
    supersession: (id) => authority.lifetimeSupersession(id),
  };
}

const runOptions = (a: RecoverAccess, authority: RunAuthority): AdoptionRunOptions => ({
  host: hostOf(a, authority),
  ...(a.fetch ? { fetch: a.fetch } : {}),
  ...(a.onStep ? { onStep: a.onStep } : {}),
});

/** `loopx recover plan`: the digest-bound plan written into the destination; nothing live is touched. */
export function planRecovery(
  a: RecoverAccess & { workspace: string; goalId: string; destination: string; store?: { readonly databaseUrl: string; readonly schema?: string } },
): AdoptionPlan {
  let store: DestinationStore | undefined;
  if (a.store) {
    if (a.store.schema !== undefined) schemaIdent(a.store.schema);
    databaseUrlFrom(a.store.databaseUrl); // the reference must resolve now; the URL itself is never recorded
    store = { provider: 'postgresql', database_url: a.store.databaseUrl, schema: a.store.schema ?? `loopx_${randomBytes(6).toString('hex')}` };
  }
  return planAdoption({
    workspace: a.workspace,
    goalId: a.goalId,
    destination: a.destination,
    places: { liveRoot: a.liveRoot, authorityDir: a.authorityDir },
    ...(store ? { store } : {}),
  });
}

export const applyRecovery = (a: RecoverAccess, destination: string, confirm: string): Promise<RecoveryStatus> =>
  withAuthority(a, (authority) => applyAdoption(resolve(destination), confirm, runOptions(a, authority)));

export const recoveryStatusOf = (a: RecoverAccess, destination: string): Promise<RecoveryStatus> =>
  withAuthority(a, (authority) => recoveryStatus(resolve(destination), hostOf(a, authority)));

export const resolveRecoveryHold = (a: RecoverAccess, destination: string, holdId: string, outcome?: 'committed' | 'absent'): Promise<RecoveryStatus> =>
  withAuthority(a, (authority) => resolveHold(resolve(destination), holdId, { ...runOptions(a, authority), ...(outcome ? { outcome } : {}) }));

export const abortRecovery = (a: RecoverAccess, destination: string): Promise<RecoveryStatus> =>
  withAuthority(a, (authority) => abortAdoption(resolve(destination), hostOf(a, authority)));

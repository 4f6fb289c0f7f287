/**
 * `loopx recover` composed for the CLI and the daemon: the adoption coordinator (src/recovery/)
 * with its host — the new root made and bound through the engine (its identity in the run
 * authority), and the run authority's record of the superseded lifetime. It decides nothing the
 * coordinator, an owner or the authority decides.
 */
import { randomBytes } from 'node:crypto';
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { lengthPrefixed, utf8, writeFileDurable } from '../core/index.js';
import { readHistoricalRootId } from '../engine/index.js';
import { LAYOUT } from '../owners/index.js';
import {
  abortAdoption,
  applyAdoption,
  planAdoption,
  PLAN_SEAL_FILE,
  RECOVERY_DIR,
  recoveryStatus,
  resolveHold,
  type AdoptionHost,
  type AdoptionPlan,
  type AdoptionRunOptions,
  type DestinationStore,
  type HoldSettlement,
  type PlannedStep,
  type RecoveryStatus,
} from '../recovery/index.js';
import {
  defaultAuthorityDir,
  recoverActivationDisabled,
  type ActivationSetting,
  type ClaimInput,
  type RunAuthority,
} from '../run-authority/index.js';
import { databaseUrlFrom, schemaIdent } from '../store/index.js';
import { pinForRecovery, releaseRecoveryPin } from './repository.js';
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

/**
 * The seal over the digest `recover plan` printed: that digest with the run authority's claim
 * (its key, never stored in the destination) over the recovery id and it, kept beside the plan.
 * A next action names the digest the seal vouches for — the printed one, whatever the plan file
 * says now — and none when the seal does not verify: an edited plan file, its own digest
 * recomputed, never has that digest handed back to the operator as the one to confirm.
 */
const SEAL_SCHEMA = 'loopx.recovery-plan-seal/v1';

interface PlanSeal {
  readonly schema_version: typeof SEAL_SCHEMA;
  /** The digest `recover plan` printed. */
  readonly plan_digest: string;
  readonly key_generation: number;
  readonly mac: string;
}

const sealInput = (keyGeneration: number, recoveryId: string, digest: string): ClaimInput => ({
  keyGeneration,
  runId: `recovery:${recoveryId}`,
  transitionGeneration: 0,
  macInput: lengthPrefixed([utf8(SEAL_SCHEMA), utf8(recoveryId), utf8(digest)]),
});

function sealPlan(authority: RunAuthority, plan: AdoptionPlan): void {
  const generation = authority.currentKeyGeneration();
  const mac = Buffer.from(authority.claim(sealInput(generation, plan.recovery_id, plan.plan_digest))).toString('hex');
  const seal: PlanSeal = {
    schema_version: SEAL_SCHEMA,
    plan_digest: plan.plan_digest,
    key_generation: generation,
    mac,
  };
  writeFileDurable(join(plan.destination.path, RECOVERY_DIR, PLAN_SEAL_FILE), `${JSON.stringify(seal)}\n`, {
    exclusive: true,
  });
}

/** The digest `recover plan` printed for this recovery (whatever the plan file says now), if the seal beside it verifies. */
function printedDigest(authority: RunAuthority, plan: AdoptionPlan): string | undefined {
  let seal: Partial<PlanSeal>;
  try {
    seal = JSON.parse(
      readFileSync(join(plan.destination.path, RECOVERY_DIR, PLAN_SEAL_FILE), 'utf8'),
    ) as Partial<PlanSeal>;
  } catch {
    return undefined;
  }
  const hex = /^[0-9a-f]{64}$/;
  if (
    seal.schema_version !== SEAL_SCHEMA ||
    !Number.isSafeInteger(seal.key_generation) ||
    !hex.test(String(seal.mac)) ||
    !hex.test(String(seal.plan_digest))
  )
    return undefined;
  const input = sealInput(seal.key_generation!, plan.recovery_id, seal.plan_digest!);
  return authority.verifyClaim(authority.scopeId, input, Buffer.from(seal.mac!, 'hex')) ? seal.plan_digest : undefined;
}

function hostOf(a: RecoverAccess, authority: RunAuthority): AdoptionHost {
  return {
    printedDigest: (plan) => printedDigest(authority, plan),
    async initDestination(root, store) {
      initDestinationRoot(root, { ownerStores: store === undefined });
      if (store) await initPostgresDestination(root, store);
      return withDestinationEngine(
        { root, ...(a.authorityDir !== undefined ? { authorityDir: a.authorityDir } : {}) },
        (engine) => engine.rootId(),
      );
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
  a: RecoverAccess & {
    workspace: string;
    goalId: string;
    destination: string;
    store?: { readonly databaseUrl: string; readonly schema?: string };
    /** The repository the verified backup came from: the plan pins it there until the recovery ends. */
    repository?: string;
  },
): Promise<AdoptionPlan> {
  let store: DestinationStore | undefined;
  if (a.store) {
    if (a.store.schema !== undefined) schemaIdent(a.store.schema);
    databaseUrlFrom(a.store.databaseUrl); // the reference must resolve now; the URL itself is never recorded
    store = {
      provider: 'postgresql',
      database_url: a.store.databaseUrl,
      schema: a.store.schema ?? `loopx_${randomBytes(6).toString('hex')}`,
    };
  }
  return withAuthority(a, async (authority) => {
    await assertActivation(authority);
    // The destination is new, or an existing empty private directory: what the plan adds is all it holds after.
    const existed = existsSync(resolve(a.destination));
    const plan = planAdoption({
      workspace: a.workspace,
      goalId: a.goalId,
      destination: a.destination,
      // The run authority this invocation uses, named or the default: a destination is never inside it.
      places: { liveRoot: a.liveRoot, authorityDir: a.authorityDir ?? defaultAuthorityDir() },
      ...(store ? { store } : {}),
    });
    sealPlan(authority, plan);
    if (a.repository !== undefined) {
      try {
        await pinForRecovery(
          a.repository,
          join(resolve(a.destination), RECOVERY_DIR),
          plan.audit.backup_id,
          plan.recovery_id,
        );
      } catch (e) {
        // Unpinned, the plan is not kept: what it wrote goes (the directory too when it made it), so the same command can run again.
        const dest = resolve(a.destination);
        if (!existed) rmSync(dest, { recursive: true, force: true });
        else for (const name of readdirSync(dest)) rmSync(join(dest, name), { recursive: true, force: true });
        throw e;
      }
    }
    return plan;
  });
}

/** A recovery that ended (complete or abandoned) releases the repository pin its plan wrote, if any. */
async function ended(destination: string, status: RecoveryStatus): Promise<RecoveryStatus> {
  if (status.state === 'complete' || status.state === 'abandoned')
    await releaseRecoveryPin(join(resolve(destination), RECOVERY_DIR));
  return status;
}

export const applyRecovery = (a: RecoverAccess, destination: string, confirm: string): Promise<RecoveryStatus> =>
  withAuthority(a, async (authority) => {
    await assertActivation(authority);
    return applyAdoption(resolve(destination), confirm, runOptions(a, authority));
  }).then((s) => ended(destination, s));

export const recoveryStatusOf = (a: RecoverAccess, destination: string): Promise<RecoveryStatus> =>
  withAuthority(a, (authority) => recoveryStatus(resolve(destination), hostOf(a, authority)));

export const resolveRecoveryHold = (
  a: RecoverAccess,
  destination: string,
  holdId: string,
  settlement: HoldSettlement = { kind: 'ask' },
): Promise<RecoveryStatus> =>
  withAuthority(a, async (authority) => {
    await assertActivation(authority);
    return resolveHold(resolve(destination), holdId, { ...runOptions(a, authority), settlement });
  }).then((s) => ended(destination, s));

/**
 * The user's recovery activation switch, asked by plan, apply and resolve before anything else:
 * off, they refuse `recover_activation_disabled` and change nothing (status, abort, verify and
 * audit never ask it).
 */
async function assertActivation(authority: RunAuthority): Promise<void> {
  const setting = await authority.activation();
  if (setting.disabled) throw recoverActivationDisabled(setting);
}

/** `loopx recover activation`: the switch as the run authority holds it. */
export const recoveryActivation = (a: Pick<RecoverAccess, 'authorityDir'>): Promise<ActivationSetting> =>
  withAuthority(a, (authority) => authority.activation());

/** `loopx recover disable-activation [--reason]` / `enable-activation`. */
export const setRecoveryActivation = (
  a: Pick<RecoverAccess, 'authorityDir'>,
  request: { readonly disabled: boolean; readonly reason?: string },
): Promise<ActivationSetting> => withAuthority(a, (authority) => authority.setActivation(request));

export const abortRecovery = (a: RecoverAccess, destination: string): Promise<RecoveryStatus> =>
  withAuthority(a, (authority) => abortAdoption(resolve(destination), hostOf(a, authority))).then((s) =>
    ended(destination, s),
  );

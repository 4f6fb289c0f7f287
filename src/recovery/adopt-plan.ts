/**
 * The digest-bound adoption plan (`loopx recover plan`): one Goal of a verified recovery
 * workspace, into a new, empty destination root. Planning re-verifies the recovery set — the
 * audit's content address, the embedded manifest's digest, and every workspace member's bytes
 * against it — rebuilds the Goal's required closure from the manifest, and lists the owners'
 * adoption steps in dependency order, each with its idempotency key (derived from the recovery id,
 * the component and the action). The plan binds the audit, the workspace, the destination's facts
 * (its device and inode, empty) and the owner revisions the audit verified; its digest is the
 * SHA-256 of its canonical JSON without the digest. Nothing live is touched: the plan is written
 * into the destination (`recovery/plan.json`, owner-only, never overwritten) and read back.
 *
 * The plan file is a record, never an authority (`recomputePlan`): every apply derives the audit
 * facts, the Goal, the components, the recovery id and the steps again from the workspace, exactly
 * as planning did (`derive`), and refuses a file that says otherwise (`recover_plan_tampered`) —
 * a digest recomputed over an edited file proves nothing. What cannot be derived (the nonce, the
 * time, the preview shown, a PostgreSQL destination's reference) is bound only by the digest the
 * operator confirms, which is the one `recover plan` printed, never one read back from the file.
 *
 * The plan is private (it names the workspace and destination paths); `publicPlan` is what
 * `--json` prints.
 */
import { randomBytes } from 'node:crypto';
import { closeSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import {
  canonicalJson,
  ensurePrivateDir,
  openLockFile,
  operatorPath,
  physical,
  sha256FileHex,
  sha256Hex,
  writeFileDurable,
} from '../core/index.js';
import { ARCHIVE_ROOT } from '../backup/index.js';
import {
  ADOPTION,
  MACHINE,
  OWNERS,
  OWNER_LIST,
  effect,
  goalScope,
  historicalPreviewOf,
  type AdoptionComponent,
  type CopiedRoot,
  type Disposition,
  type PreviewFacts,
} from '../owners/index.js';
import { showAudit, WORKSPACE_DIR, type RecoveryAudit } from './audit.js';
import { RECOVER_REFUSALS as R } from './adopt-codes.js';
import { refusePlacement, type ProtectedPlaces } from './destination.js';
import { servedExports } from './served-exports.js';
import { PLAN_FILE, RECOVERY_DIR } from './adopt-files.js';

export const PLAN_SCHEMA = 'loopx_recovery_plan_v0';
export { PLAN_FILE, RECOVERY_DIR } from './adopt-files.js';
/** The run authority's seal over the digest `recover plan` printed (written by the host beside the plan; see runtime/recover.ts). */
export const PLAN_SEAL_FILE = 'plan.seal.json';
/** The recovery's lock (adopt-lock.ts), made with the plan so that a refused apply adds nothing to the destination. */
export const LOCK_FILE = 'lock';

/** A step of the adoption, as planned. `host:*` steps are the coordinator's calls outside the owners (the new root, the run authority). */
export interface PlannedStep {
  readonly action: string;
  readonly owner: string;
  readonly disposition: Disposition | 'bind';
  readonly describes: string;
  readonly idempotency_key: string;
  readonly component_ids: readonly string[];
}

export interface PlanPreview {
  readonly recovered_readable: readonly string[];
  readonly historical_only: readonly string[];
  readonly lost_or_unknown: readonly string[];
  readonly expected_holds: readonly string[];
  readonly external_systems: readonly string[];
  readonly human_actions: readonly string[];
}

export interface AdoptionPlan {
  readonly schema_version: typeof PLAN_SCHEMA;
  readonly recovery_id: string;
  readonly created_at: string;
  readonly audit: {
    readonly recovery_id: string;
    readonly backup_id: string;
    readonly archive_sha256: string;
    readonly embedded_manifest_sha256: string;
    readonly requested_profile: string | null;
    readonly achieved_profile: string;
    readonly captured_at_end: string | null;
  };
  /** Private: the recovery workspace (the verify destination). */
  readonly workspace: { readonly path: string; readonly members_verified: number };
  readonly goal: {
    readonly goal_id: string;
    readonly goal_instance_id: string;
    readonly logical_scope: string;
    readonly title: string;
  };
  /** Private: the destination root and the facts apply re-checks. */
  readonly destination: { readonly path: string; readonly nonce: string; readonly dev: number; readonly ino: number };
  /** Where the new root keeps its Goal state when not in SQLite files: a PostgreSQL schema, by URL reference (never the URL). */
  readonly destination_store?: DestinationStore;
  readonly components: readonly (AdoptionComponent & {
    readonly required: boolean;
    readonly verification: string;
    readonly classification: string;
    readonly cursor: number | null;
  })[];
  readonly steps: readonly PlannedStep[];
  readonly preview: PlanPreview;
  readonly execution_authority_granted: false;
  readonly plan_digest: string;
}

/** A destination whose Goal state lives in a new PostgreSQL schema (the URL read from its reference at apply). */
export interface DestinationStore {
  readonly provider: 'postgresql';
  readonly database_url: string;
  readonly schema: string;
}

export const planDigest = (plan: Omit<AdoptionPlan, 'plan_digest'>): string => sha256Hex(canonicalJson(plan));

/** The idempotency key of one action of a recovery: fits every owner's id rules. */
export const stepKey = (recoveryId: string, componentIds: readonly string[], action: string): string =>
  `rcv-${sha256Hex(canonicalJson([recoveryId, [...componentIds].sort(), action])).slice(0, 40)}`;

interface ManifestView {
  readonly goals: readonly { goal_id: string; goal_instance_id: string }[];
  readonly goal_closures: readonly {
    goal_id: string;
    logical_scope: string;
    required_component_ids: readonly string[];
  }[];
  readonly components: readonly {
    component_id: string;
    owner_kind: string;
    export_member: string | null;
    provider?: string;
    capture_interval?: { end?: { at?: string } };
  }[];
  readonly members: readonly { path: string; type: string; sha256: string | null }[];
}

/** The audit (content address re-checked) and the embedded manifest, its digest and every member re-verified. */
export function reverifyWorkspace(workspace: string): {
  audit: RecoveryAudit;
  manifest: ManifestView;
  members: number;
} {
  const { audit } = showAudit(workspace);
  const dir = join(workspace, WORKSPACE_DIR);
  const manifestPath = join(dir, 'manifest.json');
  let bytes: Buffer;
  try {
    bytes = readFileSync(manifestPath);
  } catch {
    throw R.workspaceChanged('its manifest is missing');
  }
  if (sha256Hex(bytes) !== audit.backup.embedded_manifest_sha256)
    throw R.workspaceChanged('its manifest differs from the one the audit verified');
  const manifest = JSON.parse(bytes.toString('utf8')) as ManifestView;
  let files = 0;
  for (const m of manifest.members) {
    if (m.type !== 'file') continue;
    const path = join(dir, m.path);
    let st;
    try {
      st = lstatSync(path);
    } catch {
      throw R.workspaceChanged(`a member is missing (${m.path})`);
    }
    if (!st.isFile() || m.sha256 === null || sha256FileHex(path) !== m.sha256)
      throw R.workspaceChanged(`a member differs from its digest (${m.path})`);
    files++;
  }
  return { audit, manifest, members: files };
}

/** The destination: new (created 0700) or an existing empty private directory, outside every root, workspace and the authority. */
function prepareDestination(destination: string, places: ProtectedPlaces): { path: string; dev: number; ino: number } {
  const path = resolve(destination);
  refusePlacement(path, places);
  let st;
  try {
    st = lstatSync(path);
  } catch {
    mkdirSync(path, { mode: 0o700 });
    st = lstatSync(path);
  }
  if (!st.isDirectory()) throw R.destinationNotEmpty();
  if (physical(path) !== path || (st.mode & 0o077) !== 0) throw R.destinationNotPrivate();
  if (readdirSync(path).length > 0) throw R.destinationNotEmpty();
  return { path, dev: st.dev, ino: st.ino };
}

/** The closure's components as the audit verified them, with the manifest's export members. */
function closureComponents(
  audit: RecoveryAudit,
  manifest: ManifestView,
  ids: readonly string[],
): AdoptionPlan['components'] {
  return ids.map((id) => {
    const a = audit.components.find((c) => c.component_id === id);
    const m = manifest.components.find((c) => c.component_id === id);
    // A verified component holds its digest, or is a confirmed absence (the owner never created its store).
    const absent = (a?.readback as { state?: unknown } | undefined)?.state === 'absent';
    if (!a || !m || a.verification !== 'verified' || (a.content_digest === null && !absent))
      throw R.auditNotEligible(`component ${id} of the Goal's closure is not verified`);
    return {
      component_id: id,
      owner: a.owner_kind,
      content_digest: a.content_digest ?? 'absent',
      source_identity: a.source_identity,
      source_revision: a.source_revision,
      export_member: m.export_member ?? null,
      required: a.required,
      verification: a.verification,
      classification: a.classification,
      cursor: a.cursor,
    };
  });
}

/** Every owner's adoption steps in the OWNERS table's order, with the coordinator's own around them. */
function plannedSteps(recoveryId: string, components: AdoptionPlan['components']): PlannedStep[] {
  const steps: PlannedStep[] = [];
  const add = (
    action: string,
    owner: string,
    disposition: PlannedStep['disposition'],
    describes: string,
    ids: readonly string[],
  ) =>
    steps.push({
      action,
      owner,
      disposition,
      describes,
      idempotency_key: stepKey(recoveryId, ids, action),
      component_ids: ids,
    });
  add(
    'host:destination',
    'runtime',
    'bind',
    'the destination becomes a new runtime root with its own identity in the run authority',
    [],
  );
  for (const owner of OWNER_LIST) {
    const ids = components.filter((c) => c.owner === owner.name).map((c) => c.component_id);
    for (const step of ADOPTION[owner.name as keyof typeof ADOPTION]) {
      add(step.action, owner.name, step.disposition, step.describes, ids);
      if (step.mintsLifetime)
        add(
          'host:supersede',
          'run-authority',
          'bind',
          'the recovered lifetime recorded as superseded in the run authority, outside every root',
          ids,
        );
    }
  }
  return steps;
}

/** A historical-only component in the operator's words (its owner's row of HISTORICAL_PREVIEW), with what it counts where the preview read it. */
const historicalWords = (owner: string, facts: PreviewFacts): string =>
  historicalPreviewOf(owner).words?.(facts) ?? `the ${owner} owner’s state as captured`;

/** What the operator is shown before confirming, read from the workspace through the owners' readers. */
function preview(
  audit: RecoveryAudit,
  ws: CopiedRoot,
  goal: AdoptionPlan['goal'],
  components: AdoptionPlan['components'],
  endAt: string | null,
): PlanPreview {
  const w = OWNERS.work.readHistorical(ws, goalScope(goal.goal_id)).value;
  const byStatus: Record<string, number> = {};
  for (const t of w.todos) byStatus[t.status] = (byStatus[t.status] ?? 0) + 1;
  const todos = Object.entries(byStatus)
    .map(([s, n]) => `${n} ${s}`)
    .join(', ');
  const scratch = mkdtempSync(join(tmpdir(), 'loopx-recover-plan-'));
  let effects: readonly effect.EffectRecord[];
  let sessions: number;
  try {
    effects = OWNERS.effect
      .readHistorical({ ...ws, scratchDir: scratch }, MACHINE)
      .value.effects.filter((e) => e.goal_id === goal.goal_id);
    sessions = OWNERS.session
      .readHistorical({ ...ws, scratchDir: scratch }, MACHINE)
      .value.sessions.filter((x) => x.goal_id === goal.goal_id).length;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
  const facts: PreviewFacts = { effects, sessions };
  const uncertain = effects.filter((e) => effect.isUncertain(e) || e.outcome === 'pending');
  // The audit's holds that adoption settles (each owner's step), and the effects that may stay held.
  const steps = (owner: string) => ADOPTION[owner as keyof typeof ADOPTION]?.map((x) => x.action).join(', ');
  const holds = [
    ...audit.findings
      .filter((f) => f.severity === 'hold')
      .map((f) => `${f.owner}: ${f.code} — settled by this recovery (${steps(f.owner) || 'no step'})`),
    ...uncertain.map((e) => `effect ${e.operation_id}: held if ${e.target} cannot say what became of it`),
  ];
  return {
    recovered_readable: [
      `Goal ${goal.goal_id} "${goal.title}" as a new lifetime (same alias, new instance id)`,
      `Todos: ${todos || 'none'}`,
      `${w.history_count} committed transactions, with their original receipts`,
    ],
    historical_only: [
      ...OWNER_LIST.flatMap((o) => historicalPreviewOf(o.name).lead?.(facts) ?? []),
      ...components
        .filter((c) => c.classification === 'historical_only' && historicalPreviewOf(c.owner).lead === undefined)
        .map((c) => historicalWords(c.owner, facts)),
    ],
    lost_or_unknown: [
      `anything after the captured checkpoints (capture ended ${endAt ?? 'at an unknown time'}, work cursor ${w.head_cursor ?? 'unknown'})`,
      ...uncertain.map(
        (e) =>
          `effect ${e.operation_id} (${e.target}): ${e.outcome === 'pending' && e.dispatched_at === null ? 'never dispatched' : 'outcome unknown'}, asked of its external system under its original id`,
      ),
    ],
    expected_holds: holds,
    external_systems: [
      ...new Set(effects.filter((e) => e.kind !== effect.TODO_UPDATE_KIND).map((e) => e.target)),
    ].sort(),
    human_actions: [
      'confirm the plan digest (recover apply)',
      'resolve each hold the apply reports, if any (recover resolve)',
    ],
  };
}

/** The recovery id: the audit, the Goal and the plan's nonce. */
const recoveryIdOf = (auditRecoveryId: string, goalId: string, nonce: string): string =>
  sha256Hex(canonicalJson({ audit: auditRecoveryId, goal_id: goalId, nonce }));

/** What a plan binds that loopx derives from the workspace alone: the same computation for `recover plan` and every apply. */
interface Derived {
  readonly audit: RecoveryAudit;
  readonly auditFacts: AdoptionPlan['audit'];
  readonly members: number;
  readonly goal: AdoptionPlan['goal'];
  readonly components: AdoptionPlan['components'];
  readonly wsRoot: string;
  readonly exports: ReturnType<typeof servedExports>;
}

/** The workspace re-verified, and the Goal's closure as its audit verified it. */
function derive(workspace: string, goalId: string): Derived {
  const { audit, manifest, members } = reverifyWorkspace(workspace);
  if (audit.backup.schema_version !== 'loopx_state_backup_v1' || !audit.activation_eligible)
    throw R.auditNotEligible('its audit is not activation-eligible');
  const closure = manifest.goal_closures.find((c) => c.goal_id === goalId);
  const source = manifest.goals.find((g) => g.goal_id === goalId);
  if (!closure || !source) throw R.goalNotInAudit(goalId, operatorPath(workspace));
  if (!(audit.activation?.eligible_scopes ?? []).includes(closure.logical_scope))
    throw R.auditNotEligible(`Goal ${goalId} is not among its eligible scopes`);
  const components = closureComponents(audit, manifest, closure.required_component_ids);
  const wsRoot = join(workspace, WORKSPACE_DIR, ARCHIVE_ROOT);
  const title =
    OWNERS.goal.readHistorical({ root: wsRoot }, MACHINE).value.goals.find((g) => g.goal_id === goalId)?.title ??
    goalId;
  const endAt =
    manifest.components
      .map((c) => c.capture_interval?.end?.at)
      .filter((x): x is string => typeof x === 'string')
      .sort()
      .at(-1) ?? null;
  return {
    audit,
    auditFacts: {
      recovery_id: audit.recovery_id,
      backup_id: audit.backup.backup_id,
      archive_sha256: audit.backup.archive_sha256,
      embedded_manifest_sha256: audit.backup.embedded_manifest_sha256,
      requested_profile: audit.capture.requested_profile,
      achieved_profile: audit.capture.achieved_profile,
      captured_at_end: endAt,
    },
    members,
    goal: { goal_id: goalId, goal_instance_id: source.goal_instance_id, logical_scope: closure.logical_scope, title },
    components,
    wsRoot,
    // A component captured from a database service is read from its export (the closure may hold some, or all).
    exports: servedExports(join(workspace, WORKSPACE_DIR)),
  };
}

/** Plan one Goal's adoption into `destination` (see the header). */
export function planAdoption(args: {
  workspace: string;
  goalId: string;
  destination: string;
  places?: ProtectedPlaces;
  now?: Date;
  store?: DestinationStore;
}): AdoptionPlan {
  const workspace = resolve(args.workspace);
  const d = derive(workspace, args.goalId);
  const exports = d.exports;
  const shown = preview(
    d.audit,
    { root: d.wsRoot, ...(exports === undefined ? {} : { exports }) },
    d.goal,
    d.components,
    d.auditFacts.captured_at_end,
  );
  const dest = prepareDestination(args.destination, args.places ?? {});
  const nonce = randomBytes(16).toString('hex');
  const recoveryId = recoveryIdOf(d.audit.recovery_id, args.goalId, nonce);
  const body: Omit<AdoptionPlan, 'plan_digest'> = {
    schema_version: PLAN_SCHEMA,
    recovery_id: recoveryId,
    created_at: (args.now ?? new Date()).toISOString(),
    audit: d.auditFacts,
    workspace: { path: workspace, members_verified: d.members },
    goal: d.goal,
    destination: { path: dest.path, nonce, dev: dest.dev, ino: dest.ino },
    ...(args.store ? { destination_store: args.store } : {}),
    components: d.components,
    steps: plannedSteps(recoveryId, d.components),
    preview: shown,
    execution_authority_granted: false,
  };
  const plan: AdoptionPlan = { ...body, plan_digest: planDigest(body) };
  ensurePrivateDir(join(dest.path, RECOVERY_DIR));
  writeFileDurable(join(dest.path, RECOVERY_DIR, PLAN_FILE), `${JSON.stringify(plan, null, 2)}\n`, { exclusive: true });
  closeSync(openLockFile(join(dest.path, RECOVERY_DIR, LOCK_FILE)));
  // What the operator is shown (and confirms) is what loopx computed; the file is read back to prove it holds exactly that.
  if (readPlan(dest.path).plan_digest !== plan.plan_digest)
    throw R.planTampered('the plan file read back is not the plan just computed');
  return plan;
}

/**
 * The plan loopx computes for a plan file: the facts it derives from the audit, the workspace and
 * the destination — the audit's facts, the Goal, the components, the recovery id, the steps — put
 * beside what only the file records (its nonce, time, preview and destination store), with its
 * digest. A file that differs in any derived fact is refused `recover_plan_tampered`, a workspace
 * that holds another verification `recover_plan_stale`. The returned plan's digest is the only one
 * an apply accepts as confirmed.
 */
export function recomputePlan(file: AdoptionPlan): AdoptionPlan {
  const d = derive(file.workspace.path, file.goal.goal_id);
  if (
    d.auditFacts.recovery_id !== file.audit.recovery_id ||
    d.auditFacts.embedded_manifest_sha256 !== file.audit.embedded_manifest_sha256
  )
    throw R.planStale('the workspace holds another verification');
  const recoveryId = recoveryIdOf(d.audit.recovery_id, file.goal.goal_id, file.destination.nonce);
  const here = lstatSync(file.destination.path);
  const body: Omit<AdoptionPlan, 'plan_digest'> = {
    schema_version: PLAN_SCHEMA,
    recovery_id: recoveryId,
    created_at: file.created_at,
    audit: d.auditFacts,
    workspace: { path: file.workspace.path, members_verified: d.members },
    goal: d.goal,
    // The device number is the file's (it may change at boot); the path and inode are this directory's (readPlan refused any other).
    destination: {
      path: physical(file.destination.path),
      nonce: file.destination.nonce,
      dev: file.destination.dev,
      ino: here.ino,
    },
    ...(file.destination_store !== undefined ? { destination_store: file.destination_store } : {}),
    components: d.components,
    steps: plannedSteps(recoveryId, d.components),
    preview: file.preview,
    execution_authority_granted: false,
  };
  const same = (a: unknown, b: unknown) => canonicalJson(a) === canonicalJson(b);
  const differs: [boolean, string][] = [
    [!same(body.audit, file.audit), "its audit facts are not the audit's"],
    [
      body.workspace.members_verified !== file.workspace.members_verified,
      "its count of verified workspace members is not the workspace's",
    ],
    [!same(body.goal, file.goal), "its Goal is not the workspace's"],
    [body.recovery_id !== file.recovery_id, 'its recovery id is not derived from its audit, Goal and nonce'],
    [
      !same(body.components, file.components),
      "its components are not the ones the audit verified for the Goal's closure",
    ],
    [
      !same(body.steps, file.steps),
      'its steps are not the ones loopx computes for this recovery (a step missing, added, reordered or changed)',
    ],
    [
      body.destination.path !== file.destination.path || body.destination.ino !== file.destination.ino,
      'its destination is not this directory',
    ],
    [(file.execution_authority_granted as unknown) !== false, 'it grants what no plan grants'],
    [
      !same(Object.keys(file).sort(), [...Object.keys(body), 'plan_digest'].sort()),
      'it holds fields a plan does not have',
    ],
  ];
  const why = differs.find(([bad]) => bad)?.[1];
  if (why !== undefined) throw R.planTampered(why);
  return { ...body, plan_digest: planDigest(body) };
}

/** The plan in a destination, its digest re-checked. */
export function readPlan(destination: string): AdoptionPlan {
  const given = resolve(destination);
  const path = join(given, RECOVERY_DIR, PLAN_FILE);
  let plan: AdoptionPlan;
  try {
    plan = JSON.parse(readFileSync(path, 'utf8')) as AdoptionPlan;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') throw R.planMissing(operatorPath(resolve(destination)));
    throw R.planInvalid('it is not JSON');
  }
  if (plan?.schema_version !== PLAN_SCHEMA) throw R.planInvalid('its schema is unknown');
  const { plan_digest, ...body } = plan;
  if (planDigest(body) !== plan_digest) throw R.planInvalid('its digest does not match its content');
  // Every step acts on the directory the plan bound: read from another one (a byte copy of the
  // destination, or a destination moved away), the plan is nobody's, and nothing may act on it.
  // The inode tells a copy put at the same path; the device number is not compared (it may change at boot).
  const here = physical(given);
  if (here !== plan.destination.path || lstatSync(here).ino !== plan.destination.ino) throw R.planElsewhere();
  return plan;
}

/** The plan without private paths: what `--json` and the public status show. */
export function publicPlan(
  plan: AdoptionPlan,
): Omit<AdoptionPlan, 'workspace' | 'destination'> & { workspace: { members_verified: number } } {
  const { workspace, destination: _destination, ...rest } = plan;
  return { ...rest, workspace: { members_verified: workspace.members_verified } };
}

/**
 * Recoveries started from the daemon: one Goal of an audited workspace recovered into a new root
 * beside the daemon's own, through the same library calls as `loopx recover` (plan, apply,
 * status, resolve, abort). The browser never names a path: the operator names the new root's
 * directory (one plain name; the daemon proposes one), which is made beside the daemon's root —
 * never inside it. Each recovery is remembered in `<root>/daemon/adoptions/<recovery_id>.json`
 * (0600: its audit, Goal and destination name), so the list and every state survive a reload or a
 * daemon restart; the state itself is always read back from the recovery's plan, journal and
 * owners, never kept here. An apply runs in the daemon in the background, one at a time per
 * recovery; one interrupted by a restart is retried by applying again (it converges).
 *
 * The daemon confirms what it served: the index keeps the digest and the preview of the plan it
 * computed and answered with, every view shows those (never the plan file's), and an apply is
 * refused unless its confirmation is that digest — and then the apply itself derives the plan again
 * and refuses a file that is not it (`recover_plan_tampered`).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import {
  conflict,
  ensurePrivateDir,
  isLoopxError,
  LoopxError,
  notFound,
  samePhysicalPath,
  usageError,
  writeFileDurable,
} from '../core/index.js';
import {
  applyRecovery,
  abortRecovery,
  goalSupersession,
  listGoals,
  planRecovery,
  publicPlan,
  recoveryStatusOf,
  resolveRecoveryHold,
  type AdoptionPlan,
  type HoldSettlement,
  type RecoveryStatus,
} from '../runtime/index.js';
import type { BackupService } from './backups.js';
import { publicRefusal } from './repository-input.js';

const RECOVERY_ID = /^[0-9a-f]{64}$/;
/** The states in which a recovery's new root has been changed, so the daemon serves its Goals and runs. */
const SERVED: ReadonlySet<string> = new Set(['applying', 'reconciliation_held', 'complete']);
const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

interface AdoptionEntry {
  readonly recovery_id: string;
  readonly audit_id: string;
  readonly goal_id: string;
  readonly destination_name: string;
  readonly created_at: string;
  /** The digest and preview of the plan this daemon computed and served (absent in an index written before it kept them). */
  readonly plan_digest?: string;
  readonly preview?: AdoptionPlan['preview'];
}

export interface AdoptionView {
  readonly recovery_id: string;
  readonly audit_id: string;
  readonly goal_id: string;
  /** The new root's directory, beside the daemon's root. */
  readonly destination_name: string;
  readonly created_at: string;
  /** An apply is running in this daemon now. */
  readonly applying_now: boolean;
  readonly last_apply_error: ApplyError | null;
  readonly status: RecoveryStatus;
}

export interface ApplyError {
  readonly code: string;
  readonly message: string;
  readonly next_action: string | null;
}

const errorOf = (err: unknown): ApplyError =>
  isLoopxError(err)
    ? { code: err.code, message: err.message, next_action: err.nextAction ?? null }
    : {
        code: 'recover_apply_failed',
        message: 'The apply stopped on an unexpected error.',
        next_action: 'apply again: it continues where it stopped',
      };

const notFoundRecovery = () =>
  notFound('daemon_recovery_not_found', 'No such recovery.', {
    nextAction: 'list the recoveries: GET /api/recoveries',
  });
const badName = () =>
  usageError(
    'daemon_destination_name_invalid',
    'The new root is named by one plain directory name: 1 to 64 letters, digits, dots, underscores and hyphens, starting with a letter or digit.',
    'choose a name like launch-recovered',
  );

/**
 * Over HTTP a recovery is named by its route, never by its destination's path: a refusal's or a
 * state's command-line next action (which names the destination) becomes the route's.
 */
function pathFree(e: unknown, id: string | undefined): unknown {
  if (!isLoopxError(e) || e.nextAction === undefined || !e.nextAction.includes('--destination')) return e;
  const nextAction =
    id === undefined
      ? 'plan the recovery again: POST /api/audits/<audit_id>/recoveries'
      : `read the recovery's state: GET /api/recoveries/${id}`;
  return new LoopxError(e.kind, e.code, e.message, { nextAction, ...(e.details ? { details: e.details } : {}) });
}

/** The served digest refused by the apply: the plan file changed after this daemon served its preview, and nothing but a new plan goes on. */
const changedSinceServed = (e: LoopxError): LoopxError =>
  new LoopxError(e.kind, e.code, `${e.message} The plan in its root is not the one this daemon served.`, {
    nextAction: 'keep its root as evidence and plan the recovery again: POST /api/audits/<audit_id>/recoveries',
  });

function httpStatus(status: RecoveryStatus, id: string): RecoveryStatus {
  const route = `/api/recoveries/${id}`;
  const next: Record<string, string> = {
    adoption_prepared: `confirm the plan by its digest: POST ${route}/apply`,
    applying: `apply again (it continues where it stopped): POST ${route}/apply`,
    // Held with no hold: a writer fence is missing; the same apply establishes it, or the status names where the Goal continues.
    reconciliation_held:
      status.holds.length > 0
        ? `resolve each hold: POST ${route}/holds/<hold_id>/resolve`
        : status.next_action.includes('--destination')
          ? `apply again with the digest this daemon served: POST ${route}/apply`
          : status.next_action,
    complete: 'continue the Goal in the new root',
    abandoned: 'plan the recovery again: POST /api/audits/<audit_id>/recoveries',
  };
  return {
    ...status,
    next_action: next[status.state] ?? `read the recovery's state: GET ${route}`,
    holds: status.holds.map((h) => ({
      ...h,
      next_action: `POST ${route}/holds/${encodeURIComponent(h.hold_id)}/resolve`,
    })),
  };
}
const applyRunning = () =>
  conflict('daemon_recovery_applying', 'This recovery is being applied now.', {
    nextAction: 'wait for the apply to end: GET /api/recoveries/<recovery_id>',
  });

export class AdoptionService {
  private readonly dir: string;
  private readonly running = new Map<string, Promise<void>>();
  /** Roots beside this one where the run authority records a Goal of this root continues (name → directory): a supersession never changes, so what is found stays. */
  private readonly continuations = new Map<string, string>();
  /** The last apply's failure per recovery, in this daemon's lifetime (the state itself is read back). */
  private readonly failures = new Map<string, ApplyError>();

  constructor(
    private readonly root: string,
    private readonly authorityDir: string | undefined,
    private readonly backups: BackupService,
  ) {
    this.dir = join(root, 'daemon', 'adoptions');
    ensurePrivateDir(join(root, 'daemon'));
    ensurePrivateDir(this.dir);
  }

  private access() {
    return { liveRoot: this.root, ...(this.authorityDir !== undefined ? { authorityDir: this.authorityDir } : {}) };
  }

  private destinationOf(name: string): string {
    return join(dirname(this.root), name);
  }

  /** A free directory name beside the root for a Goal's recovery: `<root name>-<goal>-recovered[-n]`. */
  proposeName(goalId: string): string {
    // A name the daemon itself accepts: the root's directory name as a valid start (a hidden `.loopx-sample` loses its dot).
    const base = `${basename(this.root)}-${goalId}-recovered`
      .replace(/[^A-Za-z0-9._-]/g, '-')
      .replace(/^[^A-Za-z0-9]+/, '')
      .slice(0, 56);
    for (let n = 1; ; n++) {
      const name = n === 1 ? base : `${base}-${n}`;
      if (!existsSync(this.destinationOf(name))) return name;
    }
  }

  /**
   * Plan the recovery of `goalId` from audit `auditId` into a new root named `name` (proposed when
   * absent); an audit of a repository's backup pins that backup in the repository.
   */
  async plan(auditId: string, goalId: string, name: string | undefined) {
    const destinationName = name ?? this.proposeName(goalId);
    if (!NAME.test(destinationName)) throw badName();
    // A backup verified from a repository is pinned there by the plan, until the recovery ends.
    const repository = this.backups.repositoryOf(auditId)?.repository;
    let plan;
    try {
      plan = await planRecovery({
        ...this.access(),
        workspace: this.backups.destination(auditId),
        goalId,
        destination: this.destinationOf(destinationName),
        ...(repository !== undefined ? { repository } : {}),
      });
    } catch (err) {
      throw pathFree(repository !== undefined ? publicRefusal(err, repository) : err, undefined);
    }
    const entry: AdoptionEntry = {
      recovery_id: plan.recovery_id,
      audit_id: auditId,
      goal_id: goalId,
      destination_name: destinationName,
      created_at: plan.created_at,
      plan_digest: plan.plan_digest,
      preview: plan.preview,
    };
    writeFileDurable(join(this.dir, `${plan.recovery_id}.json`), `${JSON.stringify(entry)}\n`, { exclusive: true });
    return { ...publicPlan(plan), destination_name: destinationName };
  }

  private entry(id: string): AdoptionEntry {
    if (!RECOVERY_ID.test(id)) throw notFoundRecovery();
    try {
      return JSON.parse(readFileSync(join(this.dir, `${id}.json`), 'utf8')) as AdoptionEntry;
    } catch {
      throw notFoundRecovery();
    }
  }

  private async view(e: AdoptionEntry): Promise<AdoptionView> {
    const read = httpStatus(
      await recoveryStatusOf(this.access(), this.destinationOf(e.destination_name)),
      e.recovery_id,
    );
    // What the operator reads and confirms is what this daemon served, never the plan file's word.
    const status = { ...read, plan_digest: e.plan_digest ?? read.plan_digest, preview: e.preview ?? read.preview };
    const { plan_digest: _digest, preview: _preview, ...listed } = e;
    return {
      ...listed,
      applying_now: this.running.has(e.recovery_id),
      last_apply_error: this.failures.get(e.recovery_id) ?? null,
      status,
    };
  }

  show(id: string): Promise<AdoptionView> {
    return this.view(this.entry(id));
  }

  /** Every recovery this daemon started, as its index remembers it (no state read), newest first. */
  private entries(): AdoptionEntry[] {
    return readdirSync(this.dir)
      .filter((f) => f.endsWith('.json') && RECOVERY_ID.test(f.slice(0, -5)))
      .map((f) => this.entry(f.slice(0, -5)))
      .sort((a, b) => (a.created_at < b.created_at ? 1 : -1));
  }

  /** A recovery's state read back from its destination ('unreadable' when it cannot be). */
  private stateOf(e: AdoptionEntry): Promise<string> {
    return recoveryStatusOf(this.access(), this.destinationOf(e.destination_name)).then(
      (st) => st.state,
      () => 'unreadable',
    );
  }

  /** Whether a recovery planned from audit `auditId` is live (anything but abandoned, or unreadable). */
  async usesAudit(auditId: string): Promise<boolean> {
    for (const e of this.entries()) {
      if (e.audit_id !== auditId) continue;
      if ((await this.stateOf(e)) !== 'abandoned') return true;
    }
    return false;
  }

  /** Every recovery this daemon started, newest first. */
  async list(): Promise<AdoptionView[]> {
    const out: AdoptionView[] = [];
    for (const e of this.entries()) {
      try {
        out.push(await this.view(e));
      } catch {
        // its destination was removed: no longer a recovery to show
      }
    }
    return out;
  }

  /**
   * Apply the confirmed plan. A refusal before the first step (a digest that is not the plan's, a
   * stale or abandoned plan, a lifetime recovered elsewhere) is the response; once the first step
   * starts, the apply goes on in the background and the response is the state at that moment — read
   * it again with `show`. A failure after that is in the state (and in `last_apply_error` until
   * the next apply of this recovery in this daemon).
   */
  async apply(id: string, confirm: string): Promise<AdoptionView> {
    const e = this.entry(id);
    if (this.running.has(id)) throw applyRunning();
    // Only the digest of the preview this daemon served confirms: any other reaches the apply as a
    // confirmation no plan has, which the apply refuses (`recover_confirm_mismatch`) after deriving
    // the plan again. An index from before the daemon kept the digest leaves it to that derivation.
    const served = e.plan_digest === undefined || confirm === e.plan_digest;
    const confirmation = served ? confirm : `not-served:${confirm}`;
    const destination = this.destinationOf(e.destination_name);
    let started!: () => void;
    const firstStep = new Promise<void>((r) => (started = r));
    this.failures.delete(id);
    const run = applyRecovery({ ...this.access(), onStep: () => started() }, destination, confirmation);
    let outcome: 'started' | 'finished';
    try {
      outcome = await Promise.race([firstStep.then(() => 'started' as const), run.then(() => 'finished' as const)]);
    } catch (err) {
      // The served digest refused: the plan the apply derives from the root's plan file is not the one served.
      if (
        isLoopxError(err) &&
        err.code === 'recover_confirm_mismatch' &&
        e.plan_digest !== undefined &&
        confirm === e.plan_digest
      )
        throw changedSinceServed(err);
      throw pathFree(err, id);
    }
    if (outcome === 'started') {
      const done = run
        .then(() => undefined)
        .catch((err: unknown) => {
          this.failures.set(id, errorOf(pathFree(err, id)));
        })
        .finally(() => this.running.delete(id));
      this.running.set(id, done);
    }
    return this.view(e);
  }

  /** Wait for a running apply (tests, shutdown). */
  async settled(id: string): Promise<void> {
    await this.running.get(id);
  }

  async resolve(id: string, holdId: string, settlement: HoldSettlement): Promise<AdoptionView> {
    const e = this.entry(id);
    if (this.running.has(id)) throw applyRunning();
    await resolveRecoveryHold(this.access(), this.destinationOf(e.destination_name), holdId, settlement).catch(
      (err: unknown) => {
        throw pathFree(err, id);
      },
    );
    return this.view(e);
  }

  async abort(id: string): Promise<AdoptionView> {
    const e = this.entry(id);
    if (this.running.has(id)) throw applyRunning();
    await abortRecovery(this.access(), this.destinationOf(e.destination_name)).catch((err: unknown) => {
      throw pathFree(err, id);
    });
    return this.view(e);
  }

  async close(): Promise<void> {
    await Promise.all([...this.running.values()]);
  }

  /**
   * The new root a recovery of this daemon made, by its directory name, once its adoption has
   * changed it: the daemon serves that root's Goals and runs too (`?root=<name>`), so the operator
   * sees the recovered Goal continue in the same place. Any other name is unknown here.
   */
  async recoveredRoot(name: string): Promise<string> {
    if (!NAME.test(name)) throw badName();
    // Found by its name in the index; only that recovery's state is read (this runs on every request that names a root).
    for (const e of this.entries())
      if (e.destination_name === name && SERVED.has(await this.stateOf(e))) return this.destinationOf(name);
    const continued = await this.continuation(name);
    if (continued !== undefined) return continued;
    throw notFound('daemon_root_unknown', `No recovery of this daemon made a root named ${name}.`, {
      nextAction: 'list the roots it made: GET /api/roots',
    });
  }

  /**
   * A root beside this one that a recovery made elsewhere (another daemon, the command line) and
   * where, as the run authority records it, a Goal of this root continues: this root's superseded
   * Goal links there, so the daemon serves it too. Only the authority's record names it, and only
   * a direct sibling of this root is served.
   */
  private async continuation(name: string): Promise<string | undefined> {
    if (!this.continuations.has(name)) {
      const access = this.authorityDir !== undefined ? { authorityDir: this.authorityDir } : {};
      for (const g of await listGoals(this.root)) {
        const s = await goalSupersession(access, g.goal_instance_id).catch(() => null);
        if (
          s?.directory !== undefined &&
          basename(s.directory) === name &&
          samePhysicalPath(dirname(s.directory), dirname(this.root))
        )
          this.continuations.set(name, s.directory);
      }
    }
    return this.continuations.get(name);
  }

  /** The roots this daemon's recoveries made and changed (applying, held or complete), newest first. */
  async recoveredRoots(): Promise<{ name: string; recovery_id: string; goal_id: string; state: string }[]> {
    const out: { name: string; recovery_id: string; goal_id: string; state: string }[] = [];
    for (const e of this.entries()) {
      const state = await this.stateOf(e);
      if (SERVED.has(state))
        out.push({ name: e.destination_name, recovery_id: e.recovery_id, goal_id: e.goal_id, state });
    }
    return out;
  }
}

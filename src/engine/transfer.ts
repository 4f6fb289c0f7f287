/**
 * The RFC 0007 transfer protocol: exporting a suspended (or finished) run as a payload and as an
 * envelope signed by the run authority, verifying a signed snapshot's claim, and importing one
 * into this root, so a run moves between roots of the same user and is resumed at
 * `last_sequence+1`. It holds no keys: the authority signs and verifies.
 *
 * Rules it keeps:
 * - Export reads the head and the messages under the run's lock, from one state of the run, and
 *   only at a completed turn boundary with no unresolved mutating call. Signing SUSPENDED binds
 *   the exact payload digest and claim in the record; an identical repeat export returns the same
 *   bytes, a differing claim at the same transition generation is `claim_conflict`.
 * - A snapshot's claim is verified — against the authority's key *and* the claim the record binds
 *   — before this root is opened or changed; a claim that does not verify gets one secret-safe
 *   `snapshot_claim_invalid`, whatever the reason.
 * - Import order (importSnapshot): nothing is leased or written before the static checks, and
 *   nothing is consumed before the recorded tool plan is leased and PlanIdentity recomputed.
 * - A snapshot is consumed once. A failure before the consume point changes nothing; from the
 *   moment the consume write is invoked the outcome is uncertain (`import_uncertain`) and is never
 *   retried automatically. The same import run again into the root the IMPORTING record names
 *   completes it, idempotently; every other root gets `snapshot_consumed`.
 * - Terminal snapshots are for inspection only, and a tombstoned run is never imported as live.
 * - Named fault points for the crash tests: `authority.export`, `authority.import.consume`,
 *   FAULT_IMPORT_AFTER_KERNEL_COMMIT, `authority.import.activate`.
 */
import { timingSafeEqual } from 'node:crypto';
import { conflict, faultPoint, hasCode, internal, rejected, toHex } from '../core/index.js';
import {
  decodeEnvelope,
  encodeEnvelope,
  encodeSnapshot,
  ENVELOPE_ERRORS,
  signEnvelope,
  snapshotDigest,
  verifyEnvelope,
  type RunSnapshotState,
  type SnapshotEnvelope,
} from '../snapshot/index.js';
import type { RunLease, RunRecord } from '../run-authority/index.js';
import { defineAgent, definitionBody, type AgentDefinition } from './agent.js';
import type { Application } from './application.js';
import type { RunOwnership } from './ownership.js';
import { SCRIPTED_PROVIDER } from './providers/scripted.js';
import { estimatedUsage } from './usage.js';
import type { RunReads, RunView } from './reads.js';
import type { RunHead, RunStore } from './run-store/contract.js';

/** Fault point (tests only): after an import committed the kernel run, before it is ACTIVE. */
export const FAULT_IMPORT_AFTER_KERNEL_COMMIT = 'engine.import.after-kernel-commit';

export interface ExportedSnapshot {
  readonly bytes: Uint8Array;
  readonly sha256: string;
  readonly state: RunSnapshotState;
}

export interface SignedExport {
  readonly bytes: Uint8Array;
  readonly envelope: SnapshotEnvelope;
  readonly payloadSha256: string;
  readonly state: RunSnapshotState;
}

export interface SnapshotVerification {
  readonly valid: boolean;
  readonly record_state: string | null;
  readonly payload_sha256: string;
}

const consumed = (runId: string) =>
  conflict('snapshot_consumed', `The snapshot of run ${runId} was already imported; a snapshot is consumed once.`, {
    nextAction: `find the run where it was imported: loopx authority show --run ${runId}`,
  });

/** Running the same import again into the root an IMPORTING record names completes it (never consumes twice). */
const IMPORT_INCOMPLETE_ACTION =
  'complete it by importing the same snapshot file into this root again: loopx run import <snapshot-file>';

export const importIncomplete = (runId: string) =>
  conflict('run_import_incomplete', `Run ${runId} was imported into this root but the import did not complete.`, {
    nextAction: IMPORT_INCOMPLETE_ACTION,
  });

/** The kernel head of an imported run: suspended at the snapshot's last sequence, with no events before it here. */
const importedHead = (state: RunSnapshotState, usageBefore = estimatedUsage(state.messages)): RunHead => ({
  runId: state.runId,
  definition: state.definition,
  model: state.model,
  turnLimit: state.turnLimit,
  completedTurns: state.completedTurns,
  lifecycle: 'suspended',
  planIdentity: state.planIdentity,
  usedInteractionIds: state.usedInteractionIds,
  lastSequence: state.lastSequence,
  messageCount: state.messages.length,
  turnInProgress: false,
  suspendAtTurn: null,
  pendingInteraction: null,
  failure: null,
  importedAtSequence: state.lastSequence,
  ...(usageBefore ? { usage: usageBefore } : {}),
  createdAt: '',
  updatedAt: '',
});

/** The definition an import commits, with its stored form (`definitionBody`) when import already computed it to compare. */
interface ImportDefinition {
  readonly def: AgentDefinition;
  readonly body?: string;
}

const hexEqual = (a: string, b: string): boolean =>
  a.length === b.length && timingSafeEqual(Buffer.from(a), Buffer.from(b));

export interface TransferParts {
  readonly application: Application;
  readonly store: () => RunStore;
  /** Whether the root has stored anything yet (engine.db exists): reading must not create it. */
  readonly hasRootState: () => boolean;
  readonly reads: RunReads;
  readonly ownership: RunOwnership;
}

export class RunTransfer {
  readonly #application: Application;
  readonly #store: () => RunStore;
  readonly #hasRootState: () => boolean;
  readonly #reads: RunReads;
  readonly #own: RunOwnership;

  constructor(parts: TransferParts) {
    this.#application = parts.application;
    this.#store = parts.store;
    this.#hasRootState = parts.hasRootState;
    this.#reads = parts.reads;
    this.#own = parts.ownership;
  }

  /**
   * The run's v1alpha2 payload. Only while suspended at a completed turn boundary or terminal;
   * the codec refuses anything else (pending interactions, unresolved mutations, …) fail closed.
   */
  async exportSnapshot(runId: string): Promise<ExportedSnapshot> {
    await this.#reads.head(runId);
    // Under the run's lock, so the head and the messages are read from one state of the run.
    const lock = await this.#own.lock(runId);
    try {
      return await this.#export(runId);
    } finally {
      await lock.release();
    }
  }

  /**
   * Export a suspended (or terminal) run as an envelope signed by the run authority.
   * Signing SUSPENDED keeps exclusive ownership: the record binds the exact payload digest and
   * claim; an identical repeat export returns the same bytes; a differing claim for the same
   * transition generation is refused (`claim_conflict`).
   */
  async exportEnvelope(runId: string): Promise<SignedExport> {
    const authority = this.#own.authority;
    await this.#reads.head(runId);
    const lock = await this.#own.lock(runId);
    try {
      const payload = await this.#export(runId);
      const record = await this.#own.ownedRecord(runId);
      if (record.state === 'IMPORTING') throw importIncomplete(runId);
      // A claim bound at the current transition generation makes export idempotent (or refuses a differing one).
      const bound = record.claimHmac !== undefined && record.claimGeneration === record.transitionGeneration;
      const keyGeneration = bound ? record.keyGeneration! : authority.currentKeyGeneration();
      const transitionGeneration = bound ? record.claimGeneration! : record.transitionGeneration;
      const envelope = signEnvelope({
        payload: payload.bytes,
        scopeId: authority.scopeId,
        keyGeneration,
        hmacOf: (mac) => authority.claim({ keyGeneration, runId, transitionGeneration, macInput: mac }),
      });
      const claimHex = toHex(envelope.claim.hmac);
      if (bound) {
        if (record.payloadSha256 !== payload.sha256 || !hexEqual(record.claimHmac!, claimHex)) {
          throw conflict(
            'claim_conflict',
            `A different snapshot of run ${runId} is already signed at this generation.`,
            {
              nextAction: `resume the run to start a new generation: loopx run resume ${runId}`,
            },
          );
        }
      } else {
        await this.#own.writeRecord(
          lock,
          {
            ...record,
            state: payload.state.lifecycle === 'suspended' ? 'SUSPENDED' : 'TERMINAL',
            payloadSha256: payload.sha256,
            claimHmac: claimHex,
            keyGeneration,
            claimGeneration: transitionGeneration,
            lastSequence: payload.state.lastSequence,
          },
          'authority.export',
        );
      }
      return { bytes: encodeEnvelope(envelope), envelope, payloadSha256: payload.sha256, state: payload.state };
    } finally {
      await lock.release();
    }
  }

  /**
   * Import a signed snapshot into this root (RFC 0007). Order: structure and digest → keyed claim
   * verification, before the root is even opened → terminal refusal → static compatibility, before
   * anything is leased → the run's import lock (waiting out a competing importer) → the run's lock
   * (its owner must be dead) and a fresh run id here → lease the recorded tool plan and recompute
   * PlanIdentity → IMPORTING (the consume point, binding the snapshot's digest and claim) → commit
   * the kernel run with its definition → ACTIVE.
   * A failure before the consume point changes nothing; from the moment the consume write is
   * invoked the outcome is uncertain (`import_uncertain`) and is never retried automatically. The
   * same import run again into the root the IMPORTING record names completes it (idempotently);
   * every other root gets `snapshot_consumed`.
   */
  async importSnapshot(bytes: Uint8Array, options: { agent?: AgentDefinition } = {}): Promise<RunView> {
    const authority = this.#own.authority;
    const envelope = decodeEnvelope(bytes);
    const { state, seen, chosen } = await this.#admit(envelope, options.agent);
    const runId = state.runId;
    // Importers take the import lock before the run's lock, so a competitor that got here first
    // finishes (consumed, or failed before consuming) before this one reads the record again.
    const importLease = await authority.beginImport(runId);
    try {
      const lock = await this.#own.tryLock(runId);
      if (!lock) {
        // No importer holds it (we hold the import lock): the original owner is alive, unless the
        // snapshot was consumed meanwhile and its new owner is completing it.
        if (!(await this.#importable(await authority.readRecord(runId), seen))) throw consumed(runId);
        throw conflict(
          'run_owner_alive',
          `A live process holds run ${runId}; import needs its original owner to be gone.`,
          {
            nextAction: 'stop the process that runs it, then import again',
          },
        );
      }
      try {
        await this.#importLocked(lock, state, seen, chosen);
      } finally {
        await lock.release();
      }
    } finally {
      await importLease.release();
    }
    return this.#reads.show(runId);
  }

  /** Check a signed snapshot's claim against the local authority, without changing anything. */
  async verifySnapshot(bytes: Uint8Array): Promise<SnapshotVerification> {
    const envelope = decodeEnvelope(bytes);
    let record: RunRecord | undefined;
    try {
      record = await this.#verifiedRecord(envelope);
    } catch (e) {
      if (!hasCode(e, ENVELOPE_ERRORS.claimInvalid)) throw e;
    }
    return {
      valid: record !== undefined,
      record_state: record?.state ?? null,
      payload_sha256: toHex(envelope.payloadSha256),
    };
  }

  /**
   * Import's checks before anything is leased or written: the claim verifies (only from then on
   * may this root be opened), the snapshot is live and not tombstoned, it is still importable,
   * and its definition and static components match this engine's.
   */
  async #admit(
    envelope: SnapshotEnvelope,
    agent: AgentDefinition | undefined,
  ): Promise<{ state: RunSnapshotState; seen: RunRecord; chosen: ImportDefinition }> {
    const state = envelope.state;
    const runId = state.runId;
    const seen = await this.#verifiedRecord(envelope);
    // ── the claim verified: only from here on may this root be opened or changed ──
    if (state.lifecycle !== 'suspended') {
      throw rejected(
        'snapshot_terminal',
        `The snapshot of run ${runId} is ${state.lifecycle}: terminal snapshots are for inspection and are never imported as live.`,
        {
          nextAction: 'inspect it: loopx run inspect <snapshot-file>',
        },
      );
    }
    if (seen.state === 'TERMINAL') {
      throw conflict('run_tombstoned', `Run ${runId} has ended; its snapshots are never imported as live.`, {
        nextAction: `see how it ended: loopx authority show --run ${runId}`,
      });
    }
    if (!(await this.#importable(seen, seen))) throw consumed(runId);
    const chosen = await this.#definitionForImport(state, agent);
    this.#checkStaticCompatibility(state, chosen.def);
    return { state, seen, chosen };
  }

  /** Import under the import lock and the run's lock: re-read the record, lease the plan, consume, commit, activate. */
  async #importLocked(
    lock: RunLease,
    state: RunSnapshotState,
    seen: RunRecord,
    chosen: ImportDefinition,
  ): Promise<void> {
    const runId = state.runId;
    const current = await this.#own.authority.readRecord(runId);
    if (!current || !(await this.#importable(current, seen))) throw consumed(runId);
    const head = await this.#store().get(runId);
    // Completing an import whose kernel commit landed: the kernel run is exactly the snapshot's, never driven.
    const landed =
      current.state === 'IMPORTING' &&
      head !== undefined &&
      head.importedAtSequence === state.lastSequence &&
      head.lastSequence === state.lastSequence &&
      head.lifecycle === 'suspended';
    if (head && !landed)
      throw conflict('run_known', `This root already knows run ${runId}.`, {
        nextAction: 'import into a root that has never seen this run',
      });
    const planLease = landed ? undefined : this.#application.toolPlans.lease(state.planIdentity.toolPlanId);
    try {
      if (
        planLease &&
        this.#application.planIdentityFromLease(chosen.def, planLease).fingerprint !== state.planIdentity.fingerprint
      ) {
        throw rejected(
          'plan_identity_mismatch',
          `The tool plan ${state.planIdentity.toolPlanId} here differs from the one run ${runId} was made with.`,
          {
            nextAction: 'import with the application version that exported it',
          },
        );
      }
      await this.#consume(lock, current, state, chosen, landed);
    } finally {
      planLease?.release();
    }
  }

  /** From the consume point on: IMPORTING (unless already), the kernel commit (unless landed), ACTIVE. */
  async #consume(
    lock: RunLease,
    current: RunRecord,
    state: RunSnapshotState,
    chosen: ImportDefinition,
    landed: boolean,
  ): Promise<void> {
    const runId = state.runId;
    let importing = current;
    if (current.state === 'SUSPENDED') {
      importing = {
        ...current,
        state: 'IMPORTING',
        transitionGeneration: current.transitionGeneration + 1,
        ownerRoot: await this.#own.rootId(),
        updatedAt: '',
      };
      // Once the writer is invoked the rename (or its durability barrier) may have happened.
      await this.#uncertain(runId, () => this.#own.writeRecord(lock, importing, 'authority.import.consume'));
    }
    // ── past the consume point: any failure is uncertain, never retried automatically ──
    await this.#uncertain(runId, async () => {
      if (!landed) {
        await this.#store().insertImported(importedHead(state), state.messages, chosen.def, chosen.body);
        faultPoint(FAULT_IMPORT_AFTER_KERNEL_COMMIT);
      }
      // The import lock and the run lock are released even when this Activate is uncertain:
      // the committed kernel run is suspended and import never starts a driver for it, so
      // there is no host to stop and join; any later driver must take the run lock and write
      // ACTIVE (activateRecord, or this completion) before its first turn.
      await this.#own.writeRecord(lock, { ...importing, state: 'ACTIVE' }, 'authority.import.activate');
    });
  }

  /**
   * The run's record, provided the envelope's claim verifies with the authority's key *and* is the
   * claim (and digest) the record binds; else the one secret-safe `snapshot_claim_invalid`.
   * Reads only the authority: never the root.
   */
  async #verifiedRecord(envelope: SnapshotEnvelope): Promise<RunRecord> {
    const authority = this.#own.authority;
    const runId = envelope.state.runId;
    const seen = await authority.readRecord(runId);
    verifyEnvelope(envelope, (mac, claim) => {
      const macOk = authority.verifyClaim(
        claim.scopeId,
        { keyGeneration: claim.keyGeneration, runId, transitionGeneration: seen?.claimGeneration ?? 0, macInput: mac },
        claim.hmac,
      );
      const boundOk =
        seen?.claimHmac !== undefined &&
        hexEqual(seen.claimHmac, toHex(claim.hmac)) &&
        seen.payloadSha256 === toHex(envelope.payloadSha256);
      return macOk && boundOk;
    });
    return seen!;
  }

  /**
   * Whether `record` still lets the verified snapshot (whose record was `seen`) be imported here:
   * it binds the same claim and digest, and is SUSPENDED, or IMPORTING into this very root (an
   * interrupted import, which running the same import again completes).
   */
  async #importable(record: RunRecord | undefined, seen: RunRecord): Promise<boolean> {
    if (
      !record ||
      record.claimHmac === undefined ||
      !hexEqual(record.claimHmac, seen.claimHmac!) ||
      record.payloadSha256 !== seen.payloadSha256
    )
      return false;
    if (record.state === 'SUSPENDED') return true;
    // A root without engine.db has no id yet, so it cannot be the owner: do not create one to find out.
    return record.state === 'IMPORTING' && this.#hasRootState() && record.ownerRoot === (await this.#own.rootId());
  }

  /** Run a step at or after the consume point: any failure of it is `import_uncertain`. */
  async #uncertain(runId: string, step: () => Promise<void>): Promise<void> {
    try {
      await step();
    } catch (e) {
      throw internal(
        'import_uncertain',
        `Importing run ${runId} failed after its snapshot was consumed; it is not retried automatically.`,
        {
          cause: e,
          nextAction: IMPORT_INCOMPLETE_ACTION,
          details: { run_id: runId },
        },
      );
    }
  }

  async #definitionForImport(state: RunSnapshotState, given: AgentDefinition | undefined): Promise<ImportDefinition> {
    const matches = (d: AgentDefinition) =>
      d.id === state.definition.id &&
      d.version === state.definition.version &&
      d.model.provider === state.model.provider &&
      d.model.modelId === state.model.modelId &&
      d.turnLimit === state.turnLimit &&
      this.#application.toolPlanIdFor(d) === state.planIdentity.toolPlanId;
    const mismatch = () =>
      rejected(
        'import_definition_mismatch',
        `The agent definition does not match the snapshot's (${state.definition.id}@${state.definition.version}).`,
        {
          nextAction: 'pass the agent file the run was started with',
        },
      );
    // A root with no engine.db yet has stored nothing: reading must not create it (a refused import changes nothing).
    const hasRootState = this.#hasRootState();
    if (given) {
      const def = defineAgent(given);
      if (!matches(def)) throw mismatch();
      // The kernel commit stores this body, comparing it with the stored one (as putDefinition): a
      // differing stored one must be refused now, by the same comparison, before the consume point.
      const body = definitionBody(def);
      const storedBody = hasRootState ? await this.#store().definitionBodyOf(state.definition) : undefined;
      if (storedBody !== undefined && storedBody !== body) throw mismatch();
      return { def, body };
    }
    const stored = hasRootState ? await this.#store().getDefinition(state.definition) : undefined;
    const known = stored ?? this.#application.agent(state.definition);
    if (known) {
      if (!matches(known)) throw mismatch();
      return { def: known };
    }
    // The snapshot does not hold a script, a provider's base URL, key variable or a budget.
    if (state.model.provider === SCRIPTED_PROVIDER || this.#application.providerKind(state.model.provider)) {
      throw rejected(
        'import_definition_unknown',
        `This root does not know agent ${state.definition.id}@${state.definition.version}, and its model settings (script, endpoint, key, budget) are only in the agent file.`,
        {
          nextAction: 'pass the agent file: loopx run import <snapshot-file> --agent <agent-file>',
        },
      );
    }
    // Everything a definition of a program's own provider holds is in the snapshot (the system prompt is in the history).
    return {
      def: defineAgent({
        id: state.definition.id,
        version: state.definition.version,
        model: state.model,
        turnLimit: state.turnLimit,
        toolPlan: state.planIdentity.toolPlanId,
      }),
    };
  }

  /** Static compatibility, from declarations only — before any plan is leased or anything launched. */
  #checkStaticCompatibility(state: RunSnapshotState, def: AgentDefinition): void {
    const recorded = state.planIdentity;
    if (recorded.compatibilityIdentity === '') {
      throw rejected(
        'snapshot_compatibility_empty',
        'The snapshot was made by a convenience engine, which sets no compatibility identity: it is for inspection only.',
        {
          nextAction: 'run the agent under a full application (defineApplication) to move it between engines',
        },
      );
    }
    if (recorded.compatibilityIdentity !== this.#application.compatibilityIdentity) {
      throw rejected(
        'snapshot_compatibility_mismatch',
        `The snapshot needs compatibility ${recorded.compatibilityIdentity}; this engine is ${this.#application.compatibilityIdentity || '(empty)'}.`,
        {
          nextAction: 'import with the application version that exported it',
        },
      );
    }
    const here = this.#application.staticComponentsFor(def);
    const key = (c: { kind: string; name: string; module: string; version: string; sourceSha256: string }) =>
      JSON.stringify([c.kind, c.name, c.module, c.version, c.sourceSha256]);
    const hereKeys = new Set(here.map(key));
    const recordedKeys = new Set(recorded.components.map(key));
    const missing = recorded.components.filter((c) => !hereKeys.has(key(c))).map((c) => `${c.kind}:${c.name}`);
    const unexpected = here.filter((c) => !recordedKeys.has(key(c))).map((c) => `${c.kind}:${c.name}`);
    if (missing.length > 0 || unexpected.length > 0) {
      throw rejected(
        'snapshot_component_mismatch',
        `The components of this engine differ from those the snapshot was made with (${[...missing, ...unexpected].join(', ')}).`,
        {
          nextAction: 'import with the application version that exported it',
          details: { missing, unexpected },
        },
      );
    }
  }

  async #export(runId: string): Promise<ExportedSnapshot> {
    const head = await this.#reads.head(runId);
    if (head.lifecycle === 'active') {
      // The hint reads the engine's rows only: an uncertain call here is one to settle.
      const uncertain = head.pendingInteraction
        ? undefined
        : (await this.#store().mutations(runId)).find((m) => m.state === 'uncertain');
      throw rejected('export_run_active', `Run ${runId} is active; only a suspended or finished run can be exported.`, {
        nextAction: head.pendingInteraction
          ? `answer it, then suspend: loopx run answer ${runId} ${head.pendingInteraction.interactionId} TEXT`
          : uncertain
            ? `settle its uncertain call, then suspend: loopx run resolve ${runId} ${uncertain.callId} (--committed RESULT | --absent | --abandon)`
            : `suspend it first: loopx run suspend ${runId}`,
      });
    }
    const unresolved = (await this.#store().mutations(runId)).filter(
      (m) => m.state === 'intent' || m.state === 'uncertain',
    );
    if (unresolved.length > 0) {
      throw rejected(
        'export_unresolved_mutation',
        `Run ${runId} has ${unresolved.length} mutating call(s) with an unknown outcome.`,
        {
          nextAction: `settle it: loopx run resolve ${runId} ${unresolved[0]!.callId} (--committed RESULT | --absent | --abandon)`,
          details: { call_ids: unresolved.map((m) => m.callId) },
        },
      );
    }
    const state: RunSnapshotState = {
      runId: head.runId,
      definition: head.definition,
      model: head.model,
      turnLimit: head.turnLimit,
      completedTurns: head.completedTurns,
      messages: await this.#store().messages(runId),
      planIdentity: head.planIdentity,
      usedInteractionIds: head.usedInteractionIds,
      lastSequence: head.lastSequence,
      lifecycle: head.lifecycle,
    };
    const bytes = encodeSnapshot(state);
    return { bytes, sha256: snapshotDigest(bytes), state };
  }
}

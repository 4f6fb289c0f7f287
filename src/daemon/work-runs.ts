/**
 * Goal work runs the operator starts from the Capability Center. The daemon answers as soon as
 * the run is admitted and bound (every refusal — an unknown or paused Goal, a superseded
 * lifetime, a root a backup holds closed — is the answer), then drives the run in the background
 * through the same `runGoalWork` as `loopx work run`; the run page follows its events. When the
 * daemon stops, every run it drives is asked to suspend at its next turn boundary and is waited
 * for, so none is cut off mid-turn by a clean shutdown.
 */
import {
  goalWorkAgents,
  newRunId,
  runGoalWork,
  withRootEngine,
  type AgentDefinition,
  type Engine,
} from '../runtime/index.js';

export interface StartWorkRun {
  readonly root: string;
  readonly authorityDir?: string;
  readonly goalId: string;
  readonly agent: AgentDefinition;
  readonly turns?: number;
  readonly input?: string;
  /** The external system's deliveries endpoint (kept in the root's machine configuration, as `--sink`). */
  readonly webhookUrl?: string;
}

export class WorkRunDrives {
  private readonly driving = new Map<string, { engine: Engine; done: Promise<unknown> }>();

  constructor(
    private readonly agentsDir: string,
    private readonly log: (msg: string, fields: Record<string, unknown>) => void,
  ) {}

  /** The Goal work agents the daemon offers. */
  agents(): AgentDefinition[] {
    return goalWorkAgents(this.agentsDir);
  }

  /** Start a run; resolves with its id once it is admitted and bound, rejects with the refusal otherwise. */
  start(o: StartWorkRun): Promise<string> {
    const runId = newRunId();
    return new Promise<string>((resolveStarted, rejectStarted) => {
      let started = false;
      const done = withRootEngine(
        { root: o.root, ...(o.authorityDir !== undefined ? { authorityDir: o.authorityDir } : {}) },
        (engine) =>
          runGoalWork({
            root: o.root,
            goalId: o.goalId,
            agent: o.agent,
            engine,
            runId,
            ...(o.turns !== undefined ? { turns: o.turns } : {}),
            ...(o.input !== undefined ? { input: o.input } : {}),
            ...(o.webhookUrl !== undefined ? { webhookUrl: o.webhookUrl } : {}),
            onStarting: () => {
              started = true;
              this.driving.set(runId, { engine, done });
              resolveStarted(runId);
            },
          }),
      ).then(
        () => this.driving.delete(runId),
        (err: unknown) => {
          this.driving.delete(runId);
          if (!started) rejectStarted(err);
          // A failure after the run began is the run's own, recorded in its events; only its code is logged.
          else
            this.log('work run stopped on an error', {
              run: runId,
              code: (err as { code?: unknown }).code ?? 'internal',
            });
        },
      );
    });
  }

  /** Ask each driven run to suspend at its next turn boundary and wait for all of them. */
  async close(): Promise<void> {
    const all = [...this.driving.entries()];
    await Promise.all(
      all.map(async ([runId, d]) => {
        await d.engine.suspend(runId).catch(() => undefined);
        await d.done.catch(() => undefined);
      }),
    );
  }
}

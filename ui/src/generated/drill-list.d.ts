/* Generated from docs/schemas/daemon-drill-list.schema.json by `npm run schemas:types` (json-schema-to-typescript). Do not edit. */

/**
 * `GET /api/drills`: the drill running in the daemon now (or null) and the kept drill receipts, newest first, each summarized; the whole receipt is `GET /api/drills/:drill_id` (docs/api.md).
 */
export interface DaemonRecoveryDrillList {
  running: null | DaemonRecoveryDrillJob;
  drills: {
    drill_id: string;
    mode: "short" | "full";
    started_at: string;
    finished_at: string;
    result: "targets_met" | "targets_missed";
    missed: string[];
    rto: {
      seconds: number;
      target_seconds: number;
      met: boolean;
    };
    rpo: {
      claimed_beyond_checkpoint: number;
      met: boolean;
    };
  }[];
}
/**
 * A recovery drill started from the daemon: the answer of `POST /api/drills`, `GET /api/drills/jobs/:job_id`, the `result` event of its stream and `running` in `GET /api/drills` (docs/api.md). The drill runs on disposable synthetic state, never the daemon's root; its receipt is `GET /api/drills/:drill_id` (recover-drill.schema.json).
 */
export interface DaemonRecoveryDrillJob {
  job_id: string;
  /**
   * the short drill: two crash points of the apply
   */
  mode: "short";
  /**
   * done: a receipt was kept (whether or not every target was met); failed: none was
   */
  state: "running" | "done" | "failed";
  started_at: string;
  finished_at: string | null;
  /**
   * the drill's stages as each started, in order; while the job runs the last one is running
   */
  stages: string[];
  /**
   * the kept receipt's id once the job is done
   */
  drill_id: null | string;
  result: null | ("targets_met" | "targets_missed");
  /**
   * what the receipt says was missed (empty until done, and when every target was met)
   */
  missed: string[];
  /**
   * why a failed job kept no receipt: a typed code (the drill's own refusal, or daemon_drill_failed, daemon_drill_timed_out, daemon_drill_interrupted, daemon_drill_receipt_not_path_free, daemon_drill_receipt_not_kept)
   */
  error: null | {
    code: string;
    message: string;
    next_action: string | null;
  };
}

/* Generated from docs/schemas/daemon-job.schema.json by `npm run schemas:types` (json-schema-to-typescript). Do not edit. */

/**
 * A verify job of the daemon: `GET /api/backups/jobs/:job_id` and the `result` event of its stream (docs/api.md).
 */
export interface DaemonVerifyJob {
  job_id: string;
  /**
   * The upload verified; null when the job verifies a backup of this root.
   */
  upload_id: null | string;
  /**
   * Where the verified backup lies: `root` (the root's `backups/`), `user` (the user's backups folder, `$XDG_DATA_HOME/loopx/backups`), or null for an upload.
   */
  location: null | ("root" | "user");
  /**
   * `verifying` while the verification runs (its operator state), then the outcome: `audited`, `held` or `refused`.
   */
  state: "verifying" | "audited" | "held" | "refused";
  progress: null | {
    step: "inputs" | "destination" | "members" | "extract" | "owners" | "audit";
    done: number;
    total: number;
  };
  recovery_id: null | string;
  error: null | {
    code: string;
    message: string;
    next_action: string | null;
  };
  /**
   * The backup of this root (`<root>/backups`) verified; null for an upload.
   */
  backup_id: null | string;
}

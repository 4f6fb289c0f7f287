/* Generated from docs/schemas/daemon-repository-job.schema.json by `npm run schemas:types` (json-schema-to-typescript). Do not edit. */

/**
 * A backup into a repository (`POST /api/repositories/backups`, 202) or a verification of a repository's backup (`POST /api/repositories/backups/:backup_id/verify`, 202), and `GET /api/repositories/jobs/:job_id` (docs/api.md). No path, no key and no credential: the repository is named by its id.
 */
export interface DaemonRepositoryJob {
  job_id: string;
  kind: "backup" | "verify";
  repository_id: string;
  /**
   * The backup verified; for a backup job, the one made (null until it is known).
   */
  backup_id: null | string;
  /**
   * `done`: the backup was published, or the verification wrote its audit (audited or held); `refused` carries the typed refusal.
   */
  state: "running" | "done" | "refused";
  started_at: string;
  finished_at: string | null;
  /**
   * A verification's step while it runs; null for a backup.
   */
  progress: null | {
    step: "inputs" | "destination" | "members" | "extract" | "owners" | "audit";
    done: number;
    total: number;
  };
  /**
   * A finished backup job: the backup published.
   */
  backup: null | {
    backup_id: string;
    archive_bytes: number;
    achieved_profile: string;
    goals: number;
    encrypted: boolean;
    placement: {
      inside_root: boolean;
      same_filesystem: boolean;
    };
    /**
     * Said plainly when a directory repository lies inside the root or on its file system; null otherwise.
     */
    warning: string | null;
  };
  /**
   * A finished verification: its audit (`GET /api/audits/:recovery_id`).
   */
  audit: null | {
    recovery_id: string;
    phase: "audited" | "held";
    operator_state: string;
  };
  error: null | {
    code: string;
    message: string;
    next_action: string | null;
  };
}

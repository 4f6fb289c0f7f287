/* Generated from docs/schemas/daemon-backup-run.schema.json by `npm run schemas:types` (json-schema-to-typescript). Do not edit. */

/**
 * "Back up now": the answer of `POST /api/backups` (202) and `GET /api/backups/runs/:job_id`; `GET /api/backups/runs` lists them, newest first (docs/api.md). No path: the pair is named by its backup id and where it lies.
 */
export interface DaemonBackupRun {
  job_id: string;
  /**
   * `user`: the user's backups folder (`$XDG_DATA_HOME/loopx/backups`, default `~/.local/share/loopx/backups`), outside any root; `root`: the root's own `backups/`.
   */
  location: "user" | "root";
  requested_profile: "online" | "quiescent";
  state: "capturing" | "created" | "refused";
  result: null | {
    backup_id: string;
    archive_bytes: number;
    /**
     * The capture profile the backup achieved (it may be weaker than requested; the manifest says why).
     */
    achieved_profile: string;
    goals: number;
    placement: {
      inside_root: boolean;
      same_filesystem: boolean;
    };
    /**
     * Said plainly when the pair lies inside the root it protects or on its file system; null otherwise.
     */
    warning: string | null;
    /**
     * With a warning: the one command that puts the next backup elsewhere.
     */
    elsewhere: string | null;
  };
  error: null | {
    code: string;
    message: string;
    next_action: string | null;
  };
}

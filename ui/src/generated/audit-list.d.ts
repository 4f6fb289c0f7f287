/* Generated from docs/schemas/daemon-audit-list.schema.json by `npm run schemas:types` (json-schema-to-typescript). Do not edit. */

/**
 * `GET /api/audits`: the audits of this root's verify jobs, newest verification first, each with its source (docs/api.md).
 */
export interface DaemonAuditList {
  audits: {
    recovery_id: string;
    backup_id: string;
    phase: "audited" | "held";
    operator_state: "restored_inert" | "audit_held";
    /**
     * When the backup was made (its manifest's `created_at`; as `source.backup_created_at`).
     */
    created_at: string;
    /**
     * When the verification wrote this audit (ISO 8601); the list is newest first by it.
     */
    verified_at: string;
    source: Source;
    /**
     * How many Goals the audit names.
     */
    goals: number;
    assets: {
      recovered_readable: number;
      historical_only: number;
      unknown_unrecoverable: number;
    };
    execution_authority_granted: false;
  }[];
}
export interface Source {
  /**
   * `root_backup`: a backup in this root's `backups/` verified in place; `user_backup`: a backup in the user's backups folder (`$XDG_DATA_HOME/loopx/backups`) verified in place; `upload`: a pair uploaded to the daemon; `repository`: a backup repository's backup, fetched and verified (`repository_id` names it); `unknown`: verified before the daemon recorded sources.
   */
  kind: "root_backup" | "user_backup" | "upload" | "repository" | "unknown";
  /**
   * kind `repository` only: the repository's id (never its URL).
   */
  repository_id?: string;
  /**
   * kind `repository` only, from the audit: whether the backup was stored encrypted in the repository (false: labelled NOT encrypted).
   */
  encrypted?: boolean;
  backup_id: string;
  /**
   * When the backup itself was made (its manifest's `created_at`).
   */
  backup_created_at: string;
}

/* Generated from docs/schemas/daemon-audit-list.schema.json by `npm run schemas:types` (json-schema-to-typescript). Do not edit. */

/**
 * `GET /api/audits`: the audits of this root's verify jobs, newest first (docs/api.md).
 */
export interface DaemonAuditList {
  audits: {
    recovery_id: string;
    backup_id: string;
    phase: "audited" | "held";
    operator_state: "restored_inert" | "audit_held";
    created_at: string;
    assets: {
      recovered_readable: number;
      historical_only: number;
      unknown_unrecoverable: number;
    };
    execution_authority_granted: false;
  }[];
}

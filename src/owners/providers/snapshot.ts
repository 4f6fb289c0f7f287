/**
 * What a backup set records of a database service it read, and the snapshot it read it in — the
 * shape every service provider's `service.snapshot` answers (PostgreSQL's: postgresql-snapshot.ts).
 * A reference, never a credential: the provider, the schema, the server's identity (what a restore
 * changes), the installation the snapshot read and the snapshot's bounds. No URL, no variable's value.
 */
import type { InstallationState } from '../../store/index.js';
import type { LiveService } from '../contract.js';

/** The service a set was captured from, as the manifest records it. */
export interface ServiceReference {
  readonly provider: string;
  readonly schema: string;
  readonly server: { readonly system_identifier: string; readonly timeline: number; readonly database_oid: number };
  /** The schema's installation as the snapshot read it (null: the schema has no installation row). */
  readonly installation: {
    readonly store_identity: string;
    readonly restore_generation: number;
    readonly state: InstallationState;
  } | null;
  readonly snapshot: {
    readonly isolation: 'repeatable_read';
    readonly read_only: true;
    /** The snapshot's bounds (`pg_snapshot_xmin`/`xmax`): transactions it sees as committed are below xmax and not in progress. */
    readonly xmin: string;
    readonly xmax: string;
    readonly taken_at: string;
    /** Set when the snapshot was released (every component of the set read). */
    readonly released_at: string | null;
  };
}

export interface ServiceSnapshot extends LiveService {
  reference(): ServiceReference;
  /** Ends the snapshot's transaction (it wrote nothing); idempotent. */
  close(): Promise<void>;
}

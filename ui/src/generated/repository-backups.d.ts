/* Generated from docs/schemas/daemon-repository-backups.schema.json by `npm run schemas:types` (json-schema-to-typescript). Do not edit. */

/**
 * `GET /api/repositories/backups?repository=URL`: a backup repository's backups, newest capture first, as the Capability Center lists them (docs/api.md). The repository is named by its id, never by a path or a credential.
 */
export interface DaemonRepositoryBackups {
  repository: {
    /**
     * The repository's id (random, minted by repo init).
     */
    id: string;
    /**
     * A directory, or an S3-compatible bucket.
     */
    kind: "dir" | "s3";
    format: "loopx.repository/v1";
    /**
     * required: the repository keeps only encrypted backups.
     */
    encryption: "required" | "optional";
  };
  backups: {
    backup_id: string;
    /**
     * When the backup was captured (its manifest's created_at).
     */
    created_at: string;
    /**
     * When the repository published it.
     */
    published_at: string;
    /**
     * The opaque id of the root it protects; null for a root that had none.
     */
    root_id: string | null;
    /**
     * The profile the capture achieved; null for a legacy (v0) manifest.
     */
    capture_profile: string | null;
    /**
     * Sealed for its recipients: verifying it needs a key, by reference.
     */
    encrypted: boolean;
    /**
     * The archive's size as the repository stores it.
     */
    archive_bytes: number;
    /**
     * When it was last verified from this repository (by any host), or null.
     */
    verified_at: string | null;
    /**
     * The recovery id of this daemon's newest audit of it (verified from this repository), or null: a recovery starts from it.
     */
    audit_id: null | string;
  }[];
  /**
   * Ids whose publication did not finish: never backups.
   */
  incomplete: string[];
  /**
   * Ids whose entry does not read.
   */
  unreadable: string[];
}

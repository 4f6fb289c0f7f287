/**
 * The stable refusal codes of the snapshot codec. Each fail-closed case of RFC 0007 (and each
 * structural defect the codec can see) has exactly one code; callers branch on it, never on
 * message text. Every refusal is a LoopxError of kind 'rejected' (exit code 3) whose `details`
 * carry only positions, field names, bounds and counts — never payload content.
 */
import { rejected, type LoopxError } from '../core/index.js';

export const SNAPSHOT_ERRORS = {
  /** The bytes are not a parsable protobuf RunSnapshot (truncated, bad wire type, bad UTF-8…). */
  malformed: 'snapshot_malformed',
  /** A field this version does not define, at any depth. */
  unknownField: 'snapshot_unknown_field',
  /** `format` is not `loopx.run-snapshot`. */
  unsupportedFormat: 'snapshot_unsupported_format',
  /** `version` is not `v1alpha2`. */
  unsupportedVersion: 'snapshot_unsupported_version',
  /** A required sub-message, part content or identity string is absent or empty. */
  missingField: 'snapshot_missing_field',
  /** A state value has the wrong type or range, or a string is not well-formed Unicode (export only). */
  invalidField: 'snapshot_invalid_field',
  /** source_sha256 / fingerprint is not exactly 32 bytes (64 lowercase hex digits in the state). */
  invalidDigest: 'snapshot_invalid_digest',
  /** The lifecycle is ACTIVE: only suspended or terminal runs are exported. */
  activeLifecycle: 'snapshot_active_lifecycle',
  /** The lifecycle is UNSPECIFIED or a value this version does not define. */
  invalidLifecycle: 'snapshot_invalid_lifecycle',
  /** A message role is UNSPECIFIED/unknown, or a part type that role may not carry. */
  invalidRole: 'snapshot_invalid_role',
  /** A tool result status is UNSPECIFIED or unknown. */
  invalidStatus: 'snapshot_invalid_status',
  /** A component kind is UNSPECIFIED or unknown. */
  invalidComponentKind: 'snapshot_invalid_component_kind',
  /** Two messages share an id. */
  duplicateMessageId: 'snapshot_duplicate_message_id',
  /** Two tool calls share a call id, or one call has two results. */
  duplicateCallId: 'snapshot_duplicate_call_id',
  /** A tool call has no result. */
  unmatchedToolCall: 'snapshot_unmatched_tool_call',
  /** A tool result has no earlier call with its call id (or names another tool). */
  unmatchedToolResult: 'snapshot_unmatched_tool_result',
  /** A tool result is INTERACTION_PENDING: the run is waiting for a human. */
  pendingInteraction: 'snapshot_pending_interaction',
  /** A tool result is MUTATION_UNCERTAIN: a mutating call's outcome is unknown. */
  unresolvedMutation: 'snapshot_unresolved_mutation',
  /** arguments_json / result_json is not JSON (or nests deeper than maxJsonDepth). */
  invalidJson: 'snapshot_invalid_json',
  /** arguments_json / result_json is JSON but not its RFC 8785 canonical form. */
  nonCanonicalJson: 'snapshot_non_canonical_json',
  /** A bound of SNAPSHOT_LIMITS is exceeded; `details.bound` names it. */
  oversized: 'snapshot_oversized',
  /** last_sequence / completed_turns / turn_limit are inconsistent or out of range. */
  invalidSequence: 'snapshot_invalid_sequence',
  /** used_interaction_ids or plan components are not strictly increasing (unsorted or duplicated). */
  nonCanonicalOrder: 'snapshot_non_canonical_order',
  /** The bytes decode, but are not the canonical encoding of what they decode to. */
  nonCanonicalEncoding: 'snapshot_non_canonical_encoding',
} as const;

export type SnapshotErrorCode = (typeof SNAPSHOT_ERRORS)[keyof typeof SNAPSHOT_ERRORS];

const REEXPORT = 're-export the snapshot from its source run with this loopx version';
const INTACT = "obtain an intact copy of the snapshot (compare its SHA-256 with the exporter's)";

/** The one next action an operator takes for each code. */
const NEXT_ACTION: Readonly<Record<SnapshotErrorCode, string>> = {
  snapshot_malformed: INTACT,
  snapshot_unknown_field: 'import with the loopx version that wrote this snapshot, or re-export it as v1alpha2',
  snapshot_unsupported_format: 'pass a loopx run snapshot payload',
  snapshot_unsupported_version: 'import with a loopx version that supports this snapshot version',
  snapshot_missing_field: REEXPORT,
  snapshot_invalid_field: REEXPORT,
  snapshot_invalid_digest: REEXPORT,
  snapshot_active_lifecycle: 'suspend the run at a completed turn boundary, then export it',
  snapshot_invalid_lifecycle: REEXPORT,
  snapshot_invalid_role: REEXPORT,
  snapshot_invalid_status: REEXPORT,
  snapshot_invalid_component_kind: REEXPORT,
  snapshot_duplicate_message_id: REEXPORT,
  snapshot_duplicate_call_id: REEXPORT,
  snapshot_unmatched_tool_call: 'let the turn complete (every tool call settled), then export',
  snapshot_unmatched_tool_result: REEXPORT,
  snapshot_pending_interaction: 'answer the pending interaction and let the turn complete, then export',
  snapshot_unresolved_mutation: 'reconcile the uncertain tool mutation under its original operation id, then export',
  snapshot_invalid_json: REEXPORT,
  snapshot_non_canonical_json: REEXPORT,
  snapshot_oversized: 'shorten the run history or content below the documented bounds (docs/snapshot-format.md)',
  snapshot_invalid_sequence: REEXPORT,
  snapshot_non_canonical_order: REEXPORT,
  snapshot_non_canonical_encoding: INTACT,
};

export function snapshotError(
  code: SnapshotErrorCode,
  message: string,
  details?: Record<string, unknown>,
  cause?: unknown,
): LoopxError {
  return rejected(code, message, {
    nextAction: NEXT_ACTION[code],
    ...(details ? { details } : {}),
    ...(cause === undefined ? {} : { cause }),
  });
}

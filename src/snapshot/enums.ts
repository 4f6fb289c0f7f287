/**
 * The names of the v1alpha2 enum numbers. The .proto numbers are the wire truth; these tables only
 * name them, in both directions, for the codec (codec.ts) and its fused fast decoder (wire-decode.ts).
 */
import {
  ComponentKind as PbComponentKind,
  Lifecycle as PbLifecycle,
  Role as PbRole,
  ToolResultStatus as PbToolResultStatus,
} from './gen/loopx/snapshot/v1alpha2/snapshot_pb.js';
import type { ComponentKind, Lifecycle, Role, ToolResultStatus } from './state.js';

/**
 * The stable u32 wire number of each lifecycle, as defined once in snapshot.proto. The run
 * authority MAC encodes exactly this number (four bytes, big-endian).
 */
export const LIFECYCLE_WIRE_NUMBER: Readonly<Record<Lifecycle, number>> = {
  active: PbLifecycle.ACTIVE,
  suspended: PbLifecycle.SUSPENDED,
  completed: PbLifecycle.COMPLETED,
  failed: PbLifecycle.FAILED,
  cancelled: PbLifecycle.CANCELLED,
};

export const ROLE_TO_PB: Readonly<Record<Role, PbRole>> = {
  system: PbRole.SYSTEM,
  user: PbRole.USER,
  assistant: PbRole.ASSISTANT,
  tool: PbRole.TOOL,
};

export const STATUS_TO_PB: Readonly<Record<ToolResultStatus, PbToolResultStatus>> = {
  ok: PbToolResultStatus.OK,
  error: PbToolResultStatus.ERROR,
  interaction_pending: PbToolResultStatus.INTERACTION_PENDING,
  mutation_uncertain: PbToolResultStatus.MUTATION_UNCERTAIN,
};

export const KIND_TO_PB: Readonly<Record<ComponentKind, PbComponentKind>> = {
  provider: PbComponentKind.PROVIDER,
  stage: PbComponentKind.STAGE,
  observer: PbComponentKind.OBSERVER,
  broker: PbComponentKind.BROKER,
  static_tool: PbComponentKind.STATIC_TOOL,
  decorator: PbComponentKind.DECORATOR,
};

const invert = <K extends string>(table: Readonly<Record<K, number>>): ReadonlyMap<number, K> =>
  new Map(Object.entries(table).map(([k, v]) => [v as number, k as K]));

export const LIFECYCLE_FROM_PB = invert(LIFECYCLE_WIRE_NUMBER);
export const ROLE_FROM_PB = invert(ROLE_TO_PB);
export const STATUS_FROM_PB = invert(STATUS_TO_PB);
export const KIND_FROM_PB = invert(KIND_TO_PB);

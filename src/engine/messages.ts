/**
 * Run-scoped identities for the provider-neutral message history (whose shape is defined with the
 * snapshot state in `snapshot/state.ts`). Turn 0 holds the initial system/user messages; turn
 * N ≥ 1 is the Nth model turn. Because the turn counter only grows, a resumed run — in this
 * process or another — never reuses an earlier id.
 */
export type {
  Message,
  Part,
  Role,
  TextPart,
  ToolCallPart,
  ToolResultPart,
  ToolResultStatus,
} from '../snapshot/index.js';
export { ALLOWED_PARTS } from '../snapshot/index.js';

export const messageId = (runId: string, turn: number, index: number): string => `${runId}/t${turn}/m${index}`;
export const modelCallId = (runId: string, turn: number, index: number): string => `${runId}/t${turn}/c${index}`;
export const toolCallId = (runId: string, turn: number, index: number): string => `${runId}/t${turn}/k${index}`;

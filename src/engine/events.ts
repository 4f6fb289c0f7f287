/** The run event vocabulary. Sequences are per run, start at 1 and increase by exactly 1. */
import type { JsonValue } from './tools.js';

export const EVENT_TYPES = [
  'RunStarted',
  'TurnStarted',
  /** Text of a model response as it arrives (informational; ModelResponded records the response). */
  'ModelStreamed',
  /** A retryable model failure, before the call is made again inside the turn. */
  'ModelRetried',
  'ModelResponded',
  'ToolCalled',
  /** A call's result; a webhook delivery's also says what its receiver did (`delivery_result`, `duplicate_of`: deliveries.ts). */
  'ToolResulted',
  'TurnCompleted',
  'InteractionRequested',
  'InteractionAnswered',
  'Suspended',
  'Resumed',
  'Completed',
  'Failed',
  'Cancelled',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

export interface NewEvent {
  readonly type: EventType;
  readonly data: { readonly [k: string]: JsonValue };
}

export interface RunEvent extends NewEvent {
  readonly runId: string;
  readonly sequence: number;
  /** ISO-8601 commit time (informational; never part of a snapshot). */
  readonly at: string;
}

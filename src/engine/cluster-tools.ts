/**
 * The application the daemons of a cluster run agents with: the scripted provider, the AI SDK
 * providers and the `loopx.cluster.v1` tool plan — tools that hold nothing on the host they run on,
 * so a run can continue on any host of the cluster:
 *
 *   math.add          a pure tool
 *   receiver.deliver  a message to the cluster's receiver (an external system reached over HTTP):
 *                     journalled by the effect owner before dispatch, sent with its operation id and
 *                     an idempotency key and the run's epoch as its fence (the receiver refuses a
 *                     send of an owner older than the newest it has seen), and never sent twice —
 *                     an outcome the driver never learned
 *                     (the host died, the connection dropped) is held as unknown under its original
 *                     operation id for reconciliation, never re-dispatched by the next host
 *
 * Its compatibility identity is loopx's version and every component carries the SHA-256 of its
 * built source, so every host of one cluster must run the same build of loopx (a host on another
 * build refuses the run with `plan_identity_changed` instead of continuing it under other code).
 */
import { LOOPX_VERSION, rejected } from '../core/index.js';
import { effect as effectOwner } from '../owners/index.js';
import type { ComponentIdentity } from '../snapshot/index.js';
import { defineApplication, type Application } from './application.js';
import { mathAddTool } from './builtin.js';
import { journalled, unknownReason } from './goal-tools.js';
import { sourceIdentityOf } from './identity.js';
import { SDK_PROVIDER_KINDS } from './providers/catalog.js';
import { SCRIPTED_PROVIDER, SCRIPTED_PROVIDER_MODULE } from './providers/scripted.js';
import { effectOutput, type JsonValue, type Tool, type ToolPlan } from './tools.js';

export const CLUSTER_TOOL_PLAN = 'loopx.cluster.v1';
export const CLUSTER_COMPATIBILITY = `loopx.cluster/${LOOPX_VERSION}`;

let cachedSource: string | undefined;
const identity = (kind: ComponentIdentity['kind'], name: string): ComponentIdentity => ({
  kind,
  name,
  module: 'loopx/engine/cluster-tools',
  version: LOOPX_VERSION,
  sourceSha256: (cachedSource ??= sourceIdentityOf(import.meta.url)),
});

export interface ClusterToolOptions {
  /** The receiver `receiver.deliver` posts to (the cluster's setting); without one the tool refuses. */
  readonly receiverUrl?: string;
  /**
   * The epoch this process holds the run at (the run authority's). A delivery carries it as its
   * fence, with the run id as its lineage: once a later owner raised the receiver's fence, a send
   * of an earlier owner is refused by the receiver itself (fencing at the resource).
   */
  readonly fenceOf?: (runId: string) => number | undefined;
}

const receiverMissing = () =>
  rejected('cluster_receiver_missing', 'This cluster has no receiver to deliver to.', {
    nextAction: 'start the daemons with a receiver: loopx daemon --cluster env:NAME --receiver URL',
  });

export function clusterToolPlan(options: ClusterToolOptions = {}): ToolPlan {
  const tools: Tool[] = [
    mathAddTool(identity('static_tool', 'math.add')),
    {
      definition: {
        name: 'receiver.deliver',
        description:
          "Deliver a message to the cluster's receiver (an effect: recorded before dispatch, never repeated).",
        inputSchema: {
          type: 'object',
          additionalProperties: false,
          required: ['message'],
          properties: { message: { type: 'string', maxLength: 8192 } },
        },
        mutating: true,
      },
      identity: identity('static_tool', 'receiver.deliver'),
      describeEffect: (args, ctx) => {
        if (options.receiverUrl === undefined) throw receiverMissing();
        const fence = options.fenceOf?.(ctx.runId);
        const body = { message: args.message as string, run_id: ctx.runId, call_id: ctx.callId };
        return {
          kind: effectOwner.WEBHOOK_KIND,
          target: effectOwner.webhookTarget(options.receiverUrl),
          intent: effectOwner.webhookIntent(
            options.receiverUrl,
            body,
            fence === undefined ? undefined : { goal_lineage: ctx.runId, fence },
          ),
        };
      },
      execute: async (_args, ctx) => {
        const effect = journalled(ctx);
        const sent = await effectOwner.sendWebhook(effect);
        if (sent.outcome === 'committed')
          return effectOutput({ delivered: true, operation_id: effect.operation_id }, sent.receipt as JsonValue);
        if (sent.outcome === 'rejected') {
          throw rejected('receiver_rejected', 'The receiver refused the delivery.', {
            details: { http_status: (sent.receipt as { http_status: number }).http_status },
          });
        }
        // Unknown: recorded as uncertain; it is reconciled under its operation id, never repeated.
        throw effectOwner.outcomeUnknown(effect.operation_id, unknownReason(sent.receipt as JsonValue));
      },
    },
  ];
  return { id: CLUSTER_TOOL_PLAN, tools };
}

/** The cluster's application (see the header). */
export function clusterApplication(options: ClusterToolOptions = {}): Application {
  return defineApplication({
    providerKinds: SDK_PROVIDER_KINDS,
    compatibilityIdentity: CLUSTER_COMPATIBILITY,
    toolPlans: [clusterToolPlan(options)],
    scriptedProviderIdentity: {
      ...identity('provider', SCRIPTED_PROVIDER),
      module: 'loopx/engine/providers/scripted',
      sourceSha256: sourceIdentityOf(SCRIPTED_PROVIDER_MODULE),
    },
  });
}

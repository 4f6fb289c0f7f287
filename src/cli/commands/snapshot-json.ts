/** The JSON rendering of a decoded snapshot (`loopx run inspect --json`); see docs/cli-json.md. */
import type { RunSnapshotState } from '../../runtime/index.js';

export const snapshotToJson = (s: RunSnapshotState) => ({
  run_id: s.runId,
  definition: { id: s.definition.id, version: s.definition.version },
  model: { provider: s.model.provider, model_id: s.model.modelId },
  turn_limit: s.turnLimit,
  completed_turns: s.completedTurns,
  lifecycle: s.lifecycle,
  last_sequence: s.lastSequence,
  used_interaction_ids: s.usedInteractionIds,
  plan_identity: {
    tool_plan_id: s.planIdentity.toolPlanId,
    compatibility_identity: s.planIdentity.compatibilityIdentity,
    fingerprint: s.planIdentity.fingerprint,
    components: s.planIdentity.components.map((c) => ({
      kind: c.kind,
      name: c.name,
      module: c.module,
      version: c.version,
      source_sha256: c.sourceSha256,
    })),
  },
  messages: s.messages.map((m) => ({
    id: m.id,
    role: m.role,
    parts: m.parts.map((p) =>
      p.type === 'text'
        ? { type: 'text', text: p.text }
        : p.type === 'tool_call'
          ? { type: 'tool_call', call_id: p.callId, tool_name: p.toolName, arguments_json: p.argumentsJson }
          : {
              type: 'tool_result',
              call_id: p.callId,
              tool_name: p.toolName,
              status: p.status,
              result_json: p.resultJson,
            },
    ),
  })),
});

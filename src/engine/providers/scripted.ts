/**
 * The deterministic scripted provider: the embedded default for demos and tests. Step N of the
 * script answers the Nth model call of a run, where N is derived from the history (the number of
 * assistant messages), so a run resumed in another process gets exactly the step it would have.
 * An exhausted script is a provider failure (`script_exhausted`), never an invented answer.
 */
import { rejected } from '../../core/index.js';
import type { ComponentIdentity } from '../../snapshot/index.js';
import type { ScriptStep } from '../agent.js';
import type { ModelProvider, ModelRequest, ModelResponse } from './provider.js';

export const SCRIPTED_PROVIDER = 'scripted';

export function scriptedProvider(script: readonly ScriptStep[], identity?: ComponentIdentity): ModelProvider {
  return {
    name: SCRIPTED_PROVIDER,
    ...(identity ? { identity } : {}),
    async generate(request: ModelRequest): Promise<ModelResponse> {
      const index = request.messages.filter((m) => m.role === 'assistant').length;
      const step = script[index];
      if (!step) throw rejected('script_exhausted', `The script has no step ${index + 1} (it has ${script.length}).`);
      return {
        text: step.text ?? '',
        toolCalls: (step.toolCalls ?? []).map((c) => ({ toolName: c.name, arguments: c.arguments })),
      };
    },
  };
}

/** This module's URL, whose built source is the scripted provider's source identity. */
export const SCRIPTED_PROVIDER_MODULE = import.meta.url;

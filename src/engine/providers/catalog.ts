/**
 * The model providers an agent file can name — `openai`, `anthropic` and `openai-compatible` —
 * each through the AI SDK's own provider package, streamed through the adapter (ai-sdk.ts).
 *
 * Rules it keeps:
 * - A provider's identity is static: the provider kind and the model id as its name, the package
 *   and its version as module and version, and as source the SHA-256 of the package's loaded entry
 *   file together with this adapter's own built source. It is computed without credentials and
 *   without loading the package, so an import checks it before anything is launched; a run
 *   continues only where the same provider package, adapter and model answer it.
 * - The API key is named by an environment variable (`model.api_key_env`, else the provider's
 *   usual one) and read when a run is driven — never stored in the root, a snapshot, a backup, an
 *   audit or a log. A missing key is refused before the run's first commit.
 * - The package is loaded on the first model call (most commands never call a model).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LanguageModelV3 } from '@ai-sdk/provider';
import { canonicalJson, rejected, sha256Hex, type LoopxError } from '../../core/index.js';
import type { ComponentIdentity } from '../../snapshot/index.js';
import type { ModelSpec } from '../agent.js';
import { aiSdkProvider } from './ai-sdk.js';
import type { ModelProvider, ModelRequest, ModelResponse } from './provider.js';

/** A provider kind an agent file names in `model.provider`. */
export interface ModelProviderKind {
  readonly name: string;
  /** The component identity a run of `model` records (static: no credentials, nothing loaded). */
  identity(model: ModelSpec): ComponentIdentity;
  /** A provider for `model`, its key read from the environment now; throws `model_credentials_missing`. */
  create(model: ModelSpec, env?: NodeJS.ProcessEnv): ModelProvider;
}

interface SdkKind {
  readonly name: string;
  readonly packageName: string;
  /** The key's variable when the agent names none; undefined: the provider needs no key unless one is named. */
  readonly defaultKeyEnv: string | undefined;
  load(
    settings: { apiKey: string | undefined; baseURL: string | undefined },
    modelId: string,
  ): Promise<LanguageModelV3>;
}

const SDK_KINDS: readonly SdkKind[] = [
  {
    name: 'openai',
    packageName: '@ai-sdk/openai',
    defaultKeyEnv: 'OPENAI_API_KEY',
    load: async (s, modelId) => (await import('@ai-sdk/openai')).createOpenAI(defined(s)).responses(modelId),
  },
  {
    name: 'anthropic',
    packageName: '@ai-sdk/anthropic',
    defaultKeyEnv: 'ANTHROPIC_API_KEY',
    load: async (s, modelId) => (await import('@ai-sdk/anthropic')).createAnthropic(defined(s)).messages(modelId),
  },
  {
    name: 'openai-compatible',
    packageName: '@ai-sdk/openai-compatible',
    defaultKeyEnv: undefined,
    load: async (s, modelId) =>
      (await import('@ai-sdk/openai-compatible'))
        .createOpenAICompatible({
          name: 'openai-compatible',
          baseURL: s.baseURL!,
          includeUsage: true,
          ...(s.apiKey ? { apiKey: s.apiKey } : {}),
        })
        .chatModel(modelId),
  },
];

const defined = (s: { apiKey: string | undefined; baseURL: string | undefined }) => ({
  ...(s.apiKey !== undefined ? { apiKey: s.apiKey } : {}),
  ...(s.baseURL !== undefined ? { baseURL: s.baseURL } : {}),
});

/** The environment variable a run of `model` reads its key from (undefined: it sends none). */
export function apiKeyEnvOf(model: ModelSpec): string | undefined {
  return model.apiKeyEnv ?? SDK_KINDS.find((k) => k.name === model.provider)?.defaultKeyEnv;
}

export const modelCredentialsMissing = (provider: string, variable: string): LoopxError =>
  rejected(
    'model_credentials_missing',
    `The ${provider} model's API key is read from ${variable}, which is not set for this process.`,
    {
      nextAction: `set ${variable} in the environment of the loopx process that drives the run, then run the command again`,
      details: { variable },
    },
  );

const require = createRequire(import.meta.url);
const identities = new Map<string, { version: string; source: string }>();
let adapterSource: string | undefined;

/** The package's version and the SHA-256 of its entry file with this adapter's source (computed once per process). */
function packageIdentity(packageName: string): { version: string; source: string } {
  const known = identities.get(packageName);
  if (known) return known;
  const manifestPath = require.resolve(`${packageName}/package.json`);
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as {
    version: string;
    exports: { '.': { import: string } };
  };
  const version = manifest.version;
  // The ESM entry this process imports (the package's `exports` map names it).
  const entry = join(dirname(manifestPath), manifest.exports['.'].import);
  adapterSource ??= sha256Hex(
    Buffer.concat(
      // The catalog, the adapter and its tool-name mapping: a change to any of them changes what a resumed run would send.
      [
        import.meta.url,
        new URL('./ai-sdk' + extensionOf(import.meta.url), import.meta.url),
        new URL('./tool-names' + extensionOf(import.meta.url), import.meta.url),
      ].map((u) => readFileSync(fileURLToPath(u))),
    ),
  );
  const source = sha256Hex(
    canonicalJson({
      domain: 'loopx.ai-sdk-provider/v1',
      package_entry: sha256Hex(readFileSync(entry)),
      adapter: adapterSource,
    }),
  );
  const computed = { version, source };
  identities.set(packageName, computed);
  return computed;
}

const extensionOf = (url: string): string => url.slice(url.lastIndexOf('.'));

function sdkKind(kind: SdkKind): ModelProviderKind {
  const identityOf = (model: ModelSpec): ComponentIdentity => {
    const { version, source } = packageIdentity(kind.packageName);
    return {
      kind: 'provider',
      name: `${kind.name}/${model.modelId}`,
      module: kind.packageName,
      version,
      sourceSha256: source,
    };
  };
  return {
    name: kind.name,
    identity: identityOf,
    create(model, env = process.env) {
      const variable = model.apiKeyEnv ?? kind.defaultKeyEnv;
      const apiKey = variable === undefined ? undefined : env[variable];
      if (variable !== undefined && !apiKey) throw modelCredentialsMissing(kind.name, variable);
      const identity = identityOf(model);
      let provider: Promise<ModelProvider> | undefined;
      const loaded = () =>
        (provider ??= kind
          .load({ apiKey, baseURL: model.baseUrl }, model.modelId)
          .then((languageModel) => aiSdkProvider({ name: kind.name, model: languageModel, identity, stream: true })));
      return {
        name: kind.name,
        identity,
        generate: async (request: ModelRequest): Promise<ModelResponse> => (await loaded()).generate(request),
      };
    },
  };
}

/** The provider kinds the `loopx` command offers besides `scripted`. */
export const SDK_PROVIDER_KINDS: readonly ModelProviderKind[] = SDK_KINDS.map(sdkKind);

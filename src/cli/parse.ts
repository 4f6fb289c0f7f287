/** Option parsers: bad values are usage errors (exit 2), never NaN. */
import { InvalidArgumentError } from 'commander';
import { usageError } from '../core/index.js';
import { SERVICE_STORE_CHOICES, STORE_CHOICES } from './runtime-facts.js';

export function parseCount(value: string): number {
  if (!/^\d{1,9}$/.test(value)) throw new InvalidArgumentError('expected a whole number ≥ 0');
  return Number(value);
}

export function parsePositive(value: string): number {
  if (!/^\d{1,9}$/.test(value) || Number(value) < 1) throw new InvalidArgumentError('expected a whole number ≥ 1');
  return Number(value);
}

/** The provider options of `init --store` and `goal create --work-provider`, checked as one shape. */
export interface StoreChoiceOptions {
  readonly databaseUrl?: string;
  readonly pgSchema?: string;
}

/**
 * `--store` / `--work-provider` with `--database-url env:NAME` and `--pg-schema`: the provider is
 * one a root (or a Goal's work) can choose (`store_provider_unknown`), and the service options go
 * only with a database service (`store_options_invalid`) — which needs its URL reference when
 * `urlRequired`.
 */
export function parseStoreChoice(
  flag: '--store' | '--work-provider' | '--to',
  command: 'init' | 'goal create' | 'goal move-work',
  provider: string | undefined,
  o: StoreChoiceOptions,
  urlRequired: boolean,
): { provider?: string; databaseUrl?: string; schema?: string } {
  const help = `see its options: loopx ${command} --help`;
  const choices = STORE_CHOICES[command === 'init' ? 'root' : 'goal_work'];
  if (provider !== undefined && !choices.includes(provider))
    throw usageError('store_provider_unknown', `${flag} is ${choices.join(' or ')}, not ${provider}.`, help);
  const service = provider !== undefined && SERVICE_STORE_CHOICES.includes(provider);
  if (
    (!service && (o.databaseUrl !== undefined || o.pgSchema !== undefined)) ||
    (service && urlRequired && o.databaseUrl === undefined)
  ) {
    throw usageError(
      'store_options_invalid',
      `--database-url and --pg-schema go with ${flag} ${SERVICE_STORE_CHOICES.join(' or ')}${urlRequired ? ', which needs --database-url' : ''}.`,
      help,
    );
  }
  return {
    ...(provider !== undefined ? { provider } : {}),
    ...(o.databaseUrl !== undefined ? { databaseUrl: o.databaseUrl } : {}),
    ...(o.pgSchema !== undefined ? { schema: o.pgSchema } : {}),
  };
}

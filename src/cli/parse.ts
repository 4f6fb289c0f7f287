/** Option parsers: bad values are usage errors (exit 2), never NaN. */
import { InvalidArgumentError } from 'commander';
import { usageError } from '../core/index.js';

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
 * sqlite or postgresql (`store_provider_unknown`), and the PostgreSQL options go only with
 * postgresql (`store_options_invalid`) — which needs its URL reference when `urlRequired`.
 */
export function parseStoreChoice(
  flag: '--store' | '--work-provider',
  command: 'init' | 'goal create',
  provider: string | undefined,
  o: StoreChoiceOptions,
  urlRequired: boolean,
): { provider?: 'sqlite' | 'postgresql'; databaseUrl?: string; schema?: string } {
  const help = `see its options: loopx ${command} --help`;
  if (provider !== undefined && provider !== 'sqlite' && provider !== 'postgresql')
    throw usageError('store_provider_unknown', `${flag} is sqlite or postgresql, not ${provider}.`, help);
  const pg = provider === 'postgresql';
  if ((!pg && (o.databaseUrl !== undefined || o.pgSchema !== undefined)) || (pg && urlRequired && o.databaseUrl === undefined)) {
    throw usageError('store_options_invalid', `--database-url and --pg-schema go with ${flag} postgresql${urlRequired ? ', which needs --database-url' : ''}.`, help);
  }
  return {
    ...(provider !== undefined ? { provider } : {}),
    ...(o.databaseUrl !== undefined ? { databaseUrl: o.databaseUrl } : {}),
    ...(o.pgSchema !== undefined ? { schema: o.pgSchema } : {}),
  };
}

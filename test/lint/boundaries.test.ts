/**
 * The map is enforced by `npm run lint` (eslint.config.js, eslint-plugin-boundaries): these run
 * ESLint's Node API with the project's own config over small in-memory sources placed in src/,
 * and assert the rule fires on each kind of violation — and stays quiet on the imports the map
 * allows, so a config that rejects everything cannot pass either.
 */
import { join } from 'node:path';
import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';
import { REPO } from '../support/cli.js';

const eslint = new ESLint({ cwd: REPO });

/** The boundaries findings for `source` linted as if it were the file `at` (relative to the repo); its imports must name files that exist. */
async function findings(at: string, source: string): Promise<string[]> {
  const [result] = await eslint.lintText(source, { filePath: join(REPO, at) });
  return result!.messages.filter((m) => m.ruleId === 'boundaries/dependencies').map((m) => m.message);
}

const refused = async (at: string, source: string) =>
  expect(await findings(at, source), `${at}: ${source}`).toHaveLength(1);
const allowed = async (at: string, source: string) =>
  expect(await findings(at, source), `${at}: ${source}`).toEqual([]);

describe('the map (boundaries/dependencies)', () => {
  it('another folder is imported only through its index.ts', async () => {
    await refused('src/engine/probe.ts', "import { rejected } from '../core/errors.js';\nvoid rejected;\n");
    await refused('src/engine/probe.ts', "import { LAYOUT } from '../owners/layout.js';\nvoid LAYOUT;\n");
    await refused('src/cli/commands/probe.ts', "export { openSqlite } from '../../store/sqlite.js';\n");
    await allowed(
      'src/engine/probe.ts',
      "import { rejected } from '../core/index.js';\nimport { LAYOUT } from '../owners/index.js';\nvoid rejected; void LAYOUT;\n",
    );
  });

  it("an owner's folder is internal to owners/: other folders go through owners/index.ts", async () => {
    await refused('src/runtime/probe.ts', "import * as workOwner from '../owners/work/index.js';\nvoid workOwner;\n");
    await refused(
      'src/engine/probe.ts',
      "import type { WorkOwner } from '../owners/work/work.js';\nexport type T = WorkOwner;\n",
    );
    await allowed('src/runtime/probe.ts', "import { work as workOwner } from '../owners/index.js';\nvoid workOwner;\n");
  });

  it('inside owners/, an owner reaches another only through its index.ts, and never owners/index.ts', async () => {
    await refused(
      'src/owners/work/probe.ts',
      "import { DEFAULT_PROJECT } from '../goal/store.js';\nvoid DEFAULT_PROJECT;\n",
    );
    await refused('src/owners/work/probe.ts', "import { goal } from '../index.js';\nvoid goal;\n");
    await allowed(
      'src/owners/work/probe.ts',
      "import { DEFAULT_PROJECT } from '../goal/index.js';\nimport { LAYOUT } from '../layout.js';\nimport { rejected } from '../../core/index.js';\nvoid DEFAULT_PROJECT; void LAYOUT; void rejected;\n",
    );
    await allowed('src/owners/probe.ts', "export * as work from './work/index.js';\n");
  });

  it('dependencies point downward only, dynamic imports included', async () => {
    await refused('src/store/probe.ts', "import { LAYOUT } from '../owners/index.js';\nvoid LAYOUT;\n");
    await refused('src/owners/probe.ts', "import { openEngine } from '../engine/index.js';\nvoid openEngine;\n");
    await refused('src/core/probe.ts', "export const load = () => import('../store/index.js');\n");
    await refused('src/daemon/probe.ts', "import { main } from '../cli/index.js';\nvoid main;\n");
    await refused(
      'src/snapshot/probe.ts',
      "import { openRunAuthority } from '../run-authority/index.js';\nvoid openRunAuthority;\n",
    );
    await allowed('src/cli/commands/probe.ts', "export const load = () => import('../../daemon/index.js');\n");
  });

  it('the engine never reaches recovery (the runtime composes them; no exception remains)', async () => {
    await refused('src/engine/probe.ts', "import { showAudit } from '../recovery/index.js';\nvoid showAudit;\n");
    await refused('src/engine/workspace.ts', "import { showAudit } from '../recovery/index.js';\nvoid showAudit;\n");
    await allowed('src/runtime/probe.ts', "import { showAudit } from '../recovery/index.js';\nvoid showAudit;\n");
  });

  it('the CLI and the daemon call the runtime and nothing below it', async () => {
    for (const [at, up] of [
      ['src/cli/commands/probe.ts', '../..'],
      ['src/daemon/probe.ts', '..'],
    ] as const) {
      for (const below of [
        'owners',
        'engine',
        'backup',
        'recovery',
        'repository',
        'snapshot',
        'run-authority',
        'store',
        'dev',
      ]) {
        await refused(at, `import * as below from '${up}/${below}/index.js';\nvoid below;\n`);
      }
      await allowed(
        at,
        `import { withRootOwners } from '${up}/runtime/index.js';\nimport { rejected } from '${up}/core/index.js';\nvoid withRootOwners; void rejected;\n`,
      );
    }
    await refused('src/runtime/probe.ts', "import { main } from '../cli/index.js';\nvoid main;\n");
    await refused('src/runtime/probe.ts', "import { buildApp } from '../daemon/index.js';\nvoid buildApp;\n");
  });
});

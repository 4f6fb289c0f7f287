/**
 * The MCP SDK is imported on first launch, never when the engine is imported (every CLI command
 * imports the engine): outside sdk.ts, the module imports it for types only.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO } from '../../support/cli.js';

describe('the MCP SDK import', () => {
  it('is type-only outside sdk.ts, which imports it dynamically', () => {
    const dir = join(REPO, 'src', 'engine', 'mcp');
    const valueImports: string[] = [];
    for (const f of readdirSync(dir).filter((n) => n.endsWith('.ts'))) {
      const text = readFileSync(join(dir, f), 'utf8');
      for (const m of text.matchAll(/^import\s+(?!type\b)[^;]*?from\s+'@modelcontextprotocol\/sdk[^']*';/gms))
        valueImports.push(`${f}: ${m[0]}`);
    }
    expect(valueImports).toEqual([]);
    expect(readFileSync(join(dir, 'sdk.ts'), 'utf8')).toContain("import('@modelcontextprotocol/sdk/client/index.js')");
  });
});

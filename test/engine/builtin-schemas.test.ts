/**
 * The built-in application compiles its tools' argument schemas on each tool's first call
 * (src/engine/builtin.ts: `compileToolSchemas: 'on_first_call'`), so that a command that calls no
 * tool never loads Ajv. That is sound only while every one of those schemas compiles: each is
 * compiled here as the engine compiles it (Ajv, strict), and a first call still refuses arguments
 * its schema refuses.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { afterAll, describe, expect, it } from 'vitest';
import { BUILTIN_TOOL_PLAN, builtinApplication, GOAL_WORK_TOOL_PLAN } from '../../src/engine/index.js';

const dir = mkdtempSync(join(tmpdir(), 'loopx-builtin-schemas-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('the built-in tools’ argument schemas', () => {
  const app = builtinApplication(join(dir, 'root'));
  const plans = [BUILTIN_TOOL_PLAN, GOAL_WORK_TOOL_PLAN].map((id) => app.toolPlans.declared(id));

  it('are registered for both built-in plans', () => {
    expect(plans.map((p) => p?.tools.length ?? 0).every((n) => n > 0)).toBe(true);
  });

  it('each compile under Ajv strict mode, as the engine compiles them', () => {
    const ajv = new Ajv({ strict: true, allErrors: false });
    for (const plan of plans)
      for (const tool of plan!.tools)
        expect(() => ajv.compile(tool.definition.inputSchema), tool.definition.name).not.toThrow();
  });

  it('still refuse arguments their schema refuses, on the first call', () => {
    for (const plan of plans) {
      const lease = app.toolPlans.lease(plan!.id);
      try {
        for (const tool of plan!.tools)
          expect(() => lease.validateArguments(tool.definition.name, 'not an object'), tool.definition.name).toThrow(
            expect.objectContaining({ code: 'tool_arguments_invalid' }),
          );
      } finally {
        lease.release();
      }
    }
  });
});

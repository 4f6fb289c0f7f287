/**
 * Agent definitions, applications, identities and tool plans: what an engine accepts to run, and
 * what it records about the code a run executes so that a changed plan never continues a run.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  BUILTIN_COMPATIBILITY,
  BUILTIN_TOOL_PLAN,
  builtinApplication,
  computePlanIdentity,
  convenienceApplication,
  defineAgent,
  defineApplication,
  loadAgentFile,
  ToolPlanHost,
  type AgentDefinition,
  type Application,
  type ComponentIdentity,
  type JsonValue,
  type Tool,
  type ToolPlan,
  type ToolPlanLease,
} from '../../src/engine/index.js';
import { compareComponents, decodeSnapshot } from '../../src/snapshot/index.js';
import {
  addTool,
  allEvents,
  askTool,
  call,
  componentIdentity,
  expectCode,
  expectThrowsCode,
  latch,
  localApp,
  makeTool,
  openTestEngine,
  PLAN,
  privateDir,
  scriptedAgent,
  STORE_KINDS,
} from './engine-support.js';

const researcherPath = new URL('../../examples/agents/researcher.json', import.meta.url).pathname;

const researcherFile = {
  id: 'demo.researcher',
  version: '1.0.0',
  model: { provider: 'scripted', model_id: 'scripted-v1' },
  turn_limit: 6,
  tool_plan: 'loopx.builtin.v1',
};

const typedAgent: AgentDefinition = {
  id: 'test.typed',
  version: '1.0.0',
  model: { provider: 'scripted', modelId: 'scripted-v1' },
  turnLimit: 3,
  toolPlan: PLAN,
  script: [{ text: 'hi', toolCalls: [{ name: 'add', arguments: { a: 1, b: 2 } }] }],
};

function writeAgentFile(value: unknown): string {
  const path = join(privateDir(), 'agent.json');
  writeFileSync(path, typeof value === 'string' ? value : JSON.stringify(value));
  return path;
}

const scriptedIdentity = componentIdentity('provider', 'scripted');

/** A full application with one tool plan; every component has an identity. */
const fullApp = (
  tools: readonly Tool[],
  options: { compatibilityIdentity?: string; components?: ComponentIdentity[] } = {},
): Application =>
  defineApplication({
    compatibilityIdentity: options.compatibilityIdentity ?? 'test.app/1',
    toolPlans: [{ id: PLAN, tools }],
    scriptedProviderIdentity: scriptedIdentity,
    ...(options.components ? { components: options.components } : {}),
  });

const addWithSchema = (inputSchema: { readonly [k: string]: JsonValue }): Tool =>
  makeTool('add', (args) => ({ sum: (args.a as number) + (args.b as number) }), { inputSchema });

describe('agent definitions', () => {
  it('a file and the typed API validate through the same schema and give the same definition', () => {
    const fromFile = loadAgentFile(researcherPath);
    const typed = defineAgent(fromFile);

    expect(typed).toEqual(fromFile);
    expect(fromFile).toMatchObject({
      id: 'demo.researcher',
      version: '1.0.0',
      model: { provider: 'scripted', modelId: 'scripted-v1' },
      turnLimit: 6,
      toolPlan: 'loopx.builtin.v1',
    });
    expect(fromFile.script).toHaveLength(4);
    expect(defineAgent(typedAgent)).toEqual(typedAgent);
  });

  it.each([
    ['top level', { ...researcherFile, temperature: 0.2 }],
    ['model', { ...researcherFile, model: { ...researcherFile.model, api_key: 'sk-x' } }],
    ['script step', { ...researcherFile, script: [{ text: 'x', tools: [] }] }],
    [
      'script tool call',
      { ...researcherFile, script: [{ tool_calls: [{ name: 'math.add', arguments: {}, id: 'c1' }] }] },
    ],
    ['camelCase key in a file', { ...researcherFile, turnLimit: 6 }],
  ])('an agent file with an unknown field (%s) is refused with agent_definition_invalid', (_where, value) => {
    expectThrowsCode(() => loadAgentFile(writeAgentFile(value)), 'agent_definition_invalid');
  });

  it.each([
    ['top level', { ...typedAgent, temperature: 0.2 }],
    ['model', { ...typedAgent, model: { ...typedAgent.model, apiKey: 'sk-x' } }],
    ['script step', { ...typedAgent, script: [{ text: 'x', tools: [] }] }],
    ['script tool call', { ...typedAgent, script: [{ toolCalls: [{ name: 'add', arguments: {}, id: 'c1' }] }] }],
    ['snake_case key in the typed API', { ...typedAgent, turn_limit: 3 }],
  ])('a typed definition with an unknown field (%s) is refused with agent_definition_invalid', (_where, value) => {
    expectThrowsCode(() => defineAgent(value as unknown as AgentDefinition), 'agent_definition_invalid');
  });

  it.each([
    ['turnLimit 0', { ...typedAgent, turnLimit: 0 }],
    ['empty version', { ...typedAgent, version: '' }],
    ['bad id', { ...typedAgent, id: '-x' }],
    ['missing model', { ...typedAgent, model: undefined }],
    ['non-array script', { ...typedAgent, script: 'say hi' }],
  ])('a typed definition with an invalid value (%s) is refused with agent_definition_invalid', (_where, value) => {
    expectThrowsCode(() => defineAgent(value as unknown as AgentDefinition), 'agent_definition_invalid');
  });

  it('an agent file that is not JSON is agent_definition_invalid; a missing one is agent_file_missing', () => {
    expectThrowsCode(() => loadAgentFile(writeAgentFile('{ "id": ')), 'agent_definition_invalid');
    expectThrowsCode(() => loadAgentFile(join(privateDir(), 'none.json')), 'agent_file_missing');
  });

  it.each(STORE_KINDS)(
    'a changed definition under the same id and version is refused with definition_conflict (%s store)',
    async (kind) => {
      const engine = openTestEngine(kind, localApp([addTool()]));
      const v1 = scriptedAgent([{ text: 'done' }], { turnLimit: 3 });
      await engine.start(v1, { runId: 'run-v1' });

      await expectCode(engine.start({ ...v1, turnLimit: 4 }, { runId: 'run-v1-changed' }), 'definition_conflict');
      await expectCode(
        engine.start({ ...v1, script: [{ text: 'other' }] }, { runId: 'run-v1-script' }),
        'definition_conflict',
      );
      expect((await engine.list()).map((r) => r.run_id)).toEqual(['run-v1']);

      // The same content again, or the change under a new version, is accepted.
      expect((await engine.start(v1, { runId: 'run-v1-again' })).status).toBe('completed');
      expect((await engine.start({ ...v1, version: '1.0.1', turnLimit: 4 }, { runId: 'run-v2' })).status).toBe(
        'completed',
      );
    },
  );

  it('a definition conflict is detected across engines sharing a SQLite root', async () => {
    const root = privateDir();
    const first = openTestEngine('sqlite', localApp([addTool()]), root);
    await first.start(scriptedAgent([{ text: 'done' }]), { runId: 'run-1' });
    first.close();

    const second = openTestEngine('sqlite', localApp([addTool()]), root);
    await expectCode(second.start(scriptedAgent([{ text: 'changed' }]), { runId: 'run-2' }), 'definition_conflict');
  });
});

describe('applications and identities', () => {
  it('defineApplication without a compatibility identity is refused with compatibility_identity_missing', () => {
    expectThrowsCode(
      () => defineApplication({ compatibilityIdentity: '', toolPlans: [] }),
      'compatibility_identity_missing',
    );
    expectThrowsCode(
      () => defineApplication({ compatibilityIdentity: '   ', toolPlans: [] }),
      'compatibility_identity_missing',
    );
  });

  it('defineApplication with a tool that has no identity is refused with component_identity_missing', () => {
    const anonymous = makeTool('anon', () => null, { identity: null });
    expectThrowsCode(
      () =>
        defineApplication({
          compatibilityIdentity: 'test.app/1',
          toolPlans: [{ id: PLAN, tools: [addTool(), anonymous] }],
        }),
      'component_identity_missing',
    );
  });

  it('defineApplication with a provider that has no identity is refused with component_identity_missing', () => {
    const provider = { name: 'p', generate: async () => ({ text: '', toolCalls: [] }) };
    expectThrowsCode(
      () => defineApplication({ compatibilityIdentity: 'test.app/1', providers: [provider], toolPlans: [] }),
      'component_identity_missing',
    );
  });

  it('a malformed component identity is refused with component_identity_invalid', () => {
    const wrongKind = makeTool('add', () => null, { identity: componentIdentity('provider', 'add') });
    const badDigest = makeTool('add', () => null, {
      identity: { ...componentIdentity('static_tool', 'add'), sourceSha256: 'abc' },
    });
    expectThrowsCode(
      () => defineApplication({ compatibilityIdentity: 'c', toolPlans: [{ id: PLAN, tools: [wrongKind] }] }),
      'component_identity_invalid',
    );
    expectThrowsCode(
      () => defineApplication({ compatibilityIdentity: 'c', toolPlans: [{ id: PLAN, tools: [badDigest] }] }),
      'component_identity_invalid',
    );
  });

  it('a full application running the scripted provider without its identity refuses to start the run', async () => {
    const app = defineApplication({
      compatibilityIdentity: 'test.app/1',
      toolPlans: [{ id: PLAN, tools: [addTool()] }],
    });
    const engine = openTestEngine('memory', app);

    await expectCode(
      engine.start(scriptedAgent([{ text: 'done' }]), { runId: 'run-noid' }),
      'component_identity_missing',
    );
    expect(await engine.list()).toEqual([]);
  });

  it("a convenience application's snapshots carry an empty compatibility identity", async () => {
    const engine = openTestEngine(
      'memory',
      convenienceApplication({ toolPlans: [{ id: PLAN, tools: [makeTool('x', () => null, { identity: null })] }] }),
    );
    await engine.start(scriptedAgent([{ text: 'done' }]), { runId: 'run-conv' });

    const decoded = decodeSnapshot((await engine.exportSnapshot('run-conv')).bytes);

    expect(decoded.planIdentity.compatibilityIdentity).toBe('');
    expect(decoded.planIdentity.toolPlanId).toBe(PLAN);
  });

  it("a full application's snapshots carry its compatibility identity", async () => {
    const root = privateDir();
    const engine = openTestEngine('sqlite', builtinApplication(root), root);
    await engine.start(loadAgentFile(researcherPath), { runId: 'run-full', suspendAfterTurns: 1 });

    const decoded = decodeSnapshot((await engine.exportSnapshot('run-full')).bytes);

    expect(decoded.planIdentity).toMatchObject({
      compatibilityIdentity: BUILTIN_COMPATIBILITY,
      toolPlanId: BUILTIN_TOOL_PLAN,
    });
    expect(decoded.planIdentity.components.map((c) => `${c.kind}:${c.name}`)).toEqual([
      'provider:scripted',
      'static_tool:human.ask',
      'static_tool:math.add',
      'static_tool:outbox.append',
    ]);
  });

  it('PlanIdentity components are sorted and unique whatever order the application declares them in', async () => {
    const tools = [makeTool('zeta', () => null), makeTool('alpha', () => null), makeTool('mid', () => null)];
    const observer = componentIdentity('observer', 'audit');
    const broker = componentIdentity('broker', 'queue');
    const app = fullApp(tools, { components: [observer, broker, observer] });
    const engine = openTestEngine('memory', app);
    await engine.start(scriptedAgent([{ text: 'done' }]), { runId: 'run-sorted' });

    const components = decodeSnapshot((await engine.exportSnapshot('run-sorted')).bytes).planIdentity.components;

    expect(components).toEqual([...components].sort(compareComponents));
    expect(components.map((c) => `${c.kind}:${c.name}`)).toEqual([
      'broker:queue',
      'observer:audit',
      'provider:scripted',
      'static_tool:alpha',
      'static_tool:mid',
      'static_tool:zeta',
    ]);
  });

  it("the plan fingerprint changes when a tool's JSON Schema changes", () => {
    const agent = scriptedAgent([{ text: 'done' }]);
    const a = fullApp([
      addWithSchema({ type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } } }),
    ]).planIdentityFor(agent);
    const b = fullApp([
      addWithSchema({ type: 'object', properties: { a: { type: 'number' }, b: { type: 'integer' } } }),
    ]).planIdentityFor(agent);

    expect(b.fingerprint).not.toBe(a.fingerprint);
    expect(b.components).toEqual(a.components);
  });

  it('the plan fingerprint is the same for equal schemas whose keys are ordered differently (RFC 8785)', () => {
    const agent = scriptedAgent([{ text: 'done' }]);
    const ordered = fullApp([
      addWithSchema({
        type: 'object',
        required: ['a', 'b'],
        properties: { a: { type: 'number', minimum: 0 }, b: { type: 'number' } },
      }),
    ]).planIdentityFor(agent);
    const reordered = fullApp([
      addWithSchema({
        properties: { b: { type: 'number' }, a: { minimum: 0, type: 'number' } },
        required: ['a', 'b'],
        type: 'object',
      }),
    ]).planIdentityFor(agent);

    expect(reordered.fingerprint).toBe(ordered.fingerprint);
    expect(reordered.fingerprint).toMatch(/^[0-9a-f]{64}$/);
  });

  it('the plan fingerprint covers the compatibility identity, the tool plan id and each tool definition', () => {
    const tools = [addTool()];
    const base = computePlanIdentity({
      components: [],
      toolPlanId: PLAN,
      compatibilityIdentity: 'c/1',
      tools: tools.map((t) => t.definition),
    });
    const variants = [
      computePlanIdentity({
        components: [],
        toolPlanId: PLAN,
        compatibilityIdentity: 'c/2',
        tools: tools.map((t) => t.definition),
      }),
      computePlanIdentity({
        components: [],
        toolPlanId: 'other.plan',
        compatibilityIdentity: 'c/1',
        tools: tools.map((t) => t.definition),
      }),
      computePlanIdentity({
        components: [],
        toolPlanId: PLAN,
        compatibilityIdentity: 'c/1',
        tools: [{ ...tools[0]!.definition, mutating: true }],
      }),
      computePlanIdentity({
        components: [],
        toolPlanId: PLAN,
        compatibilityIdentity: 'c/1',
        tools: [{ ...tools[0]!.definition, description: 'changed' }],
      }),
      computePlanIdentity({
        components: [componentIdentity('stage', 's')],
        toolPlanId: PLAN,
        compatibilityIdentity: 'c/1',
        tools: tools.map((t) => t.definition),
      }),
    ];
    expect(new Set([base, ...variants].map((p) => p.fingerprint)).size).toBe(variants.length + 1);
  });

  it('a run whose plan identity changed refuses to resume with plan_identity_changed, and stays as it was', async () => {
    const root = privateDir();
    const before = openTestEngine('sqlite', fullApp([addTool()]), root);
    const agent = scriptedAgent([
      { toolCalls: [call('add', { a: 1, b: 2 })] },
      { toolCalls: [call('add', { a: 3, b: 4 })] },
      { text: 'done' },
    ]);
    const suspended = await before.start(agent, { runId: 'run-pc', suspendAfterTurns: 1 });
    const snapshot = await before.exportSnapshot('run-pc');
    before.close();

    const changed = fullApp([
      addWithSchema({ type: 'object', properties: { a: { type: 'integer' }, b: { type: 'integer' } } }),
    ]);
    const after = openTestEngine('sqlite', changed, root);
    await expectCode(after.resume('run-pc'), 'plan_identity_changed');

    // Refused before any mutation: still suspended, no Resumed event, the same snapshot bytes.
    expect(await after.show('run-pc')).toEqual(suspended);
    expect((await allEvents(after, 'run-pc')).map((e) => e.type)).not.toContain('Resumed');
    expect(Buffer.from((await after.exportSnapshot('run-pc')).bytes).equals(Buffer.from(snapshot.bytes))).toBe(true);
    expect(changed.toolPlans.liveLeases).toBe(0);
    after.close();

    // The original code continues it.
    const again = openTestEngine('sqlite', fullApp([addTool()]), root);
    expect(await again.resume('run-pc')).toMatchObject({ status: 'completed', completed_turns: 3 });
  });

  it('a run whose tool plan is missing refuses to resume with tool_plan_missing, and stays as it was', async () => {
    const root = privateDir();
    const before = openTestEngine('sqlite', localApp([addTool()]), root);
    const suspended = await before.start(
      scriptedAgent([{ toolCalls: [call('add', { a: 1, b: 2 })] }, { text: 'done' }]),
      { runId: 'run-pm', suspendAfterTurns: 1 },
    );
    before.close();

    const after = openTestEngine('sqlite', localApp([addTool()], 'another.plan'), root);
    await expectCode(after.resume('run-pm'), 'tool_plan_missing');
    expect(await after.show('run-pm')).toEqual(suspended);
  });

  it('an answer to a run whose plan identity changed is refused with plan_identity_changed and is not recorded', async () => {
    const root = privateDir();
    const before = openTestEngine('sqlite', fullApp([askTool()]), root);
    const waiting = await before.start(
      scriptedAgent([{ toolCalls: [call('ask', { id: 'q', prompt: '?' })] }, { text: 'done' }]),
      { runId: 'run-pa' },
    );
    before.close();

    const changedAsk = makeTool(
      'ask',
      (args, ctx) => ctx.requestInteraction(args.id as string, args.prompt as string),
      { description: 'changed' },
    );
    const after = openTestEngine('sqlite', fullApp([changedAsk]), root);
    await expectCode(after.answer('run-pa', 'q', 'yes'), 'plan_identity_changed');
    expect(await after.show('run-pa')).toEqual(waiting);
  });

  it('a resolution for a run whose plan identity changed is refused with plan_identity_changed and the call stays uncertain', async () => {
    const root = privateDir();
    const failing = (description: string): Tool =>
      makeTool(
        'charge',
        () => {
          throw new Error('timeout after send');
        },
        { mutating: true, description },
      );
    const before = openTestEngine('sqlite', fullApp([failing('charge v1')]), root);
    const waiting = await before.start(scriptedAgent([{ toolCalls: [call('charge', {})] }, { text: 'done' }]), {
      runId: 'run-pr',
    });
    expect(waiting.waiting_for).toMatchObject({ kind: 'resolution' });
    before.close();

    const after = openTestEngine('sqlite', fullApp([failing('charge v2')]), root);
    await expectCode(after.resolve('run-pr', 'run-pr/t1/k0', { kind: 'absent' }), 'plan_identity_changed');
    expect(await after.show('run-pr')).toEqual(waiting);
    expect(await after.mutations('run-pr')).toMatchObject([{ state: 'uncertain' }]);

    // Settling without continuing (a cluster's operator) runs no plan code: the call is settled,
    // and the run, still active, is refused by the driver that would continue it under the changed plan.
    const settled = await after.resolve('run-pr', 'run-pr/t1/k0', { kind: 'absent' }, { drive: false });
    expect(settled).toMatchObject({ status: 'active', waiting_for: null, completed_turns: 0 });
    expect(await after.mutations('run-pr')).toMatchObject([{ state: 'absent' }]);
    await expectCode(after.resume('run-pr'), 'plan_identity_changed');
    after.close();
    const same = openTestEngine('sqlite', fullApp([failing('charge v1')]), root);
    expect(await same.resume('run-pr')).toMatchObject({ status: 'completed' });
  });
});

describe('tool plans', () => {
  const plan: ToolPlan = { id: 'p.one', tools: [addTool()] };

  it('a lease is live until released, its release is observable, and releasing twice is harmless', async () => {
    const host = new ToolPlanHost();
    host.register(plan);

    const lease = host.lease('p.one');
    const other = host.lease('p.one');
    expect(host.liveLeases).toBe(2);
    expect(lease.released).toBe(false);
    expect(other.leaseId).not.toBe(lease.leaseId);

    lease.release();
    lease.release();
    await lease.whenReleased;
    expect(lease.released).toBe(true);
    expect(host.liveLeases).toBe(1);
    other.release();
    expect(host.liveLeases).toBe(0);
  });

  it('leasing a plan the host does not have is refused with tool_plan_missing', () => {
    const host = new ToolPlanHost();
    host.register(plan);
    expectThrowsCode(() => host.lease('p.two'), 'tool_plan_missing');
    expect(host.liveLeases).toBe(0);
  });

  it('registering a plan id twice is tool_plan_exists; a duplicate or malformed tool name is refused', () => {
    const host = new ToolPlanHost();
    host.register(plan);
    expectThrowsCode(() => host.register(plan), 'tool_plan_exists');
    expectThrowsCode(() => host.register({ id: 'p.dup', tools: [addTool(), addTool()] }), 'tool_name_duplicate');
    expectThrowsCode(
      () => host.register({ id: 'p.bad', tools: [makeTool('1bad name', () => null)] }),
      'tool_name_invalid',
    );
  });

  it('a lease validates arguments against the JSON Schema: tool_arguments_invalid, tool_unknown', () => {
    const host = new ToolPlanHost();
    host.register(plan);
    const lease = host.lease('p.one');
    lease.validateArguments('add', { a: 1, b: 2 });
    expectThrowsCode(() => lease.validateArguments('add', { a: 1 }), 'tool_arguments_invalid');
    expectThrowsCode(() => lease.validateArguments('add', { a: 1, b: 2, c: 3 }), 'tool_arguments_invalid');
    expectThrowsCode(() => lease.validateArguments('sub', {}), 'tool_unknown');
    lease.release();
  });

  it('starting a run whose tool plan the engine does not have is refused with tool_plan_missing', async () => {
    const engine = openTestEngine('memory', localApp([addTool()]));
    await expectCode(
      engine.start(scriptedAgent([{ text: 'done' }], { toolPlan: 'nope.plan' }), { runId: 'run-np' }),
      'tool_plan_missing',
    );
    expect(await engine.list()).toEqual([]);
  });

  /** A host that keeps every lease it hands out, so a test can watch each one's release. */
  class RecordingHost extends ToolPlanHost {
    readonly leases: ToolPlanLease[] = [];
    override lease(planId: string): ToolPlanLease {
      const lease = super.lease(planId);
      this.leases.push(lease);
      return lease;
    }
  }

  const recordingApp = (tools: Tool[]): { app: Application; host: RecordingHost } => {
    const base = localApp(tools);
    const host = new RecordingHost();
    host.register({ id: PLAN, tools });
    return { app: { ...base, toolPlans: host }, host };
  };

  it.each(STORE_KINDS)(
    'a run holds one live lease of its plan while driven and releases it when it stops driving (%s store)',
    async (kind) => {
      const entered = latch();
      const gate = latch();
      const block = makeTool('block', async () => {
        entered.open();
        await gate.wait();
        return null;
      });
      const { app, host } = recordingApp([block, askTool(), addTool()]);
      const engine = openTestEngine(kind, app);
      const agent = scriptedAgent([
        { toolCalls: [call('block', {})] },
        { toolCalls: [call('ask', { id: 'q', prompt: '?' })] },
        { toolCalls: [call('add', { a: 1, b: 1 })] },
        { text: 'done' },
      ]);

      const running = engine.start(agent, { runId: 'run-lease' });
      await entered.wait();
      expect(host.liveLeases).toBe(1);
      expect(host.leases.map((l) => l.released)).toEqual([false]);

      gate.open();
      expect((await running).waiting_for).toMatchObject({ kind: 'interaction' });
      // Waiting for a human is not driving: the lease is released.
      expect(host.liveLeases).toBe(0);
      await Promise.all(host.leases.map((l) => l.whenReleased));

      await engine.suspend('run-lease');
      expect((await engine.answer('run-lease', 'q', 'yes')).status).toBe('suspended');
      expect(host.liveLeases).toBe(0);
      expect((await engine.resume('run-lease')).status).toBe('completed');
      expect(host.liveLeases).toBe(0);
      expect(host.leases.length).toBeGreaterThanOrEqual(3);
      await Promise.all(host.leases.map((l) => l.whenReleased));
      expect(host.leases.every((l) => l.released)).toBe(true);
    },
  );

  it('a run that fails releases its lease', async () => {
    const { app, host } = recordingApp([addTool()]);
    const engine = openTestEngine('memory', app);

    expect(
      (await engine.start(scriptedAgent([{ toolCalls: [call('add', { a: 1, b: 1 })] }]), { runId: 'run-fail' })).status,
    ).toBe('failed');

    expect(host.liveLeases).toBe(0);
    expect(host.leases.every((l) => l.released)).toBe(true);
  });
});

/**
 * Tool names as the model APIs accept them. loopx names tools with dots (`todo.list`,
 * `webhook.deliver`, an MCP server's `server.tool`), but OpenAI's function names must match
 * `^[a-zA-Z0-9_-]{1,64}$` and Anthropic's tool names `^[a-zA-Z0-9_-]{1,128}$`: a request naming
 * `todo.list` is refused with a 400 before the model sees it. This module owns the one mapping
 * between loopx names and the names on the wire (the strict common subset: 64 characters).
 *
 * Rules it keeps:
 * - A name already in the pattern is sent as it is; any other has each character outside
 *   `[a-zA-Z0-9_-]` replaced by `_` (`todo.list` → `todo_list`).
 * - Where that would collide (`a.b` beside `a_b`, or `a.b` beside `a:b`) or exceed 64 characters,
 *   the replaced name is cut to 55 characters and given `_` and the first 8 hex digits of the
 *   loopx name's SHA-256 — only for the names that need it; a name already in the pattern keeps
 *   itself.
 * - The mapping is a function of the SET of names (order and repeats do not matter), so the same
 *   tools and history give the same wire names in any process: a run resumed elsewhere sends the
 *   model exactly the names it was shown before. It never depends on a clock or a counter.
 * - It is collision-free or it refuses: two loopx names never share a wire name
 *   (internal `tool_names_collide`, which only a name built to match another's hash can cause).
 * - A name coming back that the request did not send is a typed failure
 *   (`model_tool_name_unknown`), never passed on or dropped.
 */
import { internal, rejected, sha256Hex, type LoopxError } from '../../core/index.js';

/** What every model API accepts as a tool name (OpenAI's rule; Anthropic allows up to 128). */
export const WIRE_TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

const MAX = 64;
const HASH_HEX = 8;

export interface ToolNameMap {
  /** The wire name of a loopx name of the set; throws internal `tool_name_unmapped` for any other. */
  toWire(name: string): string;
  /** The loopx name a wire name stands for; undefined when the request sent no such name. */
  fromWire(wire: string): string | undefined;
}

const replaced = (name: string): string => name.replace(/[^a-zA-Z0-9_-]/gu, '_');

const hashed = (name: string): string =>
  `${replaced(name).slice(0, MAX - HASH_HEX - 1)}_${sha256Hex(name).slice(0, HASH_HEX)}`;

/** The mapping for a set of loopx names: the request's tools and every name its history carries. */
export function toolNameMap(names: Iterable<string>): ToolNameMap {
  const all = [...new Set(names)].sort();
  const wireOf = new Map<string, string>();
  const nameOf = new Map<string, string>();
  const assign = (name: string, wire: string): void => {
    const holder = nameOf.get(wire);
    if (holder !== undefined) {
      throw internal(
        'tool_names_collide',
        `Tools ${JSON.stringify(holder)} and ${JSON.stringify(name)} would reach the model under one name.`,
        {
          details: { tool_names: [holder, name] },
        },
      );
    }
    wireOf.set(name, wire);
    nameOf.set(wire, name);
  };
  // Names already in the pattern first: they keep themselves whatever else is in the set.
  for (const name of all) if (WIRE_TOOL_NAME.test(name)) assign(name, name);
  const rest = all.filter((name) => !WIRE_TOOL_NAME.test(name));
  const shared = new Map<string, number>();
  for (const name of rest) shared.set(replaced(name), (shared.get(replaced(name)) ?? 0) + 1);
  for (const name of rest) {
    const plain = replaced(name);
    const clear = plain.length > 0 && plain.length <= MAX && shared.get(plain) === 1 && !nameOf.has(plain);
    assign(name, clear ? plain : hashed(name));
  }
  return {
    toWire(name) {
      const wire = wireOf.get(name);
      if (wire === undefined)
        throw internal(
          'tool_name_unmapped',
          `Tool ${JSON.stringify(name)} is not among the names of this model request.`,
        );
      return wire;
    },
    fromWire: (wire) => nameOf.get(wire),
  };
}

/** The model answered with a tool name the request never sent (the engine cannot tell what it meant). */
export const modelToolNameUnknown = (wire: string): LoopxError => {
  const shown = wire.length > 80 ? `${wire.slice(0, 80)}…` : wire;
  return rejected(
    'model_tool_name_unknown',
    `The model called a tool named ${JSON.stringify(shown)}, which this model call did not offer.`,
    {
      nextAction:
        "check that the agent's model supports tool calling with the tools it is offered, then start the run again",
      details: { tool_name: shown },
    },
  );
};

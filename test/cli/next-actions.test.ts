/**
 * Every command loopx suggests — a refusal's next action or a printed hint — works when run as
 * printed. The texts are collected statically from src/ (every string and template literal, so a
 * new refusal cannot escape), and each is held to the rule of src/cli/context.ts:
 *
 *   - a text names a command when it contains `: loopx ` — the command is the rest of the text.
 *     Its placeholders (`${…}`, `<…>`, ALL-CAPS words such as FILE or RESULT) become scratch
 *     values, each alternative of `(a | b | c)` is tried, the invocation's --root and
 *     --authority-dir (a scratch root) are carried into it as reportError carries them, and the
 *     real program of `loopx` (buildProgram, the parser main() runs) must accept it: no unknown
 *     command or option, no missing argument or mandatory option, no invalid value (`--help`
 *     counts as parsed). Actions are not run (parsing stops at the first preAction hook), so one
 *     process checks them all;
 *   - a `loopx …` in backticks or parentheses is a command the reader is meant to type: it must
 *     parse as printed too (so `loopx todo list` without its --goal fails), and is better written
 *     in the form above, which also carries --root. Exempt: the texts of TYPED_ELSEWHERE;
 *   - any other `loopx <command>` in a text is prose that mentions a command by name, and is
 *     skipped — but it must not be followed by a flag or a placeholder: a command with arguments
 *     written in prose would escape both this test and the carrying of --root.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import ts from 'typescript';
import { CommanderError, type Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { buildProgram } from '../../src/cli/main.js';
import { carryGlobals, CLUSTER_CARRYING, COMMAND_MARK } from '../../src/cli/context.js';
import { REPO, tempRoot, rel } from '../support/cli.js';

interface Text {
  readonly at: string;
  readonly text: string;
}

/** Every string literal and template (with `${…}` kept as written) under src/, generated code excepted. */
function literalsOf(dir: string): Text[] {
  const out: Text[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (e.isDirectory()) {
        if (e.name !== 'gen') walk(p);
      } else if (p.endsWith('.ts')) {
        const sf = ts.createSourceFile(p, readFileSync(p, 'utf8'), ts.ScriptTarget.Latest, true);
        const visit = (n: ts.Node): void => {
          let text: string | undefined;
          if (ts.isStringLiteral(n) || ts.isNoSubstitutionTemplateLiteral(n)) text = n.text;
          else if (ts.isTemplateExpression(n))
            text =
              n.head.text + n.templateSpans.map((s) => `\${${s.expression.getText(sf)}}${s.literal.text}`).join('');
          if (text !== undefined && text.includes('loopx '))
            out.push({ at: `${relative(REPO, p)}:${sf.getLineAndCharacterOfPosition(n.getStart()).line + 1}`, text });
          ts.forEachChild(n, visit);
        };
        visit(sf);
      }
    }
  };
  walk(dir);
  return out;
}

/** Quoted commands that are not for an operator to run as they stand, and why. */
const TYPED_ELSEWHERE: Readonly<Record<string, string>> = {
  'Ask the operator a question; the run waits for `loopx run answer`.':
    "a tool description for the model, part of the built-in tool plan's identity",
};

const SCRATCH = '1';
const PLACEHOLDER = /^(?:\$\{.*\}|<.*>|"<.*>"|[A-Z][A-Z0-9_]*(?:\.[a-z]+)?)$/;

/** The command of a text as argv arrays, one per alternative, placeholders replaced. */
function argvsOf(command: string): string[][] {
  const alt = /\(([^()]*\|[^()]*)\)/.exec(command);
  if (alt)
    return alt[1]!
      .split('|')
      .flatMap((a) => argvsOf(command.slice(0, alt.index) + a.trim() + command.slice(alt.index + alt[0].length)));
  // `${…}` may hold spaces; keep it one word before splitting on whitespace.
  const words = command.replace(/\$\{[^}]*\}/g, SCRATCH).match(/'[^']*'|"[^"]*"|\S+/g) ?? [];
  return [words.map((w) => (PLACEHOLDER.test(w) ? SCRATCH : w.replace(/^'(.*)'$/, '$1')))];
}

class Parsed extends Error {}

/** How the real parser takes `argv`: `'ok'` when it reaches a command's action, else the parser's code. */
async function parse(argv: readonly string[]): Promise<string> {
  const program = buildProgram();
  const quiet = (c: Command) => {
    c.configureOutput({ writeOut: () => {}, writeErr: () => {}, outputError: () => {} });
    c.commands.forEach(quiet);
  };
  quiet(program);
  program.hook('preAction', () => {
    throw new Parsed();
  });
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return 'no action';
  } catch (e) {
    // `loopx … --help` prints help and exits 0 in main().
    if (e instanceof Parsed || (e instanceof CommanderError && e.code === 'commander.helpDisplayed')) return 'ok';
    if (e instanceof CommanderError) return e.code;
    throw e;
  }
}

/** The word after a mention `loopx <command path>` in prose (the path follows the real command tree), or undefined when it is not a mention. */
function wordAfterMention(words: readonly string[]): string | undefined {
  let cmd: Command | undefined = buildProgram();
  let i = 0;
  for (; i < words.length; i++) {
    const sub: Command | undefined = cmd.commands.find((c) => c.name() === words[i]!.replace(/[,;.)`]+$/, ''));
    if (!sub) break;
    cmd = sub;
    if (sub.name() !== words[i]) return ''; // punctuation ends the mention
  }
  return i === 0 ? undefined : (words[i] ?? '');
}

describe('next actions and hints', () => {
  const texts = literalsOf(join(REPO, 'src'));
  const commands = texts.filter((t) => t.text.includes(COMMAND_MARK) && t.text !== COMMAND_MARK);

  it("every command a next action or hint names parses as printed, with the invocation's --root and --authority-dir carried", async () => {
    // A floor, so a scanner that finds nothing cannot pass.
    expect(commands.length).toBeGreaterThanOrEqual(30);
    const root = tempRoot();
    const flags = { root, authorityDir: join(root, '..', 'authority dir') };
    const refused: string[] = [];
    // A `loopx cluster …` command is only ever printed by an invocation on a cluster, which carries its --cluster (the next test).
    for (const t of commands.filter((c) => !c.text.includes(`${COMMAND_MARK}cluster `))) {
      const printed = carryGlobals(t.text, flags);
      // A command that names its own --root (a new root to create) keeps it; every other one gets the invocation's.
      if (!/ --root (<|\$\{)/.test(t.text)) expect(printed, t.at).toContain(`--root ${rel(root)}`);
      for (const argv of argvsOf(printed.slice(printed.indexOf(COMMAND_MARK) + ': loopx '.length))) {
        const outcome = await parse(argv);
        if (outcome !== 'ok') refused.push(`${t.at}: ${outcome}: loopx ${argv.join(' ')}`);
      }
    }
    expect(refused).toEqual([]);
  });

  it("on a cluster, every command a next action or hint names that takes --cluster gets the invocation's --cluster and --cluster-schema (not --root) and parses as printed", async () => {
    const flags = { root: tempRoot(), cluster: 'env:LOOPX_CLUSTER_URL', clusterSchema: 'team_a' };
    const clustered = commands.filter((t) => CLUSTER_CARRYING.test(t.text.slice(t.text.indexOf(COMMAND_MARK) + 2)));
    // A floor: the run commands' own refusals and hints, and the cluster commands'.
    expect(clustered.length).toBeGreaterThanOrEqual(8);
    const refused: string[] = [];
    for (const t of clustered) {
      const printed = carryGlobals(t.text, flags);
      expect(printed, t.at).toMatch(/ --cluster \S+ --cluster-schema team_a|--cluster-schema \$\{/);
      expect(printed, t.at).not.toContain(' --root ');
      for (const argv of argvsOf(printed.slice(printed.indexOf(COMMAND_MARK) + ': loopx '.length))) {
        const outcome = await parse(argv);
        if (outcome !== 'ok') refused.push(`${t.at}: ${outcome}: loopx ${argv.join(' ')}`);
      }
    }
    expect(refused).toEqual([]);
  });

  it('a command quoted in prose parses as printed, and one merely mentioned takes no arguments (a command with arguments uses the `what to do: loopx …` form)', async () => {
    const prose: string[] = [];
    for (const t of texts) {
      for (const m of t.text.matchAll(/(?<=^|[^:] |[`(])loopx (?=\S)/g)) {
        const rest = t.text.slice(m.index + m[0].length);
        const quote = t.text[m.index - 1];
        if ((quote === '`' || quote === '(') && TYPED_ELSEWHERE[t.text] === undefined) {
          const end = rest.indexOf(quote === '`' ? '`' : ')');
          const quoted = end < 0 ? rest : rest.slice(0, end);
          for (const argv of argvsOf(quoted)) {
            const outcome = await parse(argv);
            if (outcome !== 'ok') prose.push(`${t.at}: ${outcome}: ${t.text}`);
          }
          continue;
        }
        // A flag or a placeholder right after the command's path is an argument.
        const next = wordAfterMention(rest.split(' '));
        if (next && (next.startsWith('-') || PLACEHOLDER.test(next.replace(/[,;.)`]+$/, ''))))
          prose.push(`${t.at}: ${t.text}`);
      }
    }
    expect(prose).toEqual([]);
  });

  it("the walker's own rules: placeholders become scratch values and each alternative is tried", async () => {
    expect(argvsOf("run resolve ${runId} <call-id> (--committed RESULT | --absent | --abandon) --root '/a b'")).toEqual(
      [
        ['run', 'resolve', '1', '1', '--committed', '1', '--root', '/a b'],
        ['run', 'resolve', '1', '1', '--absent', '--root', '/a b'],
        ['run', 'resolve', '1', '1', '--abandon', '--root', '/a b'],
      ],
    );
    expect(await parse(['run', 'list', '--root', 'x'])).toBe('ok');
    expect(await parse(['run', 'show'])).toBe('commander.missingArgument');
    expect(await parse(['todo', 'list'])).toBe('commander.missingMandatoryOptionValue');
    expect(await parse(['run', 'list', '--nope'])).toBe('commander.unknownOption');
  });
});

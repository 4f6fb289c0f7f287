/**
 * Each refusal code is built in one place in src/ — one kind (so one exit code and one HTTP
 * status), one message shape and one next action — and every other place that refuses with it
 * calls that place (CONVENTIONS.md: "define each code once"). The places are found statically,
 * with the type checker, so a new refusal cannot escape:
 *
 *   - `new LoopxError(kind, code, …)` and `new <subclass of LoopxError>(kind, code, …)` build a
 *     refusal; so does every call of a function that hands one of its own parameters on as the
 *     code (`rejected(code, …)` in core/errors.ts, `memberRefusal(code, …)`): such a function
 *     passes the code through, and its callers are the places — unless that parameter is typed
 *     as a closed set of codes (a union of literals, `SnapshotErrorCode`): then the function is
 *     the one place for each code of the set, since it alone decides their kind and next action;
 *   - a code is read from its type: a literal, a constant (`ENVELOPE_ERRORS.oversized`) or a
 *     closed set (`CAPACITY_CODES[limit]`, one place for each code of the table) count alike;
 *   - a code whose type is an open `string` outside such a function cannot be checked, and must
 *     be listed in PASSED_ON with the reason it is not a new refusal.
 */
import { join, relative } from 'node:path';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { REPO } from '../support/cli.js';

/**
 * Codes two places raise for different situations, each with the next action its own situation
 * needs; kept apart on purpose (a separate code each would be the cleaner fix, and a change of a
 * documented code). Every other code is built once.
 */
const DISTINCT: Readonly<Record<string, string>> = {
  // Starting a run under an id the run authority already knows (any root of this user) is fixed by
  // a new id; importing a run this root has already seen is fixed by importing into another root.
  run_known: 'engine start (a new run id) and engine import (another root)',
  // An audit named by its destination (`backup-state audit show <destination>`) and one named by
  // its recovery id over HTTP (`GET /api/audits/:id`) are found, and listed, differently.
  audit_not_found: 'recovery showAudit (a destination path) and the daemon (a recovery id)',
};

/** Places whose code is an open string that was built, once, somewhere else. */
const PASSED_ON: Readonly<Record<string, string>> = {
  // A refusal another process built in its own place (the verify child, the daemon's repository
  // child), raised again from its JSON answer with its kind and next action.
  'src/core/errors.ts refusalFromJson': 'a refusal of another loopx process, re-raised from its JSON answer',
  // The backup's capture thread: a refusal an owner or the set capture raised on that thread,
  // raised again on the main thread from its structured-clone form, with its kind and next action.
  'src/backup/capture-thread.ts deserializeError': 'a refusal of the capture thread, re-raised on the main thread',
  // A recovery's refusal over HTTP: the same code and message, its next action given as a route.
  'src/daemon/adoptions.ts pathFree':
    'a refusal of the recovery coordinator, its next action named by route instead of path',
  // The apply's refusal of the digest a daemon served: the same code, the daemon's words for what changed and what goes on.
  'src/daemon/adoptions.ts changedSinceServed':
    'a refusal of the recovery coordinator, said of the preview this daemon served',
  // A repository's refusal over HTTP: the same code, the repository named as the operator typed it, its next action by route.
  'src/daemon/repository-input.ts publicRefusal':
    'a refusal of the repository layer, naming the repository as the operator typed it',
};

function scan(): { places: Map<string, string[]>; open: string[] } {
  const config = ts.getParsedCommandLineOfConfigFile(
    join(REPO, 'tsconfig.json'),
    {},
    { ...ts.sys, onUnRecoverableConfigFileDiagnostic: () => {} },
  );
  if (!config) throw new Error('tsconfig.json did not parse');
  const src = join(REPO, 'src') + '/';
  const inScope = (f: string) => f.startsWith(src) && !f.includes('/gen/');
  const program = ts.createProgram({ rootNames: config.fileNames.filter(inScope), options: config.options });
  const checker = program.getTypeChecker();
  const files = program.getSourceFiles().filter((sf) => inScope(sf.fileName));

  const base = (s: ts.Symbol): ts.Symbol => (s.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(s) : s);
  const superclassOf = (c: ts.ClassDeclaration): ts.ClassDeclaration | undefined => {
    const ext = c.heritageClauses?.find((h) => h.token === ts.SyntaxKind.ExtendsKeyword)?.types[0];
    const sym = ext ? checker.getSymbolAtLocation(ext.expression) : undefined;
    const decl = sym ? base(sym).valueDeclaration : undefined;
    return decl && ts.isClassDeclaration(decl) ? decl : undefined;
  };
  const isLoopxErrorClass = (decl: ts.ClassDeclaration): boolean => {
    for (let c: ts.ClassDeclaration | undefined = decl; c; c = superclassOf(c)) {
      if (c.name?.text === 'LoopxError' && c.getSourceFile().fileName === join(src, 'core/errors.ts')) return true;
    }
    return false;
  };
  /** Index of the `code` parameter of a LoopxError class (its own constructor or the nearest inherited one). */
  const codeIndexOfClass = (decl: ts.ClassDeclaration): number => {
    for (let c: ts.ClassDeclaration | undefined = decl; c; c = superclassOf(c)) {
      const ctor = c.members.find(ts.isConstructorDeclaration);
      if (ctor) return ctor.parameters.findIndex((p) => ts.isIdentifier(p.name) && p.name.text === 'code');
    }
    return -1;
  };

  /** Functions that pass a parameter on as the code: their symbol → that parameter's index. */
  const forwarders = new Map<ts.Symbol, number>();
  const places = new Map<string, string[]>();
  const open: string[] = [];

  const functionOf = (n: ts.Node): ts.SignatureDeclaration | undefined => {
    for (let p = n.parent; p; p = p.parent) if (ts.isFunctionLike(p)) return p;
    return undefined;
  };
  const symbolOfFunction = (f: ts.SignatureDeclaration): ts.Symbol | undefined => {
    const named =
      f.name ??
      (ts.isVariableDeclaration(f.parent) || ts.isPropertyAssignment(f.parent) || ts.isPropertyDeclaration(f.parent)
        ? f.parent.name
        : undefined);
    return named ? checker.getSymbolAtLocation(named) : undefined;
  };
  const nameOf = (f: ts.SignatureDeclaration | undefined): string => {
    if (!f) return '(module)';
    const sym = symbolOfFunction(f);
    return sym ? sym.getName() : '(function)';
  };
  const literalCodes = (t: ts.Type): string[] | undefined => {
    const parts = t.isUnion() ? t.types : [t];
    return parts.every((p) => p.isStringLiteral()) ? parts.map((p) => (p as ts.StringLiteralType).value) : undefined;
  };

  /** The code argument of `call` when it builds a refusal, else undefined. */
  const codeArgument = (call: ts.CallExpression | ts.NewExpression): ts.Expression | undefined => {
    const sym = checker.getSymbolAtLocation(call.expression);
    if (!sym) return undefined;
    const target = base(sym);
    if (ts.isNewExpression(call)) {
      const decl = target.valueDeclaration;
      if (!decl || !ts.isClassDeclaration(decl) || !isLoopxErrorClass(decl)) return undefined;
      return call.arguments?.[codeIndexOfClass(decl)];
    }
    const index = forwarders.get(target);
    return index === undefined ? undefined : call.arguments[index];
  };

  // Find the forwarders first (to a fixed point: a forwarder may call another), then the places.
  const calls: (ts.CallExpression | ts.NewExpression)[] = [];
  for (const sf of files) {
    const visit = (n: ts.Node): void => {
      if (ts.isCallExpression(n) || ts.isNewExpression(n)) calls.push(n);
      ts.forEachChild(n, visit);
    };
    visit(sf);
  }
  for (let grew = true; grew;) {
    grew = false;
    for (const call of calls) {
      const arg = codeArgument(call);
      if (!arg || !ts.isIdentifier(arg)) continue;
      const f = functionOf(call);
      const param = f?.parameters.findIndex((p) => ts.isIdentifier(p.name) && p.name.text === arg.text) ?? -1;
      if (!f || param < 0 || literalCodes(checker.getTypeAtLocation(f.parameters[param]!)) !== undefined) continue;
      const sym = symbolOfFunction(f);
      if (sym && !forwarders.has(sym)) {
        forwarders.set(sym, param);
        grew = true;
      }
    }
  }
  for (const call of calls) {
    const arg = codeArgument(call);
    if (!arg) continue;
    const f = functionOf(call);
    const sym = f && symbolOfFunction(f);
    if (
      sym &&
      forwarders.has(sym) &&
      ts.isIdentifier(arg) &&
      f.parameters[forwarders.get(sym)!]?.name.getText() === arg.text
    )
      continue;
    const sf = call.getSourceFile();
    const at = `${relative(REPO, sf.fileName)}:${sf.getLineAndCharacterOfPosition(call.getStart()).line + 1}`;
    const codes = literalCodes(checker.getTypeAtLocation(arg));
    if (!codes) {
      const key = `${relative(REPO, sf.fileName)} ${nameOf(f)}`;
      if (PASSED_ON[key] === undefined) open.push(`${at} (${key}): ${arg.getText(sf)}`);
      continue;
    }
    for (const code of codes) places.set(code, [...(places.get(code) ?? []), at]);
  }
  return { places, open };
}

describe('refusal codes', () => {
  const { places, open } = scan();

  it('each refusal code is built in one place in src/ (one kind, one message shape, one next action); other places call it', () => {
    // A floor, so a scanner that finds nothing cannot pass.
    expect(places.size).toBeGreaterThanOrEqual(250);
    const twice = [...places]
      .filter(([code, at]) => at.length > (DISTINCT[code] === undefined ? 1 : 2))
      .map(([code, at]) => `${code}: ${at.join(', ')}`);
    expect(twice).toEqual([]);
  });

  it('each code kept apart on purpose is still built in exactly two places', () => {
    for (const code of Object.keys(DISTINCT)) expect(places.get(code), code).toHaveLength(2);
  });

  it('every refusal has a code the scan can read (a literal, a constant or a closed set), or is listed as passed on', () => {
    expect(open).toEqual([]);
  });
});

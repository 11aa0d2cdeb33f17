/**
 * One CEL expression of the claim rules (docs/claims.md), compiled once when the configuration
 * loads and evaluated at each login with a bounded cost. Built on @bufbuild/cel (docs/decisions.md),
 * which parses and evaluates but neither type-checks fully nor counts cost, so this module adds both:
 *
 * - at compile time, a reference to anything but `claims`, `user` and a macro's variable, a call of
 *   a function CEL does not have, and a result whose type is known and wrong for the key are
 *   problems (what the library's planner would only find at run time);
 * - every evaluation is bounded in cost: ./cel-cost.ts rewrites the tree so that comprehension
 *   elements, the operands of every call and `replace`'s result are charged to one budget.
 */
import { celEnv, CelScalar, isCelError, mapType, parse, plan, type CelValue } from '@bufbuild/cel';
import { costedFunctions, COST_BOUND_MESSAGE, instrument, MAX_COST, type Budget } from './cel-cost.js';

/** An expression longer than this is a configuration problem (the rest of the bound rests on it). */
export const MAX_EXPRESSION_LENGTH = 4_096;
/** Comprehensions nested deeper than this are refused at compile time. */
export const MAX_COMPREHENSION_DEPTH = 3;

const VARIABLES = ['claims', 'user'] as const;

/** What a key needs its expression to give. */
export type Wanted = 'bool' | 'string' | 'strings';

/** The statically known type of a node: 'dyn' when it depends on the input. */
type Known = 'bool' | 'string' | 'int' | 'uint' | 'double' | 'bytes' | 'null' | 'list' | 'map' | 'dyn';

export interface CelProgram {
  readonly expression: string;
  /** The value, or an Error whose message says why (CEL's own message, or the bound reached). */
  evaluate(bindings: { readonly claims: unknown; readonly user: unknown }): CelValue | Error;
}

export type Compiled = { readonly ok: true; readonly program: CelProgram } | { readonly ok: false; readonly message: string };

/** Compiles `expression` for a key that needs `wanted`; the message is CEL's (or the bound's) when it cannot. */
export function compileCel(expression: string, wanted: Wanted): Compiled {
  if (expression.trim() === '') return { ok: false, message: 'must not be empty' };
  if (expression.length > MAX_EXPRESSION_LENGTH) return { ok: false, message: `is longer than ${MAX_EXPRESSION_LENGTH} characters` };
  let parsed: ReturnType<typeof parse>;
  try {
    parsed = parse(expression);
  } catch (err: unknown) {
    return { ok: false, message: `does not compile: ${messageOf(err)}` };
  }
  const budget: Budget = { left: MAX_COST };
  const env = environment(budget);
  const problem = checkTree(parsed.expr, env.funcs, new Set(VARIABLES), 0);
  if (problem !== undefined) return { ok: false, message: `does not compile: ${problem}` };
  const type = typeOf(parsed.expr, new Map());
  if (!fits(type, wanted)) return { ok: false, message: `must give ${WANTED_WORDS[wanted]}, but gives ${article(type)}` };
  instrument(parsed.expr);
  let run: (bindings: never) => unknown;
  try {
    run = plan(env, parsed) as (bindings: never) => unknown;
  } catch (err: unknown) {
    return { ok: false, message: `does not compile: ${messageOf(err)}` };
  }
  return {
    ok: true,
    program: {
      expression,
      evaluate(bindings) {
        budget.left = MAX_COST;
        // The library makes an Error for each failed step; without stacks they cost little (restored below: evaluation is synchronous).
        const stackLimit = Error.stackTraceLimit;
        Error.stackTraceLimit = 0;
        try {
          const value = run(bindings as never) as CelValue;
          // CEL's `||`, `&&` and `exists` absorb an error when the other side decides: a value
          // made after the bound was reached is refused all the same (fail closed).
          if (budget.left < 0) return new Error(COST_BOUND_MESSAGE);
          return isCelError(value) ? new Error(value.message) : value;
        } catch (err: unknown) {
          // A function that threw (the bound) or the engine's own limit (a stack overflow): refused either way.
          return new Error(messageOf(err));
        } finally {
          Error.stackTraceLimit = stackLimit;
        }
      },
    },
  };
}

const WANTED_WORDS: Record<Wanted, string> = { bool: 'true or false', string: 'a string', strings: 'a string or a list of strings' };

function article(type: Known): string {
  const words: Record<Known, string> = {
    bool: 'true or false', string: 'a string', int: 'an int', uint: 'a uint', double: 'a double', bytes: 'bytes', null: 'null', list: 'a list', map: 'a map', dyn: 'a value',
  };
  return words[type];
}

function fits(type: Known, wanted: Wanted): boolean {
  if (type === 'dyn') return true;
  if (wanted === 'strings') return type === 'string' || type === 'list';
  return type === wanted;
}

function environment(budget: Budget) {
  return celEnv({ variables: { claims: mapType(CelScalar.STRING, CelScalar.DYN), user: mapType(CelScalar.STRING, CelScalar.DYN) }, funcs: costedFunctions(budget) });
}

// The parsed tree is protobuf-es messages; these views name only the fields read here.
interface Node { id: bigint; exprKind: Kind }
type Kind =
  | { case: 'constExpr'; value: { constantKind: { case: string | undefined } } }
  | { case: 'identExpr'; value: { name: string } }
  | { case: 'selectExpr'; value: { operand?: Node; field: string; testOnly: boolean } }
  | { case: 'callExpr'; value: { target?: Node; function: string; args: Node[] } }
  | { case: 'listExpr'; value: { elements: Node[] } }
  | { case: 'structExpr'; value: { messageName: string; entries: { keyKind: { case: string | undefined; value?: unknown }; value?: Node }[] } }
  | { case: 'comprehensionExpr'; value: Comprehension }
  | { case: undefined; value?: undefined };
interface Comprehension { iterVar: string; iterRange?: Node; accuVar: string; accuInit?: Node; loopCondition?: Node; loopStep?: Node; result?: Node }

const asNode = (expr: unknown): Node => expr as Node;

/** Operators and macros the parser writes as calls, which the function table does not list by these names. */
const OPERATORS = new Set(['_&&_', '_||_', '_?_:_', '_[_]', '_[?_]', '_?._', '@not_strictly_false', '__not_strictly_false__']);

/** The first problem of the tree: an unknown name, an unknown function, comprehensions nested too deep, a message type. */
function checkTree(expr: unknown, funcs: { find(name: string): unknown }, scope: ReadonlySet<string>, depth: number): string | undefined {
  const node = asNode(expr);
  const kind = node.exprKind;
  const child = (e: unknown, s: ReadonlySet<string> = scope, d = depth) => (e === undefined ? undefined : checkTree(e, funcs, s, d));
  switch (kind.case) {
    case 'identExpr':
      return scope.has(kind.value.name) ? undefined : `undeclared reference to '${kind.value.name}' (only claims and user are defined)`;
    case 'selectExpr':
      return child(kind.value.operand);
    case 'callExpr': {
      const name = kind.value.function;
      if (!OPERATORS.has(name) && funcs.find(name) === undefined) return `found no function '${name}'`;
      return child(kind.value.target) ?? firstOf(kind.value.args.map((a) => () => child(a)));
    }
    case 'listExpr':
      return firstOf(kind.value.elements.map((e) => () => child(e)));
    case 'structExpr':
      if (kind.value.messageName !== '') return `no message types are defined (found '${kind.value.messageName}')`;
      return firstOf(kind.value.entries.map((e) => () => (e.keyKind.case === 'mapKey' ? child(e.keyKind.value) : undefined) ?? child(e.value)));
    case 'comprehensionExpr': {
      const c = kind.value;
      if (depth + 1 > MAX_COMPREHENSION_DEPTH) return `comprehensions are nested deeper than ${MAX_COMPREHENSION_DEPTH}`;
      const inner = new Set([...scope, c.iterVar, c.accuVar]);
      return child(c.iterRange) ?? child(c.accuInit) ?? child(c.loopCondition, inner, depth + 1) ?? child(c.loopStep, inner, depth + 1) ?? child(c.result, inner, depth + 1);
    }
    default:
      return undefined;
  }
}

function firstOf(checks: readonly (() => string | undefined)[]): string | undefined {
  for (const check of checks) {
    const problem = check();
    if (problem !== undefined) return problem;
  }
  return undefined;
}

const BOOL_FUNCTIONS = new Set([
  '_==_', '_!=_', '_<_', '_<=_', '_>_', '_>=_', '_&&_', '_||_', '!_', '@in', 'startsWith', 'endsWith', 'contains', 'matches', 'has', '@not_strictly_false', 'bool',
]);
const STRING_FUNCTIONS = new Set(['string', 'lowerAscii', 'upperAscii', 'trim', 'replace', 'substring', 'join', 'charAt', 'format', 'strings.quote']);
const INT_FUNCTIONS = new Set(['size', 'int', 'indexOf', 'lastIndexOf']);

/** What a node gives when the tree alone tells; 'dyn' when the input decides. */
function typeOf(expr: unknown, vars: ReadonlyMap<string, Known>): Known {
  const kind = asNode(expr).exprKind;
  switch (kind.case) {
    case 'constExpr':
      return constType(kind.value.constantKind.case);
    case 'identExpr':
      return vars.get(kind.value.name) ?? (kind.value.name === 'claims' || kind.value.name === 'user' ? 'map' : 'dyn');
    case 'selectExpr':
      return kind.value.testOnly ? 'bool' : 'dyn';
    case 'listExpr':
      return 'list';
    case 'structExpr':
      return 'map';
    case 'callExpr':
      return callType(kind.value, vars);
    case 'comprehensionExpr': {
      const c = kind.value;
      const accu = c.accuInit === undefined ? 'dyn' : typeOf(c.accuInit, vars);
      return c.result === undefined ? 'dyn' : typeOf(c.result, new Map([...vars, [c.accuVar, accu], [c.iterVar, 'dyn']]));
    }
    default:
      return 'dyn';
  }
}

function callType(call: { target?: Node; function: string; args: Node[] }, vars: ReadonlyMap<string, Known>): Known {
  const name = call.function;
  if (BOOL_FUNCTIONS.has(name)) return 'bool';
  if (STRING_FUNCTIONS.has(name)) return 'string';
  if (INT_FUNCTIONS.has(name)) return 'int';
  if (name === 'split') return 'list';
  if (name === '_+_' || name === '_?_:_') {
    const operands = name === '_+_' ? call.args : call.args.slice(1);
    const types = operands.map((a) => typeOf(a, vars));
    const first = types[0] ?? 'dyn';
    return types.every((t) => t === first) ? first : 'dyn';
  }
  return 'dyn';
}

function constType(kind: string | undefined): Known {
  switch (kind) {
    case 'boolValue': return 'bool';
    case 'stringValue': return 'string';
    case 'int64Value': return 'int';
    case 'uint64Value': return 'uint';
    case 'doubleValue': return 'double';
    case 'bytesValue': return 'bytes';
    case 'nullValue': return 'null';
    default: return 'dyn';
  }
}

function messageOf(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

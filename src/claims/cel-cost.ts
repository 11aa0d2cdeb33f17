/**
 * The cost bound of one evaluation of a claim rule (./cel-program.ts). @bufbuild/cel counts no
 * cost, so the parsed tree is rewritten before it is planned, and every unit of work is charged
 * to one budget per evaluation:
 *
 * - each element of a comprehension's range (`all`, `exists`, `exists_one`, `map`, `filter`,
 *   nested ones each time) costs ITERATION_COST;
 * - each operand of a call (a function, a method, an operator such as `in` or `==`) costs 1 plus
 *   its size: a string's characters, a list's or map's elements and what they hold. So `in` on a
 *   list inside a comprehension, and string functions (all linear in their operands), are paid for;
 * - once the budget is spent, every comprehension's loop ends at its next element;
 * - `matches` costs MATCHES_COST more, and more per character of its pattern: the library
 *   compiles the pattern (RE2) at each call;
 * - `replace` is replaced: the strings extension's is quadratic in the string (it rebuilds the
 *   string at each match); this one is linear and charges its result before building it;
 * - a macro's accumulation (`accu + [x]` of `map` and `filter`) appends to one array: the
 *   library's list concatenation nests a view per element, which made reading a mapped list
 *   quadratic and, past some thousands of elements, overflowed the stack (issue 54).
 *
 * Rejected: a wall-clock limit, which a busy process would trip at random.
 */
import { celFunc, celList, celMethod, CelScalar, isCelList, isCelMap, type CelValue } from '@bufbuild/cel';
import { strings } from '@bufbuild/cel/ext';

/**
 * Units of work one evaluation may do. A unit is about a nanosecond: a character or an element
 * an operation reads; a comprehension element (the library's step, about a microsecond) costs
 * ITERATION_COST. So the worst case is a few milliseconds.
 */
export const MAX_COST = 4_000_000;
/** What one comprehension element costs. */
export const ITERATION_COST = 500;
/** What each element of a list or map an operation reads costs (`in` compares each with the library's generic equality). */
export const ELEMENT_COST = 50;

export const COST_BOUND_MESSAGE = `the expression's cost bound was reached (${MAX_COST} units: ${ITERATION_COST} a comprehension element, ${ELEMENT_COST} an element and 1 a character an operation reads)`;

/** Counted per evaluation; evaluation is synchronous, so one budget per program is never shared by two. */
export interface Budget { left: number }

const RANGE_FUNCTION = 'svc.countedRange';
const OPERAND_FUNCTION = 'svc.countedOperand';
const APPEND_FUNCTION = 'svc.append';
const MATCHES_FUNCTION = 'svc.countedPattern';
const LIVE_FUNCTION = 'svc.withinBound';
/** Calls whose operands are not charged: they only choose (their operands are charged where used) or are ours. */
const UNCHARGED = new Set(['_&&_', '_||_', '_?_:_', '@not_strictly_false', '__not_strictly_false__', RANGE_FUNCTION, OPERAND_FUNCTION, APPEND_FUNCTION, MATCHES_FUNCTION, LIVE_FUNCTION]);

/** Thrown at every charge once the budget is spent: one object, so the steps the library still takes after it cost little. */
const BOUND_REACHED = new Error(COST_BOUND_MESSAGE);

function spend(budget: Budget, units: number): void {
  budget.left -= units;
  if (budget.left < 0) throw BOUND_REACHED;
}

/** What each character of `replace`'s result costs. */
export const REPLACE_COST_PER_CHARACTER = 4;

/** What one `matches` costs beyond its operands: RE2's compilation of the pattern, at each call. */
export const MATCHES_COST = 10_000;
/** And per character of the pattern. */
export const MATCHES_COST_PER_CHARACTER = 2_000;

/** Charges 1 plus the size of `value`, walking lists and maps (the walk costs what it charges). */
function charge(budget: Budget, value: unknown, top: boolean): void {
  spend(budget, 1);
  if (typeof value === 'string') {
    if (top) spend(budget, value.length);
  } else if (isCelList(value)) {
    for (const item of value) {
      spend(budget, ELEMENT_COST);
      charge(budget, item, false);
    }
  } else if (isCelMap(value)) {
    for (const [key, item] of value.entries()) {
      spend(budget, ELEMENT_COST);
      charge(budget, key, false);
      charge(budget, item, false);
    }
  }
}

/** Lists built by svc.append, with the array each owns: appending to one pushes in place. */
type Owned = WeakMap<object, unknown[]>;

/** The functions the rewritten tree calls, and the strings extension with a linear `replace`, charging `budget`. */
export function costedFunctions(budget: Budget) {
  const owned: Owned = new WeakMap();
  const counted = celFunc(RANGE_FUNCTION, [CelScalar.DYN], CelScalar.DYN, (range) => {
    const size = isCelList(range) || isCelMap(range) ? range.size : 0;
    spend(budget, size * ITERATION_COST);
    return range as never;
  });
  const operand = celFunc(OPERAND_FUNCTION, [CelScalar.DYN], CelScalar.DYN, (value) => {
    charge(budget, value, true);
    return value as never;
  });
  const append = celFunc(APPEND_FUNCTION, [CelScalar.DYN, CelScalar.DYN], CelScalar.DYN, (accu, tail) => {
    if (!isCelList(accu) || !isCelList(tail)) throw new Error('a comprehension accumulated something other than a list');
    // The accumulator is only ever read by the step that replaces it, so extending its array is safe;
    // the first step copies the initial list, which the planned tree shares between evaluations.
    const array = owned.get(accu) ?? [...accu];
    for (const item of tail) array.push(item);
    const next = celList(array as CelValue[]);
    owned.set(next, array);
    return next as never;
  });
  // The library compiles the pattern at each call (RE2, linear in the input, but costly to compile).
  const matchesCost = celFunc(MATCHES_FUNCTION, [CelScalar.DYN], CelScalar.DYN, (pattern) => {
    spend(budget, MATCHES_COST + (typeof pattern === 'string' ? pattern.length * MATCHES_COST_PER_CHARACTER : 0));
    return pattern as never;
  });
  // A comprehension's loop condition: an error there ends the loop, which CEL's own conditions
  // (`exists` goes on past an error) would not, once the budget is spent.
  const live = celFunc(LIVE_FUNCTION, [CelScalar.DYN], CelScalar.DYN, (condition) => {
    if (budget.left < 0) throw BOUND_REACHED;
    return condition as never;
  });
  const replace = (self: string, from: string, to: string, limit?: bigint) => linearReplace(budget, self, from, to, limit);
  const replaces = [
    celMethod('replace', CelScalar.STRING, [CelScalar.STRING, CelScalar.STRING], CelScalar.STRING, function (this: string, from: string, to: string) { return replace(this, from, to); }),
    celMethod('replace', CelScalar.STRING, [CelScalar.STRING, CelScalar.STRING, CelScalar.INT], CelScalar.STRING, function (this: string, from: string, to: string, n: bigint) { return replace(this, from, to, n); }),
  ];
  return [...strings.filter((f) => f.name !== 'replace'), ...replaces, counted, operand, append, matchesCost, live];
}

/** The strings extension's `replace` (the first `limit` matches, all when absent or negative), in linear time, its result charged first. */
function linearReplace(budget: Budget, self: string, from: string, to: string, limit: bigint | undefined): string {
  const max = limit === undefined || limit < 0n ? Infinity : Number(limit);
  const starts: number[] = [];
  if (from === '') {
    // An empty `from` matches before each character and at the end, as in cel-go (Go's strings.Replace).
    for (let at = 0; at <= self.length && starts.length < max; at++) starts.push(at);
  } else {
    for (let at = self.indexOf(from); at !== -1 && starts.length < max; at = self.indexOf(from, at + from.length)) starts.push(at);
  }
  spend(budget, starts.length);
  // Making a string costs more than reading one: its characters are charged REPLACE_COST_PER_CHARACTER each.
  spend(budget, (self.length + starts.length * to.length) * REPLACE_COST_PER_CHARACTER);
  const parts: string[] = [];
  let last = 0;
  for (const at of starts) {
    parts.push(self.slice(last, at));
    last = at + from.length;
  }
  parts.push(self.slice(last));
  return parts.join(to);
}

// The parsed tree is protobuf-es messages; these views name only the fields rewritten here.
interface Node { id: bigint; exprKind: Kind }
type Kind =
  | { case: 'identExpr'; value: { name: string } }
  | { case: 'selectExpr'; value: { operand?: Node } }
  | { case: 'callExpr'; value: { target?: Node; function: string; args: Node[] } }
  | { case: 'listExpr'; value: { elements: Node[] } }
  | { case: 'structExpr'; value: { entries: { keyKind: { case: string | undefined; value?: unknown }; value?: Node }[] } }
  | { case: 'comprehensionExpr'; value: { iterRange?: Node; accuVar: string; accuInit?: Node; loopCondition?: Node; loopStep?: Node; result?: Node } }
  | { case: 'constExpr' | undefined; value?: unknown };

const call = (id: bigint, fn: string, args: Node[]): Node => ({ id, exprKind: { case: 'callExpr', value: { function: fn, args } } });
const isIdent = (node: Node | undefined, name: string): boolean => node?.exprKind.case === 'identExpr' && node.exprKind.value.name === name;

/** Rewrites the tree (see the header); `accus` are the accumulators in scope, never charged. */
export function instrument(expr: unknown, accus: ReadonlySet<string> = new Set()): void {
  const node = expr as Node;
  const kind = node.exprKind;
  const wrap = (operand: Node): Node => ([...accus].some((a) => isIdent(operand, a)) ? operand : call(operand.id, OPERAND_FUNCTION, [operand]));
  switch (kind.case) {
    case 'selectExpr':
      if (kind.value.operand !== undefined) instrument(kind.value.operand, accus);
      return;
    case 'callExpr': {
      const c = kind.value;
      if (c.target !== undefined) instrument(c.target, accus);
      c.args.forEach((a) => instrument(a, accus));
      const [first, second] = c.args;
      if (c.function === '_+_' && c.target === undefined && first !== undefined && second?.exprKind.case === 'listExpr' && [...accus].some((a) => isIdent(first, a))) {
        c.function = APPEND_FUNCTION;
        return;
      }
      if (UNCHARGED.has(c.function)) return;
      if (c.target !== undefined) c.target = wrap(c.target);
      c.args = c.args.map(wrap);
      const pattern = c.args.at(-1);
      if (c.function === 'matches' && pattern !== undefined) c.args[c.args.length - 1] = call(pattern.id, MATCHES_FUNCTION, [pattern]);
      return;
    }
    case 'listExpr':
      kind.value.elements.forEach((e) => instrument(e, accus));
      return;
    case 'structExpr':
      for (const entry of kind.value.entries) {
        if (entry.keyKind.case === 'mapKey') instrument(entry.keyKind.value, accus);
        if (entry.value !== undefined) instrument(entry.value, accus);
      }
      return;
    case 'comprehensionExpr': {
      const c = kind.value;
      const inner = new Set([...accus, c.accuVar]);
      if (c.iterRange !== undefined) instrument(c.iterRange, accus);
      if (c.accuInit !== undefined) instrument(c.accuInit, accus);
      for (const part of [c.loopCondition, c.loopStep, c.result]) if (part !== undefined) instrument(part, inner);
      if (c.iterRange !== undefined) c.iterRange = call(c.iterRange.id, RANGE_FUNCTION, [c.iterRange]);
      if (c.loopCondition !== undefined) c.loopCondition = call(c.loopCondition.id, LIVE_FUNCTION, [c.loopCondition]);
      return;
    }
    default:
      return;
  }
}

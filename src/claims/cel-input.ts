/**
 * Claims as CEL reads them: JSON-like values from a token, a directory entry or an assertion
 * turned into CEL's input types (objects into maps, whole numbers into int, others into double),
 * within bounds, so that the input of an evaluation is as bounded as its expression
 * (./cel-program.ts). A value past a bound is refused, not cut: a rule must never decide on part
 * of what the source said.
 */

/** Values (each string, number, list and map counts one) one evaluation's input may hold. */
export const MAX_INPUT_VALUES = 20_000;
/** Lists and maps nested deeper than this are refused. */
export const MAX_INPUT_DEPTH = 16;
/** Characters of the strings of one input, added up. */
export const MAX_INPUT_CHARACTERS = 1_000_000;

export class InputTooLarge extends Error {
  override readonly name = 'InputTooLarge';
}

interface Count { values: number; characters: number }

/** `value` as CEL input; InputTooLarge past a bound. Undefined members of objects are left out. */
export function celInput(value: unknown): unknown {
  return convert(value, { values: 0, characters: 0 }, 0);
}

function convert(value: unknown, count: Count, depth: number): unknown {
  count.values += 1;
  if (count.values > MAX_INPUT_VALUES) throw new InputTooLarge(`the claims hold more than ${MAX_INPUT_VALUES} values`);
  if (depth > MAX_INPUT_DEPTH) throw new InputTooLarge(`the claims nest deeper than ${MAX_INPUT_DEPTH} levels`);
  if (value === null || typeof value === 'boolean') return value;
  if (typeof value === 'string') {
    count.characters += value.length;
    if (count.characters > MAX_INPUT_CHARACTERS) throw new InputTooLarge(`the claims hold more than ${MAX_INPUT_CHARACTERS} characters`);
    return value;
  }
  if (typeof value === 'number') return Number.isSafeInteger(value) ? BigInt(value) : value;
  if (typeof value === 'bigint') return value;
  if (Array.isArray(value)) return value.map((item: unknown) => convert(item, count, depth + 1));
  if (typeof value === 'object') {
    const map = new Map<string, unknown>();
    for (const [key, member] of Object.entries(value)) {
      if (member === undefined) continue;
      count.characters += key.length;
      map.set(key, convert(member, count, depth + 1));
    }
    return map;
  }
  // undefined, functions, symbols: nothing a source sends.
  return null;
}

/**
 * Claims as CEL reads them: JSON-like values from a token, a directory entry or an assertion
 * turned into CEL's input types (objects into maps, whole numbers into int, others into double),
 * within bounds, so that the input of an evaluation is as bounded as its expression
 * (./cel-program.ts). A value past a bound is refused, not cut: a rule must never decide on part
 * of what the source said.
 */

/** Values (each string, number, list and map counts one) one evaluation's input may hold. */
export const MAX_INPUT_VALUES = 10_000;
/** Lists and maps nested deeper than this are refused. */
export const MAX_INPUT_DEPTH = 16;
/** Characters of the strings (and map keys) of one input, added up. */
export const MAX_INPUT_CHARACTERS = 262_144;
/** Characters of one string value (a group name, an email, an attribute's value). */
export const MAX_STRING_LENGTH = 8_192;
/** Elements of one list (the groups of a user, the values of an attribute). */
export const MAX_LIST_LENGTH = 5_000;

export class InputTooLarge extends Error {
  override readonly name = 'InputTooLarge';
}

interface Count { values: number; characters: number }

/** `value` as CEL input; InputTooLarge past a bound, naming the value. Undefined members of objects are left out. */
export function celInput(value: unknown, name = 'claims'): unknown {
  return convert(value, { values: 0, characters: 0 }, 0, name);
}

function convert(value: unknown, count: Count, depth: number, at: string): unknown {
  count.values += 1;
  if (count.values > MAX_INPUT_VALUES) throw new InputTooLarge(`the input holds more than ${MAX_INPUT_VALUES} values (at ${at})`);
  if (depth > MAX_INPUT_DEPTH) throw new InputTooLarge(`the input nests deeper than ${MAX_INPUT_DEPTH} levels (at ${at})`);
  if (value === null || typeof value === 'boolean') return value;
  if (typeof value === 'string') {
    if (value.length > MAX_STRING_LENGTH) throw new InputTooLarge(`${at} is longer than ${MAX_STRING_LENGTH} characters`);
    count.characters += value.length;
    if (count.characters > MAX_INPUT_CHARACTERS) throw new InputTooLarge(`the input holds more than ${MAX_INPUT_CHARACTERS} characters (at ${at})`);
    return value;
  }
  if (typeof value === 'number') return Number.isSafeInteger(value) ? BigInt(value) : value;
  if (typeof value === 'bigint') return value;
  if (Array.isArray(value)) {
    if (value.length > MAX_LIST_LENGTH) throw new InputTooLarge(`${at} holds more than ${MAX_LIST_LENGTH} values`);
    return value.map((item: unknown, i) => convert(item, count, depth + 1, `${at}[${i}]`));
  }
  if (typeof value === 'object') {
    const map = new Map<string, unknown>();
    for (const [key, member] of Object.entries(value)) {
      if (member === undefined) continue;
      if (key.length > MAX_STRING_LENGTH) throw new InputTooLarge(`a key of ${at} is longer than ${MAX_STRING_LENGTH} characters`);
      count.characters += key.length;
      map.set(key, convert(member, count, depth + 1, `${at}.${key}`));
    }
    return map;
  }
  // undefined, functions, symbols: nothing a source sends.
  return null;
}

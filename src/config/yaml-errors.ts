/**
 * A YAML error as a sentence that never carries the source text. Config values are often
 * secrets, and several of the yaml library's messages quote the text they failed on
 * (`Unresolved alias …: <name>`, `Invalid escape sequence <raw>`, `Unresolved tag: <tag>`), so
 * only messages known to be fixed sentences are passed on; the others get a sentence of ours.
 * Rejected: cutting the library message at its first colon (several put source text elsewhere).
 */
import { describePosition, type ValueOrigin, type ValuePosition } from './value-origin.js';

/** Codes whose library messages are fixed text (or name only a YAML construct, never input). */
const FIXED_TEXT_CODES = new Set([
  'ALIAS_PROPS', 'BAD_ALIAS', 'BAD_COLLECTION_TYPE', 'BAD_INDENT', 'BLOCK_AS_IMPLICIT_KEY', 'BLOCK_IN_FLOW',
  'DUPLICATE_KEY', 'IMPOSSIBLE', 'KEY_OVER_1024_CHARS', 'MISSING_CHAR', 'MULTILINE_IMPLICIT_KEY',
  'MULTIPLE_ANCHORS', 'MULTIPLE_DOCS', 'MULTIPLE_TAGS', 'NON_STRING_KEY', 'TAB_AS_INDENT',
]);

/** Our sentence for the codes whose library messages quote the input. */
const OWN_TEXT: Readonly<Record<string, string>> = {
  BAD_DQ_ESCAPE: 'Invalid escape sequence in a double-quoted string',
  BAD_PROP_ORDER: 'Anchors and tags must come after the indicator',
  BAD_SCALAR_START: 'A plain value cannot start with this character',
  TAG_RESOLVE_FAILED: 'A tag cannot be resolved',
  UNEXPECTED_TOKEN: 'Unexpected text',
};

const FIXED_TEXT_ERRORS = ['Excessive alias count indicates a resource exhaustion attack'];

/**
 * The reason, with ` at line L, column C` when the error has a position and `text` is given;
 * with `origin`, the position is the file's (value-origin.ts). Parse with `prettyErrors: false`,
 * so that the message is the library's bare sentence.
 */
export function yamlErrorReason(err: unknown, text?: string, origin?: ValueOrigin): string {
  const at = text === undefined ? undefined : yamlErrorPosition(err, text);
  return `${sentence(err)}${at === undefined ? '' : describePosition(at, origin)}`;
}

function sentence(err: unknown): string {
  if (!(err instanceof Error)) return 'The YAML cannot be read';
  const code = 'code' in err && typeof err.code === 'string' ? err.code : undefined;
  if (code !== undefined) {
    if (FIXED_TEXT_CODES.has(code)) return err.message.split('\n')[0] ?? '';
    return OWN_TEXT[code] ?? `YAML error ${code}`;
  }
  if (FIXED_TEXT_ERRORS.includes(err.message)) return err.message;
  if (err.message.startsWith('Unresolved alias')) return 'An alias names an anchor that is not set before it';
  return 'The YAML cannot be read';
}

/** The error's line and column (1-based) in `text`, when it has a position. */
function yamlErrorPosition(err: unknown, text: string): ValuePosition | undefined {
  if (typeof err !== 'object' || err === null || !('pos' in err) || !Array.isArray(err.pos)) return undefined;
  const offset: unknown = err.pos[0];
  if (typeof offset !== 'number' || offset < 0) return undefined;
  const before = text.slice(0, offset);
  return { line: before.split('\n').length, column: offset - before.lastIndexOf('\n') };
}

/**
 * Where a ConfigMap's data value stands in its file, so that a problem found inside the value
 * (a YAML error in `extension.config: |`) is reported at the file's line, not the value's.
 *
 * A literal block (`|`, `|-`, `|+`) keeps its lines as they are, so a line inside it maps to one
 * file line and its column moves by the block's indentation. Any other scalar may fold lines
 * (plain, quoted, `>`), so only where it starts is known; the message then says both.
 */
import YAML, { type Document, type LineCounter } from 'yaml';

export interface ValueOrigin {
  readonly file: string;
  /** The file line (1-based) on which the value's text starts. */
  readonly line: number;
  /** The file column (1-based) of the value's first character on that line. */
  readonly column: number;
  /** True when lines of the value map one to one to file lines (a literal block). */
  readonly literal: boolean;
}

/** A position inside a value's text, 1-based, as the YAML parser reports it. */
export interface ValuePosition {
  readonly line: number;
  readonly column: number;
}

const origins = new WeakMap<object, Readonly<Record<string, ValueOrigin>>>();

/** Records, beside each parsed document's plain value, where its `data` values stand. */
export function recordDataOrigins(file: string, text: string, doc: Document, value: unknown, lineCounter: LineCounter): void {
  if (typeof value !== 'object' || value === null) return;
  const data = doc.get('data', true);
  if (!YAML.isMap(data)) return;
  const found: Record<string, ValueOrigin> = {};
  for (const pair of data.items) {
    if (!YAML.isScalar(pair.key) || !YAML.isScalar(pair.value) || pair.value.range === undefined || pair.value.range === null) continue;
    const start = lineCounter.linePos(pair.value.range[0]);
    if (pair.value.type === 'BLOCK_LITERAL') {
      // The header line (`|`) comes first; the text starts on the next line, at the block's indentation.
      const lineStart = lineCounter.lineStarts[start.line] ?? text.length;
      const indent = /^ */.exec(text.slice(lineStart))?.[0].length ?? 0;
      found[String(pair.key.value)] = { file, line: start.line + 1, column: indent + 1, literal: true };
    } else {
      const quoted = pair.value.type === 'QUOTE_DOUBLE' || pair.value.type === 'QUOTE_SINGLE' ? 1 : 0;
      found[String(pair.key.value)] = { file, line: start.line, column: start.col + quoted, literal: false };
    }
  }
  origins.set(value, found);
}

/** The origins recorded for a document's plain value, if any. */
export function dataOrigins(value: object): Readonly<Record<string, ValueOrigin>> | undefined {
  return origins.get(value);
}

/** ` at line L, column C` in the file where that is exact, else the value's line and where it starts. */
export function describePosition(position: ValuePosition, origin: ValueOrigin | undefined): string {
  if (origin === undefined) return ` at line ${position.line}, column ${position.column}`;
  if (origin.literal) {
    const line = origin.line + position.line - 1;
    return ` at line ${line}, column ${origin.column + position.column - 1} of ${origin.file} (line ${position.line} of the value)`;
  }
  return ` at line ${position.line}, column ${position.column} of the value, which starts at line ${origin.line}, column ${origin.column} of ${origin.file}`;
}

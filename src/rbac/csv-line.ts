/**
 * Splits one policy line into trimmed fields. A field holding a comma is double-quoted
 * (`"{a,b}"`), and `""` inside quotes is one `"`. Returns an error sentence for an unterminated
 * quote or text glued to a closing quote, so the caller can report the line and drop it.
 */
export type CsvLine = { readonly ok: true; readonly fields: string[] } | { readonly ok: false; readonly error: string };

export function splitCsvLine(line: string): CsvLine {
  const fields: string[] = [];
  let i = 0;
  for (;;) {
    while (line[i] === ' ' || line[i] === '\t') i++;
    if (line[i] === '"') {
      const quoted = readQuoted(line, i + 1);
      if (quoted === undefined) return { ok: false, error: 'unterminated quote' };
      fields.push(quoted.value.trim());
      i = quoted.end;
      while (line[i] === ' ' || line[i] === '\t') i++;
      if (i < line.length && line[i] !== ',') return { ok: false, error: 'text after a closing quote' };
    } else {
      const comma = line.indexOf(',', i);
      const end = comma < 0 ? line.length : comma;
      const value = line.slice(i, end).trim();
      if (value.includes('"')) return { ok: false, error: 'a quote inside an unquoted field' };
      fields.push(value);
      i = end;
    }
    if (i >= line.length) return { ok: true, fields };
    i++; // the comma
  }
}

/** Reads from just after an opening quote; `end` is just after the closing quote. */
function readQuoted(line: string, start: number): { value: string; end: number } | undefined {
  let value = '';
  let i = start;
  while (i < line.length) {
    const close = line.indexOf('"', i);
    if (close < 0) return undefined;
    value += line.slice(i, close);
    if (line[close + 1] === '"') {
      value += '"';
      i = close + 2;
    } else {
      return { value, end: close + 1 };
    }
  }
  return undefined;
}

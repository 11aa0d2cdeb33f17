/**
 * Claim paths and templates of `workload.config`. A path names a claim, or a claim nested in
 * an object claim: segments are separated by `.`, and a dot that belongs to a name is written
 * `\.` (`kubernetes\.io.namespace` is the `namespace` member of the `kubernetes.io` claim). A
 * literal backslash is `\\`. Rejected alternative: trying the longest key that exists
 * (`kubernetes.io.namespace` read as `kubernetes.io` then `namespace`), because a token could
 * then carry a top-level claim spelled like the path and choose which one a rule reads.
 *
 * A template is text with `{{path}}` placeholders (spaces inside the braces are allowed); each
 * is replaced by the claim's value, which must be a string, a number or a boolean.
 */
export type ClaimPath = readonly string[];

/** The segments of a path, or a sentence saying what is wrong with it. */
export function parseClaimPath(text: string): ClaimPath | string {
  const segments: string[] = [];
  let current = '';
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (c === '\\') {
      const next = text[i + 1];
      if (next !== '.' && next !== '\\') return `'\\' must be followed by '.' or '\\' (at character ${i + 1})`;
      current += next;
      i++;
    } else if (c === '.') {
      if (current === '') return 'has an empty segment (a name between two dots; write a dot in a name as \\.)';
      segments.push(current);
      current = '';
    } else current += c;
  }
  if (current === '') return text === '' ? 'is empty' : 'ends with a dot';
  segments.push(current);
  return segments;
}

export function formatClaimPath(path: ClaimPath): string {
  return path.map((s) => s.replaceAll('\\', '\\\\').replaceAll('.', '\\.')).join('.');
}

/** The value at a path of the claims, or undefined when a segment is missing or not an object. */
export function claimAt(claims: Readonly<Record<string, unknown>>, path: ClaimPath): unknown {
  let value: unknown = claims;
  for (const segment of path) {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
    if (!Object.prototype.hasOwnProperty.call(value, segment)) return undefined;
    value = (value as Record<string, unknown>)[segment];
  }
  return value;
}

/** A claim value as text, when it is a scalar; objects, lists and null have none. */
export function scalarText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (typeof value === 'number' && Number.isFinite(value)) return String(value);
  if (typeof value === 'boolean') return String(value);
  return undefined;
}

export type TemplatePart = { readonly text: string } | { readonly path: ClaimPath; readonly source: string };

export interface Template {
  readonly source: string;
  readonly parts: readonly TemplatePart[];
}

const PLACEHOLDER = /\{\{([^{}]*)\}\}/g;

/** A template, or a sentence saying what is wrong with it. */
export function parseTemplate(source: string): Template | string {
  const parts: TemplatePart[] = [];
  let last = 0;
  for (const match of source.matchAll(PLACEHOLDER)) {
    const before = source.slice(last, match.index);
    if (before.includes('{{') || before.includes('}}')) return 'has an unbalanced {{ or }}';
    if (before !== '') parts.push({ text: before });
    const inner = (match[1] ?? '').trim();
    const path = parseClaimPath(inner);
    if (typeof path === 'string') return `placeholder {{${inner}}}: the claim path ${path}`;
    parts.push({ path, source: inner });
    last = match.index + match[0].length;
  }
  const rest = source.slice(last);
  if (rest.includes('{{') || rest.includes('}}')) return 'has an unbalanced {{ or }}';
  if (rest !== '') parts.push({ text: rest });
  return { source, parts };
}

/** The filled template, or the placeholder whose claim is missing or not a scalar. */
export function fillTemplate(template: Template, claims: Readonly<Record<string, unknown>>): { readonly value: string } | { readonly missing: string } {
  let out = '';
  for (const part of template.parts) {
    if ('text' in part) {
      out += part.text;
      continue;
    }
    const text = scalarText(claimAt(claims, part.path));
    if (text === undefined) return { missing: part.source };
    out += text;
  }
  return { value: out };
}

/**
 * Parsing manifest files, and editing one Secret inside a file without reformatting the rest.
 *
 * Operators keep these files in git, so an edit must change only the keys it means to. The
 * edited document goes through the yaml Document API (which keeps comments, key order, quoting
 * and blank lines); every other document in the file is copied as the original bytes, because
 * re-printing them could normalise indentation or comment spacing that nobody asked to change.
 * Rejected: a regex/line edit (breaks on flow maps, quoting, multi-line scalars) and a CST edit
 * (exact, but a lot of code for adding and removing keys).
 */
import YAML, { isMap, isScalar, type Document } from 'yaml';
import type { SecretPatch } from './store.js';
import { yamlErrorReason } from './yaml-errors.js';
import { PART_OF_LABEL, PART_OF_VALUE } from './manifests.js';

/** Plain scalars are folded at 80 columns by default; a base64 value must stay on its line. */
const PRINT_OPTIONS = { lineWidth: 0 } as const;

export type ParsedFile =
  | { readonly ok: true; readonly docs: readonly Document[]; readonly lineCounter: YAML.LineCounter }
  | { readonly ok: false; readonly message: string };

/**
 * Parses every document of a file, or none: one error anywhere rejects the file. The message
 * carries the parser's line and column but never the source text around it, which may be a
 * secret (the pretty error format prints that snippet).
 */
export function parseYamlFile(text: string): ParsedFile {
  const lineCounter = new YAML.LineCounter();
  const docs = YAML.parseAllDocuments(text, { lineCounter, prettyErrors: false });
  for (const doc of docs) {
    const error = doc.errors[0];
    if (error === undefined) continue;
    const { line, col } = lineCounter.linePos(error.pos[0]);
    return { ok: false, message: `YAML does not parse at line ${line}, column ${col}: ${yamlErrorReason(error)}` };
  }
  return { ok: true, docs, lineCounter };
}

/** The plain JS value of each document; an alias bomb or similar fails the file like a parse error. */
export function documentsToJS(docs: readonly Document[]): { ok: true; values: unknown[] } | { ok: false; message: string } {
  try {
    return { ok: true, values: docs.map((doc) => doc.toJS({ maxAliasCount: 100 }) as unknown) };
  } catch (err: unknown) {
    return { ok: false, message: `YAML cannot be read: ${yamlErrorReason(err)}` };
  }
}

export function isSecretNamed(value: unknown, name: string): boolean {
  return isObjectNamed(value, 'Secret', name);
}

function isObjectNamed(value: unknown, kind: 'Secret' | 'ConfigMap', name: string): boolean {
  if (typeof value !== 'object' || value === null) return false;
  const record = value as Record<string, unknown>;
  const metadata = record['metadata'];
  return (
    record['kind'] === kind &&
    typeof metadata === 'object' &&
    metadata !== null &&
    (metadata as Record<string, unknown>)['name'] === name
  );
}

/** Index of the first document in `docs` holding Secret `name`, or -1. */
export function findSecretDoc(docs: readonly Document[], name: string): number {
  return docs.findIndex((doc) => isSecretNamed(doc.toJS({ maxAliasCount: 100 }), name));
}

/** Index of the first document in `docs` holding ConfigMap `name`, or -1. */
export function findConfigMapDoc(docs: readonly Document[], name: string): number {
  return docs.findIndex((doc) => isObjectNamed(doc.toJS({ maxAliasCount: 100 }), 'ConfigMap', name));
}

/** A ConfigMap's `data` as svc reads it (numbers and booleans as their text). */
export function configMapValues(doc: Document): Record<string, string> {
  const js = doc.toJS({ maxAliasCount: 100 }) as Record<string, unknown>;
  return Object.fromEntries(entries(js['data']));
}

/**
 * Applies a patch to a ConfigMap's `data` in place. Values are set as strings: the printer
 * quotes one that would read back as another type (`"false"`), as the loader wants strings.
 */
export function applyConfigMapPatch(doc: Document, patch: SecretPatch): void {
  const set = Object.entries(patch.set ?? {});
  if (set.length > 0) ensureMap(doc, 'data');
  for (const [key, value] of set) doc.setIn(['data', key], value);
  for (const key of patch.delete ?? []) {
    if (hasStringKey(doc, 'data', key)) doc.deleteIn(['data', key]);
  }
}

/** Values as svc reads them: `data` decoded from base64, `stringData` winning. */
export function secretValues(doc: Document): Record<string, string> {
  const js = doc.toJS({ maxAliasCount: 100 }) as Record<string, unknown>;
  const out: Record<string, string> = {};
  for (const [key, value] of entries(js['data'])) out[key] = Buffer.from(value, 'base64').toString('utf8');
  for (const [key, value] of entries(js['stringData'])) out[key] = value;
  return out;
}

function entries(section: unknown): [string, string][] {
  if (typeof section !== 'object' || section === null || Array.isArray(section)) return [];
  return Object.entries(section as Record<string, unknown>)
    .filter(([, v]) => typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean')
    .map(([k, v]) => [k, String(v)]);
}

/**
 * Applies a patch in place: a key that lives in `stringData` is updated there as plain text,
 * any other goes to `data` as base64; a deleted key leaves both.
 */
export function applySecretPatch(doc: Document, patch: SecretPatch): void {
  for (const [key, value] of Object.entries(patch.set ?? {})) {
    if (hasStringKey(doc, 'stringData', key)) {
      doc.setIn(['stringData', key], value);
      continue;
    }
    ensureMap(doc, 'data');
    doc.setIn(['data', key], Buffer.from(value, 'utf8').toString('base64'));
  }
  for (const key of patch.delete ?? []) {
    for (const section of ['data', 'stringData']) {
      if (hasStringKey(doc, section, key)) doc.deleteIn([section, key]);
    }
  }
}

function hasStringKey(doc: Document, section: string, key: string): boolean {
  return isMap(doc.get(section, true)) && doc.hasIn([section, key]);
}

/** `data:` with no value parses as null; setIn needs a map there. */
function ensureMap(doc: Document, section: string): void {
  const node = doc.get(section, true);
  if (isMap(node)) return;
  if (node !== undefined && !(isScalar(node) && node.value === null)) {
    throw new Error(`${section} is not a map`);
  }
  doc.set(section, doc.createNode({}));
}

/**
 * The file text with document `index` replaced by its re-printed form and every other byte kept.
 * Document boundaries come from the CST: a document's span starts where the previous one (and
 * its `...` marker) ended, so the comments before it (which the composer attaches to it) go with it.
 */
export function replaceDocument(text: string, docs: readonly Document[], index: number): string {
  const spans = documentSpans(text);
  const span = spans[index];
  const doc = docs[index];
  if (doc === undefined) throw new Error(`no document ${index}`);
  if (span === undefined || spans.length !== docs.length) {
    // Cannot happen for a file parseAllDocuments accepted; printing every document is still correct.
    return docs.map((d) => d.toString(PRINT_OPTIONS)).join('');
  }
  const printed = printKeepingTail(doc, text, span.end);
  return text.slice(0, span.start) + restoreSpacing(text.slice(span.start, span.end), printed) + text.slice(span.end);
}

/** Equal for two lines that differ only in the spaces before a comment or at the end. */
const normalise = (line: string): string => line.replace(/[ \t]+#/g, ' #').replace(/[ \t]+$/, '');

/**
 * The printer writes one space before a trailing comment, undoing an operator's aligned
 * comments in the edited document. Lines the edit did not touch that differ only so are put
 * back as they were. Because `normalise` can in theory equate two different quoted values, the
 * result is kept only if it reads back to the same values as the printed text.
 */
function restoreSpacing(original: string, printed: string): string {
  const a = original.split('\n');
  const b = printed.split('\n');
  if (a.length * b.length > 1_000_000) return printed;
  const na = a.map(normalise);
  const nb = b.map(normalise);
  // lcs[i][j]: length of the longest common subsequence of na[i..] and nb[j..].
  const lcs = Array.from({ length: a.length + 1 }, () => new Uint32Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lcs[i]![j] = na[i] === nb[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
    }
  }
  const out: string[] = [];
  for (let i = 0, j = 0; j < b.length; ) {
    if (i < a.length && na[i] === nb[j]) {
      out.push(a[i]!);
      i++;
      j++;
    } else if (i < a.length && lcs[i + 1]![j]! >= lcs[i]![j + 1]!) i++;
    else out.push(b[j++]!);
  }
  const restored = out.join('\n');
  return restored !== printed && sameValues(restored, printed) ? restored : printed;
}

function sameValues(left: string, right: string): boolean {
  const parsed = [parseYamlFile(left), parseYamlFile(right)];
  const values = parsed.map((p) => (p.ok ? documentsToJS(p.docs) : p));
  const [l, r] = values;
  return l?.ok === true && r?.ok === true && JSON.stringify(l.values) === JSON.stringify(r.values);
}

/**
 * Prints a document but keeps its original tail (trailing comment, blank lines, `...`) as bytes:
 * the printer would otherwise insert a blank line before a trailing comment or drop blank lines.
 */
function printKeepingTail(doc: Document, text: string, spanEnd: number): string {
  const contentsEnd = doc.range?.[1] ?? spanEnd;
  const { comment } = doc;
  const docEnd = doc.directives?.docEnd ?? false;
  doc.comment = null;
  if (doc.directives !== undefined) doc.directives.docEnd = false;
  try {
    const printed = doc.toString(PRINT_OPTIONS) + text.slice(contentsEnd, spanEnd);
    // A file without a final newline keeps lacking it.
    return !text.endsWith('\n') && spanEnd === text.length ? printed.replace(/\n$/, '') : printed;
  } finally {
    doc.comment = comment;
    if (doc.directives !== undefined) doc.directives.docEnd = docEnd;
  }
}

function documentSpans(text: string): { start: number; end: number }[] {
  const spans: { start: number; end: number }[] = [];
  let from = 0;
  for (const token of new YAML.Parser().parse(text)) {
    const end = token.offset + YAML.CST.stringify(token).length;
    if (token.type === 'document') {
      spans.push({ start: from, end });
      from = end;
    } else if (token.type === 'doc-end') {
      const last = spans[spans.length - 1];
      if (last !== undefined) last.end = end;
      from = end;
    }
  }
  const last = spans[spans.length - 1];
  if (last !== undefined) last.end = text.length;
  return spans;
}

/** A new manifest file holding one ConfigMap. */
export function newConfigMapText(name: string, values: Readonly<Record<string, string>>): string {
  return YAML.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data: { ...values } }, PRINT_OPTIONS);
}

/** A new manifest file holding one Secret labelled as part of svc. */
export function newSecretText(name: string, values: Readonly<Record<string, string>>): string {
  const data: Record<string, string> = {};
  for (const [key, value] of Object.entries(values)) data[key] = Buffer.from(value, 'utf8').toString('base64');
  const manifest = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name, labels: { [PART_OF_LABEL]: PART_OF_VALUE } },
    type: 'Opaque',
    data,
  };
  return YAML.stringify(manifest, PRINT_OPTIONS);
}

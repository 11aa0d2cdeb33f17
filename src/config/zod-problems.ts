/**
 * Turns zod's issues into ConfigProblems with key paths, naming unknown keys one by one, in
 * svc's words: zod's own sentences ("Invalid input: expected object, received undefined")
 * never reach an operator. The offending value is quoted when it is not secret: never a value
 * read from a Secret (secret-ref.ts marks them), nor one under a key named like a password,
 * secret, token or key; a long value by its start.
 */
import type { z } from 'zod';
import { unknownKeyMessage } from './key-hints.js';
import type { PathSegment, ScopedSink } from './problems.js';
import { isFromSecret } from './secret-ref.js';

type Path = readonly (string | number)[];

const startsWith = (path: Path, prefix: Path): boolean => prefix.length <= path.length && prefix.every((p, i) => path[i] === p);

/** `input`: the value that was parsed, to quote from (see the header). */
export function reportZodIssues(error: z.ZodError, sink: ScopedSink, skip: readonly Path[] = [], schema?: z.ZodType, input?: unknown): void {
  for (const issue of error.issues) {
    const path = issue.path.filter((p): p is PathSegment => typeof p === 'string' || typeof p === 'number');
    // A value that stands in for a reference that failed (reported already): nothing more to say there.
    if (skip.some((s) => startsWith(path, s))) continue;
    if (issue.code === 'unrecognized_keys') {
      const known = schema === undefined ? [] : keysAt(schema, path);
      for (const key of issue.keys) sink.add([...path, key], unknownKeyMessage([...sink.prefix, ...path], key, known));
      continue;
    }
    sink.add(path, issueMessage(issue, input, sink.prefix));
  }
}

/**
 * One issue in svc's words, the value quoted when it may be (see the header); `input` is what
 * was parsed and `prefix` where it stands (its key names count for the secret rule too).
 */
export function issueMessage(issue: z.core.$ZodIssue, input: unknown, prefix: Path = []): string {
  const path = issue.path.filter((p): p is PathSegment => typeof p === 'string' || typeof p === 'number');
  return withValue(shownValue(input, [...prefix, ...path], path), operatorWords(issue));
}

/** Key names whose values are never quoted, wherever they stand (bindPW, clientSecret, keyData, ...). */
const SECRET_KEY = /pass(word|wd)?|secret|credential|cookie|private|^keys?|keys?$|tokens?$|pw$/i;
const MAX_SHOWN = 60;

/** The value at `path` inside `input`, as a message shows it; undefined when it must not or cannot be shown. */
function shownValue(input: unknown, fullPath: Path, path: Path): string | undefined {
  if (fullPath.some((segment) => typeof segment === 'string' && SECRET_KEY.test(segment))) return undefined;
  let at: unknown = input;
  for (const segment of path) {
    if (typeof at !== 'object' || at === null || !Object.hasOwn(at, segment) || isFromSecret(at, segment)) return undefined;
    at = (at as Record<string | number, unknown>)[segment];
  }
  if (typeof at === 'number' || typeof at === 'boolean') return String(at);
  if (typeof at !== 'string' || at === '') return undefined;
  return quoted(at);
}

/**
 * A text that is not secret, quoted for a message: its first line, at most 60 characters, control
 * characters escaped, and a URL's user information (it may hold a password) masked before the
 * text is cut.
 */
export function quoted(text: string): string {
  const firstLine = text.split('\n', 1)[0] ?? '';
  const masked = firstLine.replace(/^([a-z][a-z0-9+.-]*:\/\/)[^/?#@]*@/i, '$1…@');
  const cut = masked.length > MAX_SHOWN || firstLine !== text;
  return `'${JSON.stringify(masked.slice(0, MAX_SHOWN)).slice(1, -1).replace(/'/g, "\\'")}${cut ? '…' : ''}'`;
}

/** Where an issue stands, before its message in a one-line error ("clusters.0.server: "); nothing for the value as a whole. */
export function issuePlace(issue: z.core.$ZodIssue): string {
  return issue.path.length === 0 ? '' : `${issue.path.join('.')}: `;
}

/** "'ldap.example.org:x' is not …": the value first, as svc's hand-written messages put it. */
function withValue(shown: string | undefined, message: string): string {
  if (shown === undefined || message.startsWith("'") || message === 'required') return message;
  if (/^(must|is|has|cannot) /.test(message)) return `${shown} ${message}`;
  if (message.startsWith('not ')) return `${shown} is ${message}`;
  return `${shown}: ${message}`;
}

/** zod's default sentences, in svc's words; a schema's own message (set with `error:`) is kept. */
export function operatorWords(issue: z.core.$ZodIssue): string {
  const message = issue.message;
  if (issue.code === 'invalid_type') {
    const received = /received (\w+)/.exec(message)?.[1];
    if (received === 'undefined') return 'required';
    if (message.startsWith('Invalid input')) return `must be ${article(issue.expected)}${received !== undefined ? `, not ${article(received)}` : ''}`;
  }
  if (issue.code === 'invalid_value' && message.startsWith('Invalid')) return `must be one of ${issue.values.map((v) => `'${String(v)}'`).join(', ')}`;
  if ((issue.code === 'too_small' || issue.code === 'too_big') && /^Too (small|big)/.test(message)) {
    const bound = Number(issue.code === 'too_small' ? issue.minimum : issue.maximum);
    if (issue.code === 'too_small' && bound === 1 && (issue.origin === 'string' || issue.origin === 'array')) return 'must not be empty';
    const unit = issue.origin === 'string' ? ' characters' : issue.origin === 'array' ? ' entries' : '';
    return `must be ${issue.code === 'too_small' ? 'at least' : 'at most'} ${bound}${unit}`;
  }
  if (message.startsWith('Invalid input')) return 'is not valid here';
  return message.replace(/^Too (big|small): expected (\w+) to have /, 'must have ').replace(/^Invalid /, 'is not a valid ');
}

function article(type: string): string {
  const words: Record<string, string> = { object: 'a map', array: 'a list', string: 'a string', number: 'a number', boolean: 'true or false', null: 'empty', nan: 'a number' };
  return words[type] ?? type;
}

/** Parses with a schema, reporting every issue (none under `skip`); undefined when anything was wrong. */
export function parseWith<T>(schema: z.ZodType<T>, value: unknown, sink: ScopedSink, skip: readonly Path[] = []): T | undefined {
  const result = schema.safeParse(value);
  if (result.success) return result.data;
  reportZodIssues(result.error, sink, skip, schema, value);
  return undefined;
}

interface Def {
  readonly type?: string;
  readonly shape?: Readonly<Record<string, unknown>>;
  readonly element?: unknown;
  readonly innerType?: unknown;
  readonly in?: unknown;
  readonly options?: readonly unknown[];
}

const defOf = (schema: unknown): Def => ((schema as { _zod?: { def?: Def } })._zod?.def ?? {});

/** Wrappers that do not change the keys (optional, default, pipe, ...) peeled off. */
function bare(schema: unknown): unknown {
  for (let i = 0; i < 10; i++) {
    const def = defOf(schema);
    const inner = def.innerType ?? def.in;
    if (inner === undefined) return schema;
    schema = inner;
  }
  return schema;
}

/** The keys an object schema allows at `path`, for "did you mean"; none when the schema does not say. */
export function keysAt(schema: unknown, path: Path): readonly string[] {
  let at: unknown = schema;
  for (const segment of path) {
    const def = defOf(bare(at));
    if (def.type === 'object' && typeof segment === 'string') at = def.shape?.[segment];
    else if (def.type === 'array' && typeof segment === 'number') at = def.element;
    else return [];
    if (at === undefined) return [];
  }
  const def = defOf(bare(at));
  if (def.type === 'object') return Object.keys(def.shape ?? {});
  if (def.type === 'union') return (def.options ?? []).flatMap((o) => keysAt(o, []));
  return [];
}

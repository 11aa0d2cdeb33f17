/**
 * The glob matcher the casbin model calls as `svcGlobMatch(value, pattern)`.
 *
 * Argo CD matches with gobwas/glob without separators, so `*` also matches `/`: `*\/*` matches
 * `team-a/api`. casbin's own `globMatch` is minimatch-based and does not (it drops a `*` that stands before a `/`).
 *
 * Syntax: `*` any run of characters (including `/`), `?` one character, `{a,b}` alternatives
 * (which may hold globs and nest), `[abc]`, `[a-z]` and `[!abc]` classes as in gobwas, `\x` a
 * literal x. Every other character is literal, regex metacharacters included. An unterminated
 * `{` or `[` is literal; a class with a reversed range (`[z-a]`) matches nothing.
 *
 * Why not a RegExp: JS RegExp backtracks. `*\/*\/*\/prod` compiled to `^.*\/.*\/.*\/prod$` takes
 * 4 s against an object of 2,000 slashes, and objects come from URLs. So braces are expanded
 * at compile time into plain alternatives (at most MAX_ALTERNATIVES, else the pattern is taken
 * literally), and each alternative is matched by the greedy wildcard algorithm: worst case
 * O(value × pattern), no backtracking blow-up. Compiled patterns sit in a bounded LRU (10,000
 * entries, as Argo CD).
 */
import { BoundedCache } from '../lib/bounded-cache.js';

export const GLOB_CACHE_ENTRIES = 10_000;
export const MAX_ALTERNATIVES = 1024;

const GLOB_SPECIAL = /[*?{[\\]/;
const SURROGATE = /[\uD800-\uDFFF]/;

type Token = { readonly kind: 'star' } | { readonly kind: 'one'; readonly test: (c: string) => boolean };
type Compiled = readonly (readonly Token[])[];

const STAR: Token = { kind: 'star' };
const ANY: Token = { kind: 'one', test: () => true };

/** Index of the `}` closing the `{` at `open`, or -1 when there is none. */
function closingBrace(pattern: string, open: number): number {
  let depth = 0;
  for (let i = open; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') i++;
    else if (c === '{') depth++;
    else if (c === '}' && --depth === 0) return i;
  }
  return -1;
}

/** Splits the inside of `{...}` on the commas at its own level. */
function splitAlternatives(inner: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < inner.length; i++) {
    const c = inner[i];
    if (c === '\\') i++;
    else if (c === '{') depth++;
    else if (c === '}') depth--;
    else if (c === ',' && depth === 0) {
      out.push(inner.slice(start, i));
      start = i + 1;
    }
  }
  out.push(inner.slice(start));
  return out;
}

/** `a{b,c{d,e}}` -> `ab`, `acd`, `ace`; undefined past MAX_ALTERNATIVES. */
export function expandBraces(pattern: string): string[] | undefined {
  for (let i = 0; i < pattern.length; i++) {
    if (pattern[i] === '\\') {
      i++;
      continue;
    }
    if (pattern[i] !== '{') continue;
    const close = closingBrace(pattern, i);
    if (close < 0) continue; // unterminated: a literal `{`
    const head = pattern.slice(0, i);
    const out: string[] = [];
    for (const alternative of splitAlternatives(pattern.slice(i + 1, close))) {
      const expanded = expandBraces(head + alternative + pattern.slice(close + 1));
      if (expanded === undefined || out.length + expanded.length > MAX_ALTERNATIVES) return undefined;
      out.push(...expanded);
    }
    return out;
  }
  return [pattern];
}

/** `[...]` at `open` to a token, or undefined when it is unterminated or empty (then literal). */
function charClass(chars: readonly string[], open: number): { token: Token; end: number } | undefined {
  const close = chars.indexOf(']', open + 2);
  if (close < 0) return undefined;
  let body = chars.slice(open + 1, close);
  const negate = body[0] === '!';
  if (negate) body = body.slice(1);
  if (body.length === 0) return undefined;
  const singles = new Set<string>();
  const ranges: [number, number][] = [];
  for (let i = 0; i < body.length; i++) {
    const c = body[i] ?? '';
    const hi = body[i + 2];
    if (body[i + 1] === '-' && hi !== undefined) {
      ranges.push([c.codePointAt(0) ?? 0, hi.codePointAt(0) ?? 0]);
      i += 2;
    } else singles.add(c);
  }
  const inClass = (c: string): boolean => {
    if (singles.has(c)) return true;
    const code = c.codePointAt(0) ?? -1;
    return ranges.some(([lo, up]) => lo <= code && code <= up);
  };
  return { token: { kind: 'one', test: (c) => inClass(c) !== negate }, end: close };
}

/** A brace-free pattern to tokens (one per code point). */
function tokenize(pattern: string): Token[] {
  const chars = Array.from(pattern);
  const tokens: Token[] = [];
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i] ?? '';
    if (c === '*') {
      if (tokens[tokens.length - 1] !== STAR) tokens.push(STAR);
    } else if (c === '?') {
      tokens.push(ANY);
    } else if (c === '[' && charClass(chars, i) !== undefined) {
      const cls = charClass(chars, i);
      if (cls !== undefined) {
        tokens.push(cls.token);
        i = cls.end;
      }
    } else {
      const literal = c === '\\' && i + 1 < chars.length ? (chars[++i] ?? '') : c;
      tokens.push({ kind: 'one', test: (x) => x === literal });
    }
  }
  return tokens;
}

export function compileGlob(pattern: string): Compiled {
  const alternatives = expandBraces(pattern);
  if (alternatives === undefined) return [Array.from(pattern, (c): Token => ({ kind: 'one', test: (x) => x === c }))];
  return alternatives.map(tokenize);
}

/** Greedy wildcard matching: on a mismatch, retry from the last star one character later. */
function matchTokens(tokens: readonly Token[], value: ArrayLike<string>): boolean {
  let t = 0;
  let v = 0;
  let starT = -1;
  let starV = 0;
  while (v < value.length) {
    const token = tokens[t];
    if (token !== undefined && token.kind === 'one' && token.test(value[v] ?? '')) {
      t++;
      v++;
    } else if (token !== undefined && token.kind === 'star') {
      starT = t++;
      starV = v;
    } else if (starT >= 0) {
      t = starT + 1;
      v = ++starV;
    } else {
      return false;
    }
  }
  while (tokens[t]?.kind === 'star') t++;
  return t === tokens.length;
}

export type GlobMatch = (value: string, pattern: string) => boolean;

/** A matcher with its own bounded cache of compiled patterns. */
export function createGlobMatch(maxEntries: number = GLOB_CACHE_ENTRIES): GlobMatch {
  const compiled = new BoundedCache<string, Compiled>(maxEntries);
  return function globMatch(value: string, pattern: string): boolean {
    if (pattern === '*') return true;
    if (!GLOB_SPECIAL.test(pattern)) return value === pattern;
    let alternatives = compiled.get(pattern);
    if (alternatives === undefined) {
      alternatives = compileGlob(pattern);
      compiled.set(pattern, alternatives);
    }
    // Index by code point only when the value has surrogate pairs; a string indexes by code unit.
    const chars: ArrayLike<string> = SURROGATE.test(value) ? Array.from(value) : value;
    return alternatives.some((tokens) => matchTokens(tokens, chars));
  };
}

/**
 * The path the backend receives: its configured base path plus the request's path after
 * `/api/v1/extensions/<name>`. The request part is canonicalised segment by segment so that no
 * spelling of a dot segment (`..`, `%2e%2e`, `%2E.`, `.%2E`) and no encoded separator (`%2f`,
 * `%5c`) can reach above the base, whatever the backend later decodes or normalises:
 *
 * - `\` separates segments, as WHATWG URL parsers treat it for http(s);
 * - each segment is percent-decoded once and re-encoded canonically, so the backend sees no `%2e`
 *   dots and a literal `%` stays data (`%25`);
 * - `.` is dropped and `..` removes the previous request segment; a `..` that would climb above
 *   the base is refused (400), not silently clamped, so a probing client learns nothing useful;
 * - an encoded `/` or `\` inside a segment is refused (400): some backends decode it before
 *   routing, which would turn `a%2f..%2f..` into a climb;
 * - a segment whose part before the first `;` is a dot segment (`..;`, `.;x`, `%2e%2e;jsessionid=1`)
 *   counts as one, its parameters dropped: Tomcat, Jetty and Spring strip `;` parameters before
 *   resolving dots, so `/..;/admin` climbs there while it looks like a name to us;
 * - empty segments are collapsed (`a//b` → `a/b`), so the target never starts with `//`, which
 *   some backends and their redirects read as a protocol-relative URL (`//evil.example/x`).
 *
 * Rejected alternative: `new URL(rest, base)` resolution. It normalises `%2e%2e` but keeps
 * `%2f` and clamps at the origin root rather than at the base path.
 */
import { InvalidRequest } from '../errors.js';

/** Characters that need no canonicalisation: RFC 3986 pchar without `%`. */
const PLAIN_PATH = /^[A-Za-z0-9\-._~!$&'()*+,;=:@/]*$/;
/** A dot segment, with or without `;` parameters, or an empty segment: the slow path handles them. */
const NEEDS_CANONICAL = /(?:^|\/)\.{1,2}(?:[/;]|$)|\/\//;
/** Sub-delimiters and `:`/`@`, which encodeURIComponent escapes but a path segment may carry as is. */
const PCHAR_ESCAPES = /%(?:24|26|2B|2C|3B|3D|3A|40)/g;

/** The base path of a backend URL without trailing slashes: `/` → ``, `/base/` → `/base`. */
export function basePathOf(url: URL): string {
  return url.pathname.replace(/\/+$/, '');
}

/**
 * `rest` is the raw (still encoded) path after the extension name: `` or `/...`.
 * Returns the path to send, always inside `base` (as given by basePathOf).
 * Without a further path the configured URL's own path is used as is (SPEC rule 2).
 */
export function joinBackendPath(base: string, configuredPath: string, rest: string): string {
  if (rest === '') return configuredPath === '' ? '/' : configuredPath;
  if (!rest.startsWith('/')) throw new InvalidRequest('the backend path must start with /');
  if (PLAIN_PATH.test(rest) && !NEEDS_CANONICAL.test(rest)) return base + rest;
  return base + '/' + canonicalSegments(rest.slice(1)).join('/');
}

function canonicalSegments(raw: string): string[] {
  const out: string[] = [];
  const parts = raw.split(/[/\\]/);
  parts.forEach((part, index) => {
    const decoded = decodeSegment(part);
    const last = index === parts.length - 1;
    const dots = dotSegment(decoded);
    if (dots !== undefined) {
      if (dots === '..' && out.pop() === undefined) {
        throw new InvalidRequest('the path climbs above the extension base path');
      }
      if (last) out.push('');
      return;
    }
    if (decoded === '' && !last) return;
    if (decoded.includes('/') || decoded.includes('\\')) {
      throw new InvalidRequest('an encoded "/" or "\\" inside a path segment is not allowed');
    }
    out.push(encodeSegment(decoded));
  });
  return out;
}

/** `.` or `..` when the segment is one, parameters (`;…`) aside; undefined otherwise. */
function dotSegment(decoded: string): '.' | '..' | undefined {
  const semicolon = decoded.indexOf(';');
  const name = semicolon === -1 ? decoded : decoded.slice(0, semicolon);
  return name === '.' || name === '..' ? name : undefined;
}

function decodeSegment(segment: string): string {
  if (!segment.includes('%')) return segment;
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new InvalidRequest('the path has malformed percent-encoding');
  }
}

function encodeSegment(decoded: string): string {
  return encodeURIComponent(decoded).replace(PCHAR_ESCAPES, (escape) => String.fromCharCode(parseInt(escape.slice(1), 16)));
}

import { expect } from 'chai';
import fc from 'fast-check';
import { InvalidRequest } from '../../src/errors.js';
import { basePathOf, joinBackendPath } from '../../src/extensions/path.js';

const BASE_URL = new URL('http://backend.test/api/base/');
const BASE = basePathOf(BASE_URL);

function join(rest: string): string {
  return joinBackendPath(BASE, BASE_URL.pathname, rest);
}

/**
 * What a backend that decodes once, treats `\` as `/`, strips `;` path parameters (Tomcat, Jetty,
 * Spring) and resolves dot segments would serve.
 */
function resolvedByDecodingBackend(path: string): string[] {
  const decoded = path.replace(/%([0-9A-Fa-f]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  const out: string[] = [];
  for (const segment of decoded.split(/[/\\]/).slice(1)) {
    const name = segment.split(';')[0];
    if (name === '.') continue;
    if (name === '..') out.pop();
    else out.push(segment);
  }
  return out;
}

function staysInside(path: string): boolean {
  const baseSegments = BASE.split('/').slice(1);
  const whatwg = new URL(path, 'http://backend.test').pathname;
  const decodedOnce = resolvedByDecodingBackend(path);
  return (
    !path.startsWith('//') &&
    (path === BASE_URL.pathname || path.startsWith(`${BASE}/`)) &&
    (whatwg === BASE_URL.pathname || whatwg.startsWith(`${BASE}/`)) &&
    baseSegments.every((s, i) => decodedOnce[i] === s) &&
    decodedOnce.length >= baseSegments.length
  );
}

describe('extension path join', () => {
  it('keeps plain paths and the configured path as is', () => {
    expect(join('')).to.equal('/api/base/');
    expect(join('/')).to.equal('/api/base/');
    expect(join('/a/b:c@d;e=f')).to.equal('/api/base/a/b:c@d;e=f');
    expect(joinBackendPath('', '/', '/x')).to.equal('/x');
    expect(joinBackendPath('', '/', '')).to.equal('/');
  });

  it('resolves dot segments inside the request path and refuses to climb', () => {
    expect(join('/a/%2e%2e/b')).to.equal('/api/base/b');
    expect(join('/a/./b/.')).to.equal('/api/base/a/b/');
    expect(join('/a/b/..')).to.equal('/api/base/a/');
    expect(join('/a\\..\\b')).to.equal('/api/base/b');
    for (const rest of ['/..', '/%2e%2e', '/%2E.', '/.%2E/x', '/a/../../x', '/..\\x']) {
      expect(() => join(rest), rest).to.throw(InvalidRequest, 'the path climbs above the extension base path');
    }
  });

  it('treats a segment with ; parameters after . or .. as a dot segment (Tomcat, Jetty, Spring)', () => {
    expect(join('/a/..;/b')).to.equal('/api/base/b');
    expect(join('/a/.;x/b')).to.equal('/api/base/a/b');
    expect(join('/a/%2e%2e;jsessionid=1/b')).to.equal('/api/base/b');
    expect(join('/a;x=1/b')).to.equal('/api/base/a;x=1/b');
    for (const rest of ['/..;/admin', '/..;/..;/admin', '/%2e%2e;/x', '/a/..;x/..;y/z', '/..%3b/x']) {
      expect(() => join(rest), rest).to.throw(InvalidRequest, 'the path climbs above the extension base path');
    }
  });

  it('collapses empty segments, so the target never starts with // (protocol-relative)', () => {
    expect(joinBackendPath('', '/', '//evil.example/x')).to.equal('/evil.example/x');
    expect(joinBackendPath('', '/', '/\\evil.example/x')).to.equal('/evil.example/x');
    expect(join('/a//b///c/')).to.equal('/api/base/a/b/c/');
    expect(join('//')).to.equal('/api/base/');
  });

  it('refuses encoded separators and malformed escapes', () => {
    expect(() => join('/a%2f..%2f..%2fx')).to.throw(InvalidRequest, 'an encoded "/" or "\\" inside a path segment is not allowed');
    expect(() => join('/a%5Cb')).to.throw(InvalidRequest, 'encoded');
    expect(() => join('/a%zz')).to.throw(InvalidRequest, 'malformed percent-encoding');
  });

  it('re-encodes canonically: a literal % stays data, unreserved escapes are decoded', () => {
    expect(join('/%41%20b%25%252e')).to.equal('/api/base/A%20b%25%252e');
    expect(join('/caf%C3%A9')).to.equal('/api/base/caf%C3%A9');
  });

  it('never leaves the base path (property, 20,000 generated paths)', () => {
    const piece = fc.constantFrom('.', '..', '..;', '.;x', '%2e%2e;', ';a=1', '%2e',  '%2E', '%2e%2e', '%2E.', '.%2e', '%2f', '%2F', '%5c', '%5C', '\\', '/', '//', 'a', 'b.c', '...', '%', '%25', '%252e', '%00', 'é', '%C3%A9', '?', ';', '%3B', ':');
    const segment = fc.array(piece, { minLength: 0, maxLength: 4 }).map((parts) => parts.join(''));
    const rest = fc.array(segment, { minLength: 1, maxLength: 8 }).map((segments) => `/${segments.join('/')}`);
    let accepted = 0;
    fc.assert(
      fc.property(fc.oneof(rest, fc.string({ unit: 'grapheme-ascii' }).map((s) => `/${s}`)), (path) => {
        let joined: string;
        try {
          joined = join(path.split('?')[0] ?? '');
        } catch (err: unknown) {
          return err instanceof InvalidRequest;
        }
        accepted++;
        return staysInside(joined);
      }),
      { numRuns: 20_000 },
    );
    expect(accepted).to.be.greaterThan(2_000);
  });

  it('never sends a target starting with // from a backend URL without a path (property)', () => {
    const piece = fc.constantFrom('', '/', '//', '\\', '%2f', 'a', '.', '..', '..;');
    let accepted = 0;
    let doubleSlashIn = 0;
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 8 }).map((parts) => `/${parts.join('')}`), (path) => {
        let target: string;
        try {
          target = joinBackendPath('', '/', path);
        } catch (err: unknown) {
          return err instanceof InvalidRequest;
        }
        accepted++;
        if (path.startsWith('//')) doubleSlashIn++;
        return !target.startsWith('//');
      }),
      { numRuns: 5_000 },
    );
    // A join that refused everything would pass the property: most inputs are plain paths it must take,
    // among them some that start with // and must come out with a single leading slash.
    expect(accepted).to.be.greaterThan(1_000);
    expect(doubleSlashIn).to.be.greaterThan(100);
  });
});

/**
 * The login page's return URL (web/src/api.ts `sameSiteReturnUrl`) runs here under Node with a
 * `location` of svc's origin, as the page has it. It must be the server's rule (issue 21: the page
 * had a looser copy that let `/.//evil.example/x` and `/a/..//evil.example/y` through to
 * `location.assign`, which a browser reads as `//evil.example/...`). The property: whatever the
 * page is given, what it sends the browser to resolves to svc's own origin.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { safeReturnUrl as serverRule } from '../../src/oidc/return-url.js';

const ORIGIN = 'https://svc.example.com';
(globalThis as { location?: unknown }).location = { origin: ORIGIN };
// Through a specifier the type checker does not follow: web/src is checked against the DOM's types (web/tsconfig.json), the tests against Node's.
const PAGE_MODULE = '../../web/src/api.js';
const { sameSiteReturnUrl } = (await import(PAGE_MODULE)) as { sameSiteReturnUrl: (raw: string | null) => string };

describe('web/api: the login page\'s return URL', function () {
  it('sends the browser nowhere off-site for the tricks the review found, and keeps real places', function () {
    for (const raw of ['//evil.example/x', '/.//evil.example/x', '/a/..//evil.example/y', '/./\\evil.example', '/\t/evil.example', '///evil.example', '/%2e/%2fevil', 'https://evil.example/', 'javascript:alert(1)']) {
      const out = sameSiteReturnUrl(raw);
      expect(new URL(out, `${ORIGIN}/login`).origin, raw).to.equal(ORIGIN);
    }
    expect(sameSiteReturnUrl('/.//evil.example/x')).to.equal('/');
    expect(sameSiteReturnUrl('/a/..//evil.example/y')).to.equal('/');
    expect(sameSiteReturnUrl('/apps?x=1#y')).to.equal('/apps?x=1#y');
    expect(sameSiteReturnUrl(`${ORIGIN}/apps`)).to.equal(`${ORIGIN}/apps`);
    expect(sameSiteReturnUrl(null)).to.equal('/');
  });

  it('agrees with the server\'s rule on any input, and always resolves to svc\'s origin', function () {
    const piece = fc.constantFrom('/', '//', '.', '..', '\\', '\t', '%2f', '%2e', 'evil.example', 'a', '?', '#', ':', '@', 'https:', `${ORIGIN}`, ' ');
    fc.assert(fc.property(fc.oneof(fc.array(piece, { maxLength: 8 }).map((p) => p.join('')), fc.string()), (raw) => {
      const out = sameSiteReturnUrl(raw);
      expect(out).to.equal(serverRule(raw, ORIGIN));
      expect(new URL(out, `${ORIGIN}/login?return_url=x`).origin).to.equal(ORIGIN);
    }), { numRuns: 2000 });
  });
});

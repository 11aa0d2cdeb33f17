import { expect } from 'chai';
import { safeReturnUrl } from '../../src/oidc/return-url.js';
import { logoutRedirect } from '../../src/oidc/logout.js';

describe('return_url', () => {
  const base = 'https://svc.example.com/root';
  const cases: [string | undefined, string][] = [
    [undefined, '/'],
    ['', '/'],
    ['/', '/'],
    ['/apps', '/apps'],
    ['/apps?x=1', '/apps?x=1'],
    ['//evil.example.com/x', '/'],
    ['/\\evil.example.com', '/'],
    ['/a/../b', '/'],
    ['https://svc.example.com/root/apps', 'https://svc.example.com/root/apps'],
    ['https://svc.example.com/root', 'https://svc.example.com/root'],
    ['https://svc.example.com/rootless', '/'],
    ['https://svc.example.com/other', '/'],
    ['http://svc.example.com/root/apps', '/'],
    ['https://svc.example.com:8443/root/apps', '/'],
    ['https://evil.example.com/root/apps', '/'],
    ['https://user@svc.example.com/root/apps', '/'],
    ['javascript:alert(1)', '/'],
    ['/apps\r\nSet-Cookie: x=1', '/'],
    ['/apps//', '/apps//'],
    ['https://:pw@svc.example.com/root/apps', '/'],
    // A tab is dropped by the URL parser: `/\t/` is `//`, a scheme-relative URL with no host, which threw.
    ['/\t/', '/'],
    ['/\t/evil.example.com', '/'],
    ['/apps\u0000', '/'],
  ];
  for (const [given, expected] of cases) {
    it(`${JSON.stringify(given)} -> ${expected}`, () => expect(safeReturnUrl(given, base)).to.equal(expected));
  }
});

describe('logout redirect', () => {
  it('fills both placeholders, each URL-encoded; the redirect URL is the base URL with its root path', () => {
    const url = logoutRedirect({ logoutURL: 'https://idp/logout?t={{token}}&r={{logoutRedirectURL}}', serverUrl: 'https://svc.example.com/root/', idToken: 'a.b+c/d=' });
    expect(url).to.equal(`https://idp/logout?t=${encodeURIComponent('a.b+c/d=')}&r=${encodeURIComponent('https://svc.example.com/root')}`);
  });

  it('goes to /login without a logoutURL, or without a token of the provider', () => {
    expect(logoutRedirect({ logoutURL: undefined, serverUrl: 'https://svc.example.com/root', idToken: 'x' })).to.equal('https://svc.example.com/root/login');
    expect(logoutRedirect({ logoutURL: 'https://idp/logout', serverUrl: 'https://svc.example.com', idToken: undefined })).to.equal('https://svc.example.com/login');
  });
});

import { expect } from 'chai';
import { Unauthenticated } from '../../src/errors.js';
import { cookieRefusal, isOwnOrigin, isSafeMethod } from '../../src/http/same-origin.js';

describe('same-origin rule for the session cookie', () => {
  const url = 'https://svc.example.com';
  const sentTo = (host: string, protocol = 'https') => ({ host, protocol });

  it('knows the safe methods', () => {
    expect(['GET', 'HEAD', 'OPTIONS', 'TRACE'].every(isSafeMethod)).to.equal(true);
    expect(['POST', 'PUT', 'PATCH', 'DELETE', 'PROPFIND', 'get', undefined].some(isSafeMethod)).to.equal(false);
  });

  it("recognises svc's own origin by the configured url, or by the scheme and Host the request came with", () => {
    expect(isOwnOrigin('https://svc.example.com', sentTo('other', 'http'), url), 'the configured url').to.equal(true);
    expect(isOwnOrigin('http://10.0.0.5:8080', sentTo('10.0.0.5:8080', 'http'), url), 'the Host asked for').to.equal(true);
    expect(isOwnOrigin('http://svc.internal:8080', sentTo('SVC.Internal:8080', 'http'), url), 'Host in another case').to.equal(true);
    expect(isOwnOrigin('https://evil.example.com', sentTo('svc.example.com'), url), 'a sibling subdomain').to.equal(false);
    expect(isOwnOrigin('https://svc.example.com:8443', sentTo('svc.example.com'), url), 'another port').to.equal(false);
    expect(isOwnOrigin('http://svc.example.com', sentTo('svc.example.com', 'https'), url), 'the same host over http').to.equal(false);
    expect(isOwnOrigin('http://svc.internal', sentTo('svc.internal', 'https'), 'http://127.0.0.1:8080'), 'another scheme, by Host').to.equal(false);
    expect(isOwnOrigin('null', sentTo('svc.example.com'), url), 'an opaque origin').to.equal(false);
    expect(isOwnOrigin(undefined, sentTo('svc.example.com'), url)).to.equal(false);
  });

  it('refuses the cookie for a request that may change something from elsewhere, saying why', () => {
    expect(cookieRefusal('GET', 'https://evil.example.com', sentTo('svc.example.com'), url)).to.equal(undefined);
    expect(cookieRefusal('POST', 'https://svc.example.com', sentTo('svc.example.com'), url)).to.equal(undefined);
    const refused = cookieRefusal('DELETE', 'https://evil.example.com\r\n', sentTo('svc.example.com'), url);
    expect(refused).to.be.instanceOf(Unauthenticated);
    expect(refused?.message).to.equal("the svc.token cookie does not sign in a DELETE from origin 'https://evil.example.com??': send it from svc's own pages, or send a bearer token");
    expect(cookieRefusal('PUT', undefined, sentTo('svc.example.com'), url)?.message).to.contain('from a request without Origin');
  });
});

import { expect } from 'chai';
import { Unauthenticated } from '../../src/errors.js';
import { cookieRefusal, isOwnOrigin, isSafeMethod } from '../../src/http/same-origin.js';

describe('same-origin rule for the session cookie', () => {
  const url = 'https://svc.example.com';

  it('knows the safe methods', () => {
    expect(['GET', 'HEAD', 'OPTIONS', 'TRACE'].every(isSafeMethod)).to.equal(true);
    expect(['POST', 'PUT', 'PATCH', 'DELETE', 'PROPFIND', 'get', undefined].some(isSafeMethod)).to.equal(false);
  });

  it("recognises svc's own origin by the configured url or the Host asked for, nothing else", () => {
    expect(isOwnOrigin('https://svc.example.com', 'other', url)).to.equal(true);
    expect(isOwnOrigin('http://10.0.0.5:8080', '10.0.0.5:8080', url)).to.equal(true);
    expect(isOwnOrigin('http://10.0.0.5:8080', '10.0.0.5:8080'.toUpperCase(), url)).to.equal(true);
    expect(isOwnOrigin('https://evil.example.com', 'svc.example.com', url), 'a sibling subdomain').to.equal(false);
    expect(isOwnOrigin('https://svc.example.com:8443', 'svc.example.com', url), 'another port').to.equal(false);
    expect(isOwnOrigin('http://svc.example.com', 'other', url), 'another scheme').to.equal(false);
    expect(isOwnOrigin('null', 'svc.example.com', url), 'an opaque origin').to.equal(false);
    expect(isOwnOrigin(undefined, 'svc.example.com', url)).to.equal(false);
  });

  it('refuses the cookie for a request that may change something from elsewhere, saying why', () => {
    expect(cookieRefusal('GET', 'https://evil.example.com', 'svc.example.com', url)).to.equal(undefined);
    expect(cookieRefusal('POST', 'https://svc.example.com', 'svc.example.com', url)).to.equal(undefined);
    const refused = cookieRefusal('DELETE', 'https://evil.example.com\r\n', 'svc.example.com', url);
    expect(refused).to.be.instanceOf(Unauthenticated);
    expect(refused?.message).to.equal("the svc.token cookie does not sign in a DELETE from origin 'https://evil.example.com??': send it from svc's own pages, or send a bearer token");
    expect(cookieRefusal('PUT', undefined, 'svc.example.com', url)?.message).to.contain('from a request without Origin');
  });
});

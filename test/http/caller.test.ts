/**
 * The one reading of the caller (src/http/caller.ts), alone: which token counts, the cookie's
 * origin rule for requests and for WebSocket handshakes, the synchronous fast path, and a refusal
 * as data while any other failure is thrown. The authenticator here is svc's own interface with
 * tokens held in a map (what it does is session/authenticate.ts's, tested there).
 */
import { expect } from 'chai';
import { PermissionDenied, Unauthenticated, Unavailable } from '../../src/errors.js';
import { bearerToken, createReadCaller, hostOf, presentedToken, protocolOf, type Caller, type CallerDeps, type CallerRequest } from '../../src/http/caller.js';
import type { Principal } from '../../src/principal.js';

const URL_ = 'https://svc.example.com';

function principal(username: string): Principal {
  return { username, groups: [], issuer: 'svc', kind: 'session', tokenId: `id-${username}`, expiresAt: undefined };
}

/** `known`: tokens answered without a promise; `looked`: tokens answered after one; anything else refused. */
function authenticator(known: Record<string, Principal>, looked: Record<string, Principal> = {}, calls: string[] = []): CallerDeps['authenticator'] {
  return {
    known(token) {
      calls.push(`known:${token}`);
      if (token === 'down') throw new Unavailable('the state backend is down');
      if (token === 'revoked') throw new Unauthenticated('token revoked');
      return known[token];
    },
    async authenticate(token) {
      calls.push(`authenticate:${token}`);
      const found = looked[token];
      if (found === undefined) throw new Unauthenticated('invalid token');
      return found;
    },
  };
}

function request(headers: CallerRequest['headers'], method = 'GET', protocol = 'https'): CallerRequest {
  return { method, headers: { host: 'svc.example.com', ...headers }, protocol };
}

describe('http/caller: the one reading of the caller', () => {
  const alice = principal('alice');
  const bob = principal('bob');

  it('reads a well-formed bearer header only', () => {
    expect(bearerToken('Bearer abc')).to.equal('abc');
    expect(bearerToken('bearer  abc  ')).to.equal('abc');
    expect(bearerToken('Bearer a b')).to.equal(undefined);
    expect(bearerToken('Basic abc')).to.equal(undefined);
    expect(bearerToken('')).to.equal(undefined);
    expect(bearerToken(undefined)).to.equal(undefined);
  });

  it('takes the bearer header before the svc.token cookie, and says which it took', () => {
    expect(presentedToken({ authorization: 'Bearer b', cookie: 'svc.token=c' })).to.deep.equal({ token: 'b', via: 'bearer' });
    expect(presentedToken({ cookie: 'x=1; svc.token=c' })).to.deep.equal({ token: 'c', via: 'cookie' });
    expect(presentedToken({ cookie: 'x=1' })).to.equal(undefined);
  });

  it('applies the SSO recheck to a token however it is sent, and reads the caller from the token it gives', async () => {
    const sso = (username: string): Principal => ({ ...principal(username), issuer: 'https://idp.example', kind: 'sso' });
    const old = sso('carol');
    const renewed = { ...sso('carol'), groups: [], tokenId: 'id-renewed' };
    const calls: string[] = [];
    const rechecked: string[] = [];
    const read = createReadCaller({
      authenticator: authenticator({ old, local: alice }, { renewed, gone: sso('gone') }, calls), configuredUrl: () => URL_,
      recheck: () => (token) => {
        rechecked.push(token);
        return token === 'old' ? Promise.resolve('renewed') : undefined;
      },
    });
    for (const [headers, via, kind] of [[{ authorization: 'Bearer old' }, 'bearer', 'request'], [{ cookie: 'svc.token=old' }, 'cookie', 'request'], [{ authorization: 'Bearer old' }, 'bearer', 'handshake']] as const) {
      expect(await read(request(headers), kind), `${via} on a ${kind}`).to.deep.equal({ principal: renewed, token: 'renewed', via, authError: undefined });
    }
    expect(read(request({ authorization: 'Bearer local' }), 'request'), 'svc\'s own token: no recheck, no promise').to.deep.equal({ principal: alice, token: 'local', via: 'bearer', authError: undefined });
    expect(rechecked).to.deep.equal(['old', 'old', 'old']);
    // A recheck that revoked the token (the provider refused): read again, so refused.
    const refusing = createReadCaller({ authenticator: authenticator({ gone: sso('gone') }), configuredUrl: () => URL_, recheck: () => (token) => Promise.resolve(token) });
    const caller = await refusing(request({ authorization: 'Bearer gone' }), 'request');
    expect(caller.principal).to.equal(undefined);
    expect(caller.authError?.message).to.equal('invalid token');
  });

  it('answers a known token without a promise, and an unknown one after the look-up', async () => {
    const calls: string[] = [];
    const read = createReadCaller({ authenticator: authenticator({ a: alice }, { b: bob }, calls), configuredUrl: () => URL_ });
    const fast = read(request({ authorization: 'Bearer a' }), 'request');
    expect(fast).to.not.be.instanceOf(Promise);
    expect(fast).to.deep.equal({ principal: alice, token: 'a', via: 'bearer', authError: undefined });
    const slow = read(request({ cookie: 'svc.token=b' }), 'request');
    expect(slow).to.be.instanceOf(Promise);
    expect(await slow).to.deep.equal({ principal: bob, token: 'b', via: 'cookie', authError: undefined });
    expect(calls).to.deep.equal(['known:a', 'known:b', 'authenticate:b']);
  });

  it('gives an anonymous caller when no token is sent', () => {
    const read = createReadCaller({ authenticator: authenticator({}), configuredUrl: () => URL_ });
    expect(read(request({}), 'request')).to.deep.equal({ principal: undefined, token: undefined, via: undefined, authError: undefined });
  });

  it('gives a refused token as data, from either path, and throws any other failure', async () => {
    const read = createReadCaller({ authenticator: authenticator({}), configuredUrl: () => URL_ });
    const revoked = read(request({ authorization: 'Bearer revoked' }), 'request') as Caller;
    expect(revoked.principal).to.equal(undefined);
    expect(revoked.token).to.equal(undefined);
    expect(revoked.authError).to.be.instanceOf(Unauthenticated);
    const unknown = await read(request({ authorization: 'Bearer nope' }), 'request');
    expect(unknown.authError).to.be.instanceOf(Unauthenticated);
    expect(unknown.authError?.message).to.equal('invalid token');
    expect(() => read(request({ authorization: 'Bearer down' }), 'request')).to.throw(Unavailable);
  });

  it('lets the cookie sign in a request that may change something only from svc\'s own origin', async () => {
    const calls: string[] = [];
    const read = createReadCaller({ authenticator: authenticator({ a: alice }, {}, calls), configuredUrl: () => URL_ });
    const cookie = 'svc.token=a';
    const elsewhere = (await read(request({ cookie, origin: 'https://evil.example.com' }, 'POST'), 'request')) as Caller;
    expect(elsewhere.principal).to.equal(undefined);
    expect(elsewhere.authError).to.be.instanceOf(Unauthenticated);
    expect(elsewhere.authError?.message).to.contain("origin 'https://evil.example.com'");
    expect(calls, 'a refused cookie is not even looked up').to.deep.equal([]);
    expect((read(request({ cookie }, 'DELETE'), 'request') as Caller).authError, 'no Origin at all').to.be.instanceOf(Unauthenticated);
    expect((read(request({ cookie, origin: URL_ }, 'POST'), 'request') as Caller).principal).to.equal(alice);
    expect((read(request({ cookie, origin: 'https://evil.example.com' }, 'GET'), 'request') as Caller).principal, 'a safe method').to.equal(alice);
    // A bearer token cannot be planted by another page: no origin rule.
    expect((read(request({ authorization: 'Bearer a', origin: 'https://evil.example.com' }, 'POST'), 'request') as Caller).principal).to.equal(alice);
  });

  it('lets the cookie open a WebSocket only from svc\'s own origin, GET included, with a 403', () => {
    const read = createReadCaller({ authenticator: authenticator({ a: alice }), configuredUrl: () => URL_ });
    const cookie = 'svc.token=a';
    const crossSite = read(request({ cookie, origin: 'https://evil.example.com' }, 'GET'), 'handshake') as Caller;
    expect(crossSite.principal).to.equal(undefined);
    expect(crossSite.authError).to.be.instanceOf(PermissionDenied);
    expect((read(request({ cookie }, 'GET'), 'handshake') as Caller).authError, 'no Origin').to.be.instanceOf(PermissionDenied);
    expect((read(request({ cookie, origin: URL_ }, 'GET'), 'handshake') as Caller).principal).to.equal(alice);
    expect((read(request({ authorization: 'Bearer a', origin: 'https://evil.example.com' }, 'GET'), 'handshake') as Caller).principal).to.equal(alice);
  });

  it('reads the configured url per request', () => {
    let url = URL_;
    const read = createReadCaller({ authenticator: authenticator({ a: alice }), configuredUrl: () => url });
    const from = { cookie: 'svc.token=a', origin: 'https://new.example.com', host: 'internal:8080' };
    expect((read(request(from, 'POST', 'http'), 'request') as Caller).principal).to.equal(undefined);
    url = 'https://new.example.com';
    expect((read(request(from, 'POST', 'http'), 'request') as Caller).principal).to.equal(alice);
  });

  it('reads the host and protocol as Koa does without a trusted proxy', () => {
    expect(hostOf({ host: 'a.example:8080' })).to.equal('a.example:8080');
    expect(hostOf({ host: 'a.example, b.example' })).to.equal('a.example');
    expect(hostOf({ ':authority': 'h2.example', host: 'a.example' } as never)).to.equal('h2.example');
    expect(hostOf({})).to.equal('');
    expect(protocolOf({ encrypted: true })).to.equal('https');
    expect(protocolOf({})).to.equal('http');
    expect(protocolOf(null)).to.equal('http');
  });
});

import { expect } from 'chai';
import { createLocalJWKSet, decodeJwt, decodeProtectedHeader, jwtVerify } from 'jose';
import { AssertionCache } from '../../src/extensions/assertion-cache.js';
import { generateAssertionKey, publicAssertionJwks, type AssertionKey } from '../../src/extensions/assertion-keys.js';
import type { ExtensionRoute } from '../../src/extensions/access.js';
import { assertionForRoute, AssertionsNotConfigured, createIdentityAssertions, type AssertionSubject } from '../../src/extensions/identity-assertion.js';
import type { Principal } from '../../src/principal.js';

const ISSUER = 'https://svc.example';
const T0 = Date.parse('2026-01-01T00:00:00.000Z');

const alice: Principal = { username: 'alice', groups: ['devs', 'qa'], issuer: 'svc', kind: 'session', tokenId: 't1', expiresAt: undefined };
const sso: Principal = { username: 'CgNib2I', displayName: 'bob', groups: ['admins'], issuer: `${ISSUER}/api/idp`, kind: 'sso', tokenId: 't2', expiresAt: undefined };
const job: Principal = { username: 'workload:github:repo:o/r:ref:refs/heads/main', groups: ['gh-o'], issuer: 'https://token.actions.example', kind: 'workload', tokenId: 't3', expiresAt: undefined };

describe('extensions/identity-assertion', () => {
  let keys: AssertionKey[];
  let clock: number;
  let signer: ReturnType<typeof createIdentityAssertions>;

  before(async () => {
    keys = [await generateAssertionKey(new Date(T0))];
  });

  beforeEach(() => {
    clock = T0;
    signer = createIdentityAssertions({ keys: () => keys, issuer: () => ISSUER, now: () => clock });
  });

  async function verify(token: string, extension: string, at = clock) {
    return (await jwtVerify(token, createLocalJWKSet(publicAssertionJwks(keys)), { issuer: ISSUER, audience: `svc-extension:${extension}`, algorithms: ['ES256'], currentDate: new Date(at) })).payload;
  }

  it('signs ES256 claims a backend verifies with the published keys: iss, aud, sub, name, groups, kind, iat, exp 60 s on', async () => {
    const token = signer({ principal: alice, extension: 'tools' });
    expect(decodeProtectedHeader(token)).to.deep.equal({ alg: 'ES256', typ: 'JWT', kid: keys[0]?.kid });
    expect(await verify(token, 'tools')).to.deep.equal({ iss: ISSUER, aud: 'svc-extension:tools', sub: 'alice', name: 'alice', groups: ['devs', 'qa'], kind: 'local', iat: T0 / 1000, exp: T0 / 1000 + 60 });
  });

  it('names the kind (sso, workload) and the display name, and the application and project when the request named one', async () => {
    const ssoClaims = await verify(signer({ principal: sso, extension: 'tools', application: { name: 'team/web', project: 'payments' } }), 'tools');
    expect(ssoClaims).to.include({ sub: 'CgNib2I', name: 'bob', kind: 'sso', application: 'team/web', project: 'payments' });
    const jobClaims = await verify(signer({ principal: job, extension: 'tools' }), 'tools');
    expect(jobClaims).to.include({ sub: job.username, kind: 'workload' });
    expect(jobClaims).to.not.have.any.keys('application', 'project');
  });

  it('is refused for another extension (aud)', async () => {
    const token = signer({ principal: alice, extension: 'tools' });
    let refused: unknown;
    await verify(token, 'secret').catch((err: unknown) => (refused = err));
    expect(String(refused)).to.match(/unexpected "aud" claim value/);
  });

  it('reuses one assertion per caller, extension and application while 30 s or more are left, then signs again', () => {
    const subject: AssertionSubject = { principal: alice, extension: 'tools' };
    const first = signer(subject);
    clock = T0 + 29_000;
    expect(signer(subject)).to.equal(first);
    expect(signer({ principal: alice, extension: 'other' })).to.not.equal(first);
    expect(signer({ ...subject, application: { name: 'team/web', project: 'payments' } })).to.not.equal(first);
    expect(signer({ principal: { ...alice, tokenId: 't9', groups: ['devs'] }, extension: 'tools' }), 'another token: its own groups').to.not.equal(first);
    clock = T0 + 30_000;
    expect(signer(subject)).to.not.equal(first);
  });

  it('signs again, with the new key, once a rotated-in key starts signing', async () => {
    const subject: AssertionSubject = { principal: alice, extension: 'tools' };
    const first = signer(subject);
    const next = { ...(await generateAssertionKey(new Date(T0))), signsFrom: new Date(T0 + 10_000).toISOString() };
    keys = [next, { ...(keys[0] as AssertionKey), retiredAt: next.signsFrom }];
    expect(signer(subject), 'before its time, the old key signs').to.equal(first);
    clock = T0 + 10_000;
    const second = signer(subject);
    expect(decodeProtectedHeader(second).kid).to.equal(next.kid);
    expect((await verify(first, 'tools', T0)).sub, 'the old key is still published').to.equal('alice');
    keys = [keys[1] as AssertionKey];
  });

  it('signs again, with the new iss, as soon as svc\'s url changes: a cached assertion is not reused across it', async () => {
    let issuer = ISSUER;
    const moving = createIdentityAssertions({ keys: () => keys, issuer: () => issuer, now: () => clock });
    const subject: AssertionSubject = { principal: alice, extension: 'tools' };
    const first = moving(subject);
    expect(decodeJwt(first).iss).to.equal(ISSUER);
    issuer = 'https://svc.moved.example';
    clock = T0 + 1000;
    const second = moving(subject);
    expect(second).to.not.equal(first);
    expect(decodeJwt(second).iss).to.equal('https://svc.moved.example');
    expect(moving(subject), 'reused again under the new url').to.equal(second);
  });

  it('never outlives the token it speaks for, and is not reused past the last 30 s of that token', async () => {
    const ending = { ...alice, tokenId: 'ending', expiresAt: T0 / 1000 + 40 };
    const token = signer({ principal: ending, extension: 'tools' });
    expect((await verify(token, 'tools')).exp).to.equal(T0 / 1000 + 40);
    clock = T0 + 10_000;
    expect(signer({ principal: ending, extension: 'tools' }), 'less than 30 s of the token left: signed again').to.not.equal(token);
  });

  it('keeps the cache within its bound', () => {
    const cache = new AssertionCache({ maxEntries: 2, maxBytes: 1 << 20 });
    const bounded = createIdentityAssertions({ keys: () => keys, issuer: () => ISSUER, now: () => clock, cache });
    for (let i = 0; i < 5; i++) bounded({ principal: { ...alice, tokenId: `t${i}` }, extension: 'tools' });
    expect(cache.size).to.equal(2);
  });

  it('fails the request when the keys cannot be read, rather than forward it unsigned', () => {
    const broken = createIdentityAssertions({ keys: () => { throw new Error('svc-secret has no assertion.signingKeys'); }, issuer: () => ISSUER, now: () => clock });
    expect(() => broken({ principal: alice, extension: 'tools' })).to.throw('svc-secret has no assertion.signingKeys');
  });

  describe('assertionForRoute', () => {
    const route = (identityAssertion: boolean): ExtensionRoute => ({
      extension: { name: 'tools', enabled: true, idleConnTimeoutMs: 1000, services: [{ url: 'http://b' }], contentSecurityPolicy: undefined, ...(identityAssertion ? { identityAssertion: true } : {}) },
      principal: alice,
      application: { namespace: 'team', name: 'web', project: 'payments', destination: {} },
      backend: { url: 'http://b' },
    });

    it('signs only for an extension that asked, with the application the route named', async () => {
      expect(assertionForRoute(signer, route(false))).to.equal(undefined);
      const token = assertionForRoute(signer, route(true));
      expect(await verify(String(token), 'tools')).to.include({ application: 'team/web', project: 'payments' });
    });

    it('answers 503 (unavailable) for an extension that asked when the proxy has no signer', () => {
      expect(() => assertionForRoute(undefined, route(true))).to.throw(AssertionsNotConfigured, "extension 'tools' asks for an identity assertion, and this server signs none");
      expect(() => assertionForRoute(undefined, route(false))).to.not.throw();
    });
  });
});

/**
 * The external provider's ID tokens, unit-level: jose-signed tokens against a fake provider
 * connection, for each audience rule, expiry with clock skew, the principal, and JWKS refetch.
 */
import { expect } from 'chai';
import { exportJWK, generateKeyPair, SignJWT, type JWK, type JWTPayload } from 'jose';
import type { Configuration } from 'openid-client';
import { ClaimRuleRefused } from '../../src/claims/evaluate.js';
import { parseClaimRules } from '../../src/claims/rules-config.js';
import { ProblemSink } from '../../src/config/problems.js';
import { checkAudience } from '../../src/oidc/audience.js';
import type { ProviderClient } from '../../src/oidc/client.js';
import type { SsoProvider } from '../../src/oidc/provider.js';
import { CLOCK_SKEW_SECONDS, createSsoVerifier, groupsOf, type GroupSource } from '../../src/oidc/sso-verifier.js';

const ISSUER = 'https://idp.example.com';

function provider(overrides: Partial<SsoProvider> = {}): SsoProvider {
  return {
    issuer: ISSUER, clientID: 'svc', clientSecret: 's', audiences: ['svc', 'svc-cli'], skipAudienceCheckWhenTokenHasNoAudience: false,
    scopes: ['openid'], idTokenClaims: undefined, redirectPath: '/auth/callback', logoutURL: undefined, userInfo: undefined,
    tls: { rootCA: undefined, insecureSkipVerify: false }, ...overrides,
  };
}

interface Keys {
  jwks: JWK[];
  sign(payload: JWTPayload, kid?: string): Promise<string>;
  /** A new key, published at once. */
  add(kid: string): Promise<void>;
  /** A new key that signs but is not published yet (key generation is slow on a busy machine). */
  generate(kid: string): Promise<void>;
  publish(kid: string): void;
}

async function keys(): Promise<Keys> {
  const privates = new Map<string, Awaited<ReturnType<typeof generateKeyPair>>['privateKey']>();
  const publics = new Map<string, JWK>();
  const jwks: JWK[] = [];
  const generate = async (kid: string) => {
    const { privateKey, publicKey } = await generateKeyPair('RS256');
    privates.set(kid, privateKey);
    publics.set(kid, { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' });
  };
  const publish = (kid: string) => void jwks.push(publics.get(kid) as JWK);
  const add = async (kid: string) => {
    await generate(kid);
    publish(kid);
  };
  await add('k1');
  return {
    jwks,
    add,
    generate,
    publish,
    sign: (payload, kid = 'k1') => new SignJWT(payload).setProtectedHeader({ alg: 'RS256', kid }).sign(privates.get(kid) as Awaited<ReturnType<typeof generateKeyPair>>['privateKey']),
  };
}

function fakeClient(p: SsoProvider, k: Keys, fetches: { count: number }): ProviderClient {
  return {
    provider: p,
    fetch: () => {
      fetches.count++;
      return Promise.resolve(new Response(JSON.stringify({ keys: k.jwks }), { headers: { 'content-type': 'application/json' } }));
    },
    configuration: () => Promise.resolve({ serverMetadata: () => ({ issuer: ISSUER, jwks_uri: `${ISSUER}/jwks` }) } as unknown as Configuration),
    close: () => Promise.resolve(),
  };
}

const now = () => Math.floor(Date.now() / 1000);
const claims = (extra: JWTPayload = {}): JWTPayload => ({ iss: ISSUER, sub: 'user-1', aud: 'svc', exp: now() + 600, iat: now(), groups: ['g1', 'g2'], ...extra });

describe('SSO token verifier', () => {
  let k: Keys;
  beforeEach(async () => { k = await keys(); });

  function verifier(p = provider(), fetches = { count: 0 }, cooldownMs = 60_000) {
    return createSsoVerifier({ client: fakeClient(p, k, fetches), groupClaims: () => ['groups'], jwksCooldownMs: cooldownMs, now: Date.now });
  }

  it('applies oidc.config\'s claim rules to every token it takes (a login\'s and a bearer\'s): mapped name and groups, or a refusal with the rule\'s message', async () => {
    const sink = new ProblemSink();
    const claimRules = parseClaimRules({
      claimValidationRules: [{ expression: 'claims.email_verified == true', message: 'the email address is not verified' }],
      claimMappings: { username: { expression: 'claims.preferred_username' }, groups: { expression: 'claims.groups.map(g, "corp:" + g)' } },
    }, sink.scoped('svc-cm').at('oidc.config'));
    expect(sink.problems).to.deep.equal([]);
    const v = verifier(provider({ ...(claimRules !== undefined ? { claimRules } : {}) }));
    const principal = await v.verify(await k.sign(claims({ email_verified: true, preferred_username: 'ann' })));
    expect(principal).to.include({ username: 'ann', displayName: 'ann' });
    expect(principal.groups).to.deep.equal(['corp:g1', 'corp:g2']);
    const err = await v.verify(await k.sign(claims({ email_verified: false, preferred_username: 'ann' }))).then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(ClaimRuleRefused);
    expect((err as ClaimRuleRefused).message).to.equal('the email address is not verified');
    expect((err as ClaimRuleRefused).reason).to.equal('claimValidationRules[0] gave false');
  });

  it('carries the token\'s provider session id (sid) when it has one, a non-empty string only', async () => {
    const v = verifier();
    expect((await v.verify(await k.sign(claims({ sid: 'sid-1' })))).sid).to.equal('sid-1');
    expect(await v.verify(await k.sign(claims({ sid: '' })))).to.not.have.property('sid');
    expect(await v.verify(await k.sign(claims({ sid: 7 })))).to.not.have.property('sid');
    expect(await v.verify(await k.sign(claims()))).to.not.have.property('sid');
  });

  describe('audience', () => {
    const rule = { audiences: ['svc', 'svc-cli'], skipAudienceCheckWhenTokenHasNoAudience: false };
    const cases: [string, unknown, boolean, boolean][] = [
      ['clientID', 'svc', false, true],
      ['cliClientID', 'svc-cli', false, true],
      ['an array holding one allowed', ['other', 'svc-cli'], false, true],
      ['only others', ['other', 'account'], false, false],
      ['none, switch false (the default)', undefined, false, false],
      ['none, switch true', undefined, true, true],
      ['an empty array, switch false', [], false, false],
      ['an empty array, switch true', [], true, true],
    ];
    for (const [what, aud, skip, ok] of cases) {
      it(`${what} -> ${ok ? 'passes' : 'refused'}`, async () => {
        expect(checkAudience(aud, { ...rule, skipAudienceCheckWhenTokenHasNoAudience: skip }).ok).to.equal(ok);
        const payload = claims();
        if (aud === undefined) delete payload.aud; else payload.aud = aud as string[];
        const v = verifier(provider({ skipAudienceCheckWhenTokenHasNoAudience: skip }));
        const result = await v.verify(await k.sign(payload)).then(() => true, () => false);
        expect(result).to.equal(ok);
      });
    }

    it('with allowedAudiences given, only those: clientID is refused unless listed', async () => {
      const v = verifier(provider({ audiences: ['api'] }));
      expect(await v.verify(await k.sign(claims({ aud: 'svc' }))).then(() => 'ok', (e: Error) => e.message)).to.equal('token audience is not allowed');
      expect((await v.verify(await k.sign(claims({ aud: ['svc', 'api'] })))).username).to.equal('user-1');
    });

    it('reads only string audiences: anything else counts as no audience', () => {
      for (const aud of [5, [5], [null], { a: 'svc' }]) {
        expect(checkAudience(aud, rule), JSON.stringify(aud)).to.deep.equal({ ok: false, reason: 'token has no audience' });
        expect(checkAudience(aud, { ...rule, skipAudienceCheckWhenTokenHasNoAudience: true }).ok, JSON.stringify(aud)).to.equal(true);
      }
      expect(checkAudience([5, 'svc'], rule).ok).to.equal(true);
    });

    it('says why a token without audience is refused', async () => {
      const payload = claims();
      delete payload.aud;
      expect(await verifier().verify(await k.sign(payload)).then(() => 'ok', (e: Error) => e.message)).to.equal('token has no audience');
    });
  });

  it('gives the principal: sub, groups, issuer, kind sso, jti or a hash of the token, expiry, issued at', async () => {
    const v = verifier();
    const exp = now() + 600;
    const iat = now() - 5;
    const withJti = await k.sign(claims({ jti: 'id-1', exp, iat }));
    expect(await v.verify(withJti)).to.deep.equal({ username: 'user-1', groups: ['g1', 'g2'], issuer: ISSUER, kind: 'sso', tokenId: 'id-1', expiresAt: exp, issuedAt: iat });
    expect(v.known(withJti)?.tokenId).to.equal('id-1');
    const without = await v.verify(await k.sign(claims()));
    expect(without.tokenId).to.match(/^sha256:[\w-]{43}$/);
  });

  it('refuses an expired token beyond the clock skew, a wrong issuer, a bad signature', async () => {
    const v = verifier();
    const reason = async (token: string) => v.verify(token).then(() => 'ok', (e: Error) => e.message);
    expect(await reason(await k.sign(claims({ exp: now() - 5 })))).to.equal('ok');   // within the skew
    expect(await reason(await k.sign(claims({ exp: now() - 120 })))).to.equal('token has expired');
    expect(await reason(await k.sign(claims({ iss: 'https://other.example.com' })))).to.match(/token is invalid/);
    const token = await k.sign(claims());
    expect(await reason(`${token.slice(0, -4)}AAAA`)).to.match(/token is invalid/);
  });

  it('checks an expired token for renewal as of a moment of its life: signature, issuer and audience still hold', async () => {
    const v = verifier();
    const expired = await k.sign(claims({ exp: now() - 3600, iat: now() - 7200, jti: 'old' }));
    expect(await v.verify(expired).then(() => 'ok', (e: Error) => e.message)).to.equal('token has expired');
    expect((await v.verifyIgnoringExpiry(expired)).tokenId).to.equal('old');
    const otherAudience = await k.sign(claims({ exp: now() - 3600, aud: 'other' }));
    expect(await v.verifyIgnoringExpiry(otherAudience).then(() => 'ok', (e: Error) => e.message)).to.equal('token audience is not allowed');
    expect(await v.verifyIgnoringExpiry(`${expired.slice(0, -4)}AAAA`).then(() => 'ok', (e: Error) => e.message)).to.match(/token is invalid/);
  });

  it('fetches the keys once, again for an unknown kid, and not again within the cool-down', async () => {
    const fetches = { count: 0 };
    const v = verifier(provider(), fetches, 1_000);
    await v.verify(await k.sign(claims()));
    await v.verify(await k.sign(claims({ sub: 'user-2' })));
    expect(fetches.count).to.equal(1);
    await k.add('k2');
    await k.generate('k3');
    const signedWithK3 = await k.sign(claims(), 'k3');
    await new Promise((resolve) => setTimeout(resolve, 1_100));
    expect((await v.verify(await k.sign(claims(), 'k2'))).username).to.equal('user-1');
    expect(fetches.count).to.equal(2);
    k.publish('k3');
    expect(await v.verify(signedWithK3).then(() => 'ok', (e: Error) => e.message)).to.match(/NO_MATCHING_KEY/);
    expect(fetches.count).to.equal(2);
  });

  describe('what mutation testing found untested', () => {
    const message = (p: Promise<unknown>) => p.then(() => 'ok', (e: Error) => e.message);

    function clocked(clock: { ms: number }, groupSource?: GroupSource, client?: ProviderClient) {
      return createSsoVerifier({ client: client ?? fakeClient(provider(), k, { count: 0 }), groupClaims: () => ['groups'], jwksCooldownMs: 60_000, now: () => clock.ms, ...(groupSource !== undefined ? { groupSource } : {}) });
    }

    it('serves a known token until it expires plus the skew, then asks for a verification again', async () => {
      const clock = { ms: Date.now() };
      const exp = Math.floor(clock.ms / 1000) + 600;
      const v = clocked(clock);
      const token = await k.sign(claims({ exp }));
      expect(v.known(token)).to.equal(undefined);
      const principal = await v.verify(token);
      clock.ms = exp * 1000 + 1_000; // expired, within the skew
      expect(v.known(token)).to.equal(principal);
      clock.ms = (exp + CLOCK_SKEW_SECONDS) * 1000 - 1;
      expect(v.known(token)).to.equal(principal);
      clock.ms = (exp + CLOCK_SKEW_SECONDS) * 1000;
      expect(v.known(token)).to.equal(undefined);
      expect(await message(v.verify(token))).to.equal('token has expired');
    });

    it('adds the group source\'s groups, each once, and serves the principal only until they are due again', async () => {
      const clock = { ms: Date.now() };
      const source: GroupSource = async () => ({ groups: ['g2', 'from-userinfo'], untilMs: clock.ms + 60_000 });
      const v = clocked(clock, source);
      const token = await k.sign(claims());
      expect((await v.verify(token)).groups).to.deep.equal(['g1', 'g2', 'from-userinfo']);
      clock.ms += 59_999;
      expect(v.known(token)?.groups).to.deep.equal(['g1', 'g2', 'from-userinfo']);
      clock.ms += 1;
      expect(v.known(token)).to.equal(undefined);
    });

    it('reads groups from a string or a list of strings, nothing else, each once', async () => {
      expect(groupsOf({ a: 'one', b: ['two', 3, 'one', null], c: 4, d: { x: 'y' } }, ['a', 'b', 'c', 'd', 'missing'])).to.deep.equal(['one', 'two']);
      const v = verifier();
      expect((await v.verify(await k.sign(claims({ groups: 'solo' })))).groups).to.deep.equal(['solo']);
    });

    it('refuses a token without sub or exp, and takes an empty jti as none', async () => {
      const v = verifier();
      const { sub: _s, ...noSub } = claims();
      const { exp: _e, ...noExp } = claims();
      expect(await message(v.verify(await k.sign(noSub)))).to.equal('token is invalid: ERR_JWT_CLAIM_VALIDATION_FAILED');
      expect(await message(v.verify(await k.sign(noExp)))).to.equal('token is invalid: ERR_JWT_CLAIM_VALIDATION_FAILED');
      expect((await v.verify(await k.sign(claims({ jti: '' })))).tokenId).to.match(/^sha256:/);
    });

    it('for renewal, refuses what is not a JWT or has no numeric exp, and checks nbf as of the token\'s life', async () => {
      const v = verifier();
      expect(await message(v.verifyIgnoringExpiry('not-a-jwt'))).to.equal('token is invalid');
      const { exp: _e, ...noExp } = claims();
      expect(await message(v.verifyIgnoringExpiry(await k.sign(noExp)))).to.equal('token is invalid');
      expect(await message(v.verifyIgnoringExpiry(await k.sign(claims({ exp: 'soon' as unknown as number }))))).to.equal('token is invalid');
      const expired = await k.sign(claims({ nbf: now() - 7200, iat: now() - 7200, exp: now() - 3600, jti: 'renew' }));
      expect((await v.verifyIgnoringExpiry(expired)).tokenId).to.equal('renew');
    });

    it('says the keys cannot be read when there is no jwks_uri, a key set is not one, or the fetch fails', async () => {
      const base = fakeClient(provider(), k, { count: 0 });
      const noUri: ProviderClient = { ...base, configuration: () => Promise.resolve({ serverMetadata: () => ({ issuer: ISSUER }) } as unknown as Configuration) };
      const failure = async (client: ProviderClient) => {
        const err = await clocked({ ms: Date.now() }, undefined, client).verify(await k.sign(claims())).then(() => undefined, (e: Error) => e);
        return { name: err?.constructor.name, message: err?.message, cause: (err as { cause?: unknown } | undefined)?.cause !== undefined };
      };
      expect(await failure(noUri)).to.deep.equal({ name: 'Unavailable', message: `the OIDC provider ${ISSUER} publishes no jwks_uri`, cause: false });
      const invalid: ProviderClient = { ...base, fetch: () => Promise.resolve(new Response(JSON.stringify({ keys: 'none' }), { headers: { 'content-type': 'application/json' } })) };
      expect(await failure(invalid)).to.deep.equal({ name: 'Unavailable', message: 'the keys of the OIDC provider cannot be read', cause: true });
      const down: ProviderClient = { ...base, fetch: () => Promise.reject(new TypeError('fetch failed')) };
      expect(await failure(down)).to.deep.equal({ name: 'Unavailable', message: 'the keys of the OIDC provider cannot be read', cause: true });
    });
  });
});

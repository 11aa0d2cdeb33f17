/** The checks of an OIDC Back-Channel Logout token (src/oidc/logout-token.ts), with a key of the test's own. */
import { expect } from 'chai';
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose';
import { pino } from 'pino';
import { BACKCHANNEL_LOGOUT_EVENT, LogoutTokenRefused, verifyLogoutToken, type LogoutTokenDeps } from '../../src/oidc/logout-token.js';
import { createMemoryState } from '../../src/state/memory.js';
import type { StateBackend } from '../../src/state/state.js';

const ISSUER = 'https://idp.example';
const NOW = Date.parse('2026-03-01T10:00:00Z');
const nowSeconds = NOW / 1000;

describe('logout token', function () {
  let key: CryptoKey;
  let otherKey: CryptoKey;
  let deps: LogoutTokenDeps;
  let state: StateBackend;

  before(async function () {
    const pair = await generateKeyPair('RS256');
    key = pair.privateKey;
    otherKey = (await generateKeyPair('RS256')).privateKey;
    const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256' };
    state = createMemoryState({ log: pino({ level: 'silent' }) });
    deps = { issuer: ISSUER, clientId: 'svc', keys: async () => createLocalJWKSet({ keys: [jwk] }), state, now: () => NOW };
  });
  after(() => state.close());

  let counter = 0;
  /** The usual claims with `over` applied; a claim set to undefined is left out. */
  const claims = (over: Record<string, unknown> = {}): JWTPayload => ({
    iss: ISSUER, aud: 'svc', iat: nowSeconds - 5, exp: nowSeconds + 115, jti: `jti-${++counter}`, sub: 'alice', sid: 'sid-1',
    events: { [BACKCHANNEL_LOGOUT_EVENT]: {} }, ...over,
  });
  const sign = (payload: JWTPayload, with_ = key) => new SignJWT(payload).setProtectedHeader({ alg: 'RS256', kid: 'k1', typ: 'logout+jwt' }).sign(with_);

  async function refusal(token: string): Promise<string> {
    const err = await verifyLogoutToken(deps, token).then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(LogoutTokenRefused);
    return (err as Error).message;
  }

  it('accepts a token of the provider and names its sid and sub', async function () {
    const token = await sign(claims({ jti: 'accepted-1' }));
    expect(await verifyLogoutToken(deps, token)).to.deep.equal({ jti: 'accepted-1', sub: 'alice', sid: 'sid-1' });
    expect(await verifyLogoutToken(deps, await sign(claims({ sid: undefined, jti: 'sub-only' })))).to.deep.equal({ jti: 'sub-only', sub: 'alice' });
  });

  it('refuses a bad signature', async function () {
    expect(await refusal(await sign(claims(), otherKey))).to.equal('the logout token is invalid: ERR_JWS_SIGNATURE_VERIFICATION_FAILED');
  });

  it('refuses another audience and another issuer', async function () {
    expect(await refusal(await sign(claims({ aud: 'someone-else' })))).to.equal('the logout token\'s aud is not accepted: unexpected "aud" claim value');
    expect(await refusal(await sign(claims({ iss: 'https://evil.example' })))).to.equal('the logout token\'s iss is not accepted: unexpected "iss" claim value');
  });

  it('refuses a nonce: an ID token is not a logout token', async function () {
    expect(await refusal(await sign(claims({ nonce: 'n' })))).to.equal('the logout token has a nonce (an ID token is not a logout token)');
  });

  it('refuses a token without the events claim, or without the back-channel logout event in it', async function () {
    expect(await refusal(await sign(claims({ events: undefined })))).to.equal('the logout token has no events claim');
    expect(await refusal(await sign(claims({ events: { 'http://example/other': {} } })))).to.equal(`the logout token's events claim has no ${BACKCHANNEL_LOGOUT_EVENT} object`);
  });

  it('refuses a jti seen before, while it could still be accepted', async function () {
    const token = await sign(claims({ jti: 'replayed-1' }));
    await verifyLogoutToken(deps, token);
    expect(await refusal(token)).to.equal('the logout token was used before (jti)');
    const ttl = await state.ttlMs(`backchannel-jti:${(await import('node:crypto')).createHash('sha256').update(`${ISSUER}\nreplayed-1`).digest('base64url')}`);
    expect(ttl).to.be.a('number').within(1, (600 + 30 - 5) * 1000);
  });

  it('refuses a replay 10 s later, and at the end of the token\'s life: the mark lives in seconds, not milliseconds', async function () {
    let clock = NOW;
    const moving = createMemoryState({ now: () => clock });
    try {
      const at = { ...deps, state: moving, now: () => clock };
      const token = await sign(claims({ jti: 'replayed-later' }));
      await verifyLogoutToken(at, token);
      clock = NOW + 10_000;
      const again = await verifyLogoutToken(at, token).then(() => undefined, (e: unknown) => e);
      expect(again).to.be.instanceOf(LogoutTokenRefused);
      expect((again as Error).message).to.equal('the logout token was used before (jti)');
      // The last second its iat is still accepted: 600 s after it (issued 5 s before NOW).
      const old = await sign(claims({ jti: 'replayed-at-the-end', exp: nowSeconds + 700 }));
      await verifyLogoutToken(at, old);
      clock = NOW + 595_000;
      const late = await verifyLogoutToken(at, old).then(() => undefined, (e: unknown) => e);
      expect((late as Error).message).to.equal('the logout token was used before (jti)');
    } finally {
      await moving.close();
    }
  });

  it('refuses an expired token and one issued in the future', async function () {
    expect(await refusal(await sign(claims({ iat: nowSeconds - 200, exp: nowSeconds - 31 })))).to.equal('the logout token has expired');
    expect(await refusal(await sign(claims({ iat: nowSeconds + 31, exp: nowSeconds + 150 })))).to.equal('the logout token is issued in the future (iat)');
  });

  it('refuses a token without iat, jti, or both sub and sid, and one too old', async function () {
    expect(await refusal(await sign(claims({ iat: undefined })))).to.equal('the logout token has no iat');
    expect(await refusal(await sign(claims({ jti: undefined })))).to.equal('the logout token has no jti');
    expect(await refusal(await sign(claims({ sub: undefined, sid: undefined })))).to.equal('the logout token names neither sub nor sid');
    expect(await refusal(await sign(claims({ iat: nowSeconds - 601, exp: nowSeconds + 60 })))).to.equal('the logout token is older than 600 s (iat)');
  });
});

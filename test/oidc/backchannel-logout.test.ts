/**
 * Back-channel logout tokens from an upstream `oidc` connector of the bundled provider
 * (src/oidc/backchannel-logout.ts with src/idp/upstream-logout.ts): the token's issuer and
 * audience choose the connector, whose keys and the same rules then verify it; an accepted token
 * ends the provider sessions its upstream `sid` (or `sub`) logged in, and svc's sessions of them.
 * The connector is a stand-in with a key of the test's own (the real flow, with a real
 * upstream, is test/e2e/idp-upstream-backchannel-logout.test.ts); the links are in memory state.
 */
import { expect } from 'chai';
import { createLocalJWKSet, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWTPayload } from 'jose';
import { pino } from 'pino';
import type { Connector } from '../../connectors/connector.js';
import type { ProviderEndOutcome } from '../../src/idp/session-end.js';
import { createUpstreamLinks, type UpstreamLinks } from '../../src/idp/storage/upstream-sessions.js';
import { upstreamLogoutFor } from '../../src/idp/upstream-logout.js';
import { backchannelLogout, type BackchannelLogoutDeps } from '../../src/oidc/backchannel-logout.js';
import { BACKCHANNEL_LOGOUT_EVENT, LogoutTokenRefused } from '../../src/oidc/logout-token.js';
import { createMemoryState } from '../../src/state/memory.js';
import type { StateBackend } from '../../src/state/state.js';

const SVC_ISSUER = 'https://svc.example/api/idp';
const UPSTREAM = 'https://login.corp.example';
const NOW = Date.parse('2026-03-01T10:00:00Z');
const nowSeconds = NOW / 1000;
const SOURCE = { ip: '198.51.100.20' };

describe('back-channel logout from an upstream oidc connector', function () {
  let key: CryptoKey;
  let otherKey: CryptoKey;
  let state: StateBackend;
  let links: UpstreamLinks;
  let deps: BackchannelLogoutDeps;
  const providerEnds: [string, string, string][] = [];
  const svcEnds: [string, string, string][] = [];

  before(async function () {
    const pair = await generateKeyPair('RS256');
    key = pair.privateKey;
    otherKey = (await generateKeyPair('RS256')).privateKey;
    const jwks = createLocalJWKSet({ keys: [{ ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'RS256' }] });
    state = createMemoryState({ log: pino({ level: 'silent' }) });
    links = createUpstreamLinks(state);
    const corp: Connector = {
      kind: 'browser',
      begin: () => Promise.reject(new Error('not used')),
      complete: () => Promise.reject(new Error('not used')),
      logoutTokens: { issuer: UPSTREAM, clientId: 'svc-at-corp', keys: async () => jwks },
    };
    const sessionEnd = {
      async endByUid(uid: string, account: string, via: string): Promise<ProviderEndOutcome> {
        providerEnds.push([uid, account, via]);
        return { outcome: 'ended', sids: [`svc-sid-of-${uid}`] };
      },
    };
    const sessions = {
      async endBySid(issuer: string, sid: string, context: { via: string }) {
        svcEnds.push([issuer, sid, context.via]);
        return 1;
      },
      endFromIssuer: () => Promise.reject(new Error('not the upstream path')),
    };
    deps = {
      token: { issuer: SVC_ISSUER, clientId: 'svc', keys: () => Promise.reject(new Error('not the own path')), state, now: () => NOW },
      sessions,
      upstream: (issuer, audiences) => upstreamLogoutFor({
        connectors: { list: () => [{ id: 'corp', name: 'Corp', type: 'oidc' }], get: (id) => (id === 'corp' ? corp : undefined) },
        links, sessionEnd, sessions, svcIssuer: SVC_ISSUER,
      }, issuer, audiences),
    };
  });
  after(() => state.close());
  beforeEach(() => {
    providerEnds.length = 0;
    svcEnds.length = 0;
  });

  let counter = 0;
  const claims = (over: Record<string, unknown> = {}): JWTPayload => ({
    iss: UPSTREAM, aud: 'svc-at-corp', iat: nowSeconds - 5, exp: nowSeconds + 115, jti: `jti-${++counter}`, sub: 'alice', sid: 'up-sid-1',
    events: { [BACKCHANNEL_LOGOUT_EVENT]: {} }, ...over,
  });
  const sign = (payload: JWTPayload, with_ = key) => new SignJWT(payload).setProtectedHeader({ alg: 'RS256', kid: 'k1', typ: 'logout+jwt' }).sign(with_);
  const link = (sid: string, uid: string) => links.link({ issuer: UPSTREAM, sub: 'alice', sid }, uid, 'sub-of-alice', 60_000, async () => true);

  async function refusal(token: string): Promise<string> {
    const err = await backchannelLogout(deps, token, SOURCE).then(() => undefined, (e: unknown) => e);
    expect(err).to.be.instanceOf(LogoutTokenRefused);
    expect(providerEnds, 'nothing ended').to.deep.equal([]);
    return (err as Error).message;
  }

  it('ends the provider session the upstream sid logged in, and svc\'s sessions of it', async function () {
    await link('up-sid-1', 'uid-1');
    await link('up-sid-2', 'uid-2');
    const done = await backchannelLogout(deps, await sign(claims()), SOURCE);
    expect(done).to.deep.equal({ issuer: UPSTREAM, ended: 1, sub: 'alice', sid: 'up-sid-1' });
    expect(providerEnds).to.deep.equal([['uid-1', 'sub-of-alice', 'upstream-backchannel']]);
    expect(svcEnds).to.deep.equal([[SVC_ISSUER, 'svc-sid-of-uid-1', 'backchannel']]);
    expect(await links.ofSid(UPSTREAM, 'up-sid-1'), 'forgotten').to.deep.equal([]);
  });

  it('ends every provider session of the upstream sub still linked when the token names no sid', async function () {
    await link('up-sid-3', 'uid-3');
    const done = await backchannelLogout(deps, await sign(claims({ sid: undefined })), SOURCE);
    // uid-1 ended with its sid above, and left both indexes then.
    expect(done).to.deep.equal({ issuer: UPSTREAM, ended: 2, sub: 'alice' });
    expect(providerEnds.map(([uid]) => uid).sort()).to.deep.equal(['uid-2', 'uid-3']);
    expect(await links.ofSub(UPSTREAM, 'alice')).to.deep.equal([]);
  });

  it('refuses a bad signature', async function () {
    expect(await refusal(await sign(claims(), otherKey))).to.equal('the logout token is invalid: ERR_JWS_SIGNATURE_VERIFICATION_FAILED');
  });

  it('refuses another audience and an issuer it does not know', async function () {
    const unknown = 'the logout token\'s issuer and audience are not a provider svc takes logout tokens from';
    expect(await refusal(await sign(claims({ aud: 'someone-else' })))).to.equal(unknown);
    expect(await refusal(await sign(claims({ iss: 'https://evil.example' })))).to.equal(unknown);
  });

  it('refuses a nonce, a token without events, and a replayed jti', async function () {
    expect(await refusal(await sign(claims({ nonce: 'n' })))).to.equal('the logout token has a nonce (an ID token is not a logout token)');
    expect(await refusal(await sign(claims({ events: undefined })))).to.equal('the logout token has no events claim');
    const once = await sign(claims({ sid: 'up-sid-none', jti: 'replayed-1' }));
    await backchannelLogout(deps, once, SOURCE);
    expect(await refusal(once)).to.equal('the logout token was used before (jti)');
  });
});

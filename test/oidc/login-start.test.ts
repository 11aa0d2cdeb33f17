/**
 * The start of a browser login (src/oidc/login-start.ts): each login gets a fresh, unguessable
 * state, nonce and PKCE verifier, sent to the provider and kept in the sealed cookie that only
 * this browser holds. A nonce that repeats would let an ID token issued for one login be replayed
 * into another. The provider's configuration is built from metadata here (no provider is asked:
 * building the authorization URL needs none).
 */
import { createHash } from 'node:crypto';
import { expect } from 'chai';
import * as client from 'openid-client';
import { Unauthenticated } from '../../src/errors.js';
import { createSealer } from '../../src/lib/sealed.js';
import type { ProviderClient } from '../../src/oidc/client.js';
import { LOGIN_STATE_COOKIE, LOGIN_STATE_TTL_MS, openLoginState, startLogin, type LoginStartDeps, type LoginState } from '../../src/oidc/login-start.js';
import type { SsoProvider } from '../../src/oidc/provider.js';

const ISSUER = 'https://idp.example.org';
const SERVER = 'https://svc.example.org';

function deps(provider: Partial<SsoProvider> = {}, now = () => 1_700_000_000_000): LoginStartDeps {
  const sso: SsoProvider = {
    issuer: ISSUER, clientID: 'svc', clientSecret: undefined, audiences: ['svc'], skipAudienceCheckWhenTokenHasNoAudience: false,
    scopes: ['openid', 'profile', 'groups'], idTokenClaims: undefined, redirectPath: '/auth/callback', logoutURL: undefined,
    userInfo: undefined, tls: { rootCA: undefined, insecureSkipVerify: false }, ...provider,
  };
  const configuration = new client.Configuration({ issuer: ISSUER, authorization_endpoint: `${ISSUER}/auth` }, 'svc');
  const providerClient: ProviderClient = { provider: sso, fetch: () => Promise.reject(new Error('no fetch in this test')), configuration: async () => configuration, close: async () => undefined };
  const sealer = createSealer('login-flow-test-key-0123456789ab', 'login-state');
  return { client: providerClient, sealer: () => sealer, serverUrl: () => `${SERVER}/`, now };
}

interface Started { readonly params: URLSearchParams; readonly login: LoginState; readonly cookie: string }

async function start(d: LoginStartDeps, returnUrl?: string, connectorId?: string): Promise<Started> {
  const { authorizationUrl, cookie } = await startLogin(d, returnUrl, connectorId);
  const url = new URL(authorizationUrl);
  expect(`${url.origin}${url.pathname}`).to.equal(`${ISSUER}/auth`);
  return { params: url.searchParams, login: openLoginState(d, cookie), cookie };
}

describe('oidc/login-start', () => {
  it('gives every login a fresh, unguessable nonce, sent to the provider and kept in the cookie', async () => {
    const d = deps();
    const logins = await Promise.all(Array.from({ length: 50 }, () => start(d)));
    const nonces = logins.map((l) => l.login.nonce);
    expect(new Set(nonces).size).to.equal(logins.length);
    for (const { params, login } of logins) {
      expect(params.get('nonce')).to.equal(login.nonce);
      // At least 128 random bits, base64url: 22 characters or more.
      expect(login.nonce).to.match(/^[A-Za-z0-9_-]{22,}$/);
      expect(login.nonce).to.not.equal(login.state);
      expect(login.nonce).to.not.equal(login.verifier);
    }
  });

  it('gives every login a fresh state and PKCE verifier, and sends the verifier\'s S256 challenge', async () => {
    const d = deps();
    const logins = await Promise.all(Array.from({ length: 20 }, () => start(d)));
    expect(new Set(logins.map((l) => l.login.state)).size).to.equal(logins.length);
    expect(new Set(logins.map((l) => l.login.verifier)).size).to.equal(logins.length);
    for (const { params, login } of logins) {
      expect(params.get('state')).to.equal(login.state);
      expect(login.state).to.match(/^[A-Za-z0-9_-]{22,}$/);
      expect(params.get('code_challenge_method')).to.equal('S256');
      expect(params.get('code_challenge')).to.equal(createHash('sha256').update(login.verifier).digest('base64url'));
      expect(params.get('code_verifier')).to.equal(null);
    }
  });

  it('asks for the configured scopes at the redirect URI on svc\'s url, with the claims and connector asked for', async () => {
    const plain = await start(deps());
    expect(plain.params.get('redirect_uri')).to.equal(`${SERVER}/auth/callback`);
    expect(plain.params.get('scope')).to.equal('openid profile groups');
    expect(plain.params.get('client_id')).to.equal('svc');
    expect(plain.params.get('response_type')).to.equal('code');
    expect(plain.params.has('claims')).to.equal(false);
    expect(plain.params.has('connector_id')).to.equal(false);
    const asked = await start(deps({ idTokenClaims: { groups: { essential: true } }, redirectPath: '/pkce/verify' }), undefined, 'ldap');
    expect(asked.params.get('redirect_uri')).to.equal(`${SERVER}/pkce/verify`);
    expect(JSON.parse(asked.params.get('claims') ?? '')).to.deep.equal({ id_token: { groups: { essential: true } } });
    expect(asked.params.get('connector_id')).to.equal('ldap');
  });

  it('builds the redirect URI on svc\'s url without its trailing slashes', async () => {
    const d = { ...deps(), serverUrl: () => `${SERVER}//` };
    expect((await start(d)).params.get('redirect_uri')).to.equal(`${SERVER}/auth/callback`);
  });

  it('keeps a return URL on svc only, and gives the login five minutes', async () => {
    const d = deps();
    expect((await start(d, `${SERVER}/applications?x=1`)).login.returnUrl).to.equal(`${SERVER}/applications?x=1`);
    expect((await start(d, 'https://evil.example.org/')).login.returnUrl).to.equal('/');
    expect((await start(d)).login.expiresAt).to.equal(1_700_000_000_000 + LOGIN_STATE_TTL_MS);
  });

  it('names its cookie svc.oauthstate, as docs/sso.md says: one of svc\'s own svc.* cookies a backend cannot set', () => {
    expect(LOGIN_STATE_COOKIE).to.equal('svc.oauthstate');
  });

  it('opens only its own sealed cookie, and only for five minutes', async () => {
    let now = 1_700_000_000_000;
    const d = deps({}, () => now);
    const { cookie, login } = await start(d);
    const refusal = (value: string | undefined): string => {
      try {
        openLoginState(d, value);
        return 'opened';
      } catch (err: unknown) {
        expect(err).to.be.instanceOf(Unauthenticated);
        return (err as Error).message;
      }
    };
    // One character changed in the sealed body (a character appended may be dropped by base64url decoding).
    const flipped = `${cookie.slice(0, 40)}${cookie[40] === 'A' ? 'B' : 'A'}${cookie.slice(41)}`;
    for (const bad of [undefined, '', flipped, createSealer('another-key-0123456789abcdef0123', 'login-state').seal(JSON.stringify(login))]) {
      expect(refusal(bad)).to.match(/^no login in progress in this browser/);
    }
    now += LOGIN_STATE_TTL_MS - 1;
    expect(openLoginState(d, cookie)).to.deep.equal(login);
    now += 1;
    expect(refusal(cookie)).to.equal('the login took longer than 5 minutes: start again at /auth/login');
  });
});

/**
 * The `oidc` connector against oidc-provider as its upstream (./upstream-provider.ts): claim
 * mapping, userIDKey/userNameKey, groups only with both switches, email_verified, the nonce and
 * the PKCE verifier checked, refresh through the upstream's refresh token and a refused one,
 * and TLS through rootCA with a test CA against a clear certificate error without it.
 */
import { expect } from 'chai';
import { pino, type Logger } from 'pino';
import type { BrowserConnector, Connector, Identity, LoginContext } from '../../../connectors/connector.js';
import { oidc } from '../../../connectors/oidc/index.js';
import { upstreamFetches, type UpstreamFetches } from '../../../src/idp/connectors/upstream-fetch.js';
import { makeTestCa } from '../../helpers/test-ca.js';
import { openThroughType } from '../connector-suite.js';
import { CALLBACK, startUpstreamProvider, UPSTREAM_CLIENT_ID, UPSTREAM_CLIENT_SECRET, type UpstreamProvider } from './upstream-provider.js';

const SECRETS = { 'oidc.clientSecret': UPSTREAM_CLIENT_SECRET };

function capture(): { lines: () => string; log: Logger } {
  const text: string[] = [];
  return { lines: () => text.join(''), log: pino({ level: 'trace' }, { write: (line: string) => void text.push(line) }) };
}

function browser(connector: Connector): BrowserConnector {
  if (connector.kind !== 'browser') throw new Error('the oidc connector is a browser connector');
  return connector;
}

const context = (extra: Partial<LoginContext> = {}): LoginContext => ({ callbackUrl: CALLBACK, wantGroups: true, signal: AbortSignal.timeout(10_000), ...extra });

describe('connectors/oidc: the upstream OIDC connector against oidc-provider', function () {
  this.timeout(20_000);
  let upstream: UpstreamProvider;
  let fetches: UpstreamFetches;
  let logged: ReturnType<typeof capture>;

  before(async () => {
    upstream = await startUpstreamProvider();
    upstream.accounts.set('alice', { idToken: { name: 'Alice Liddell', preferred_username: 'alice', email: 'alice@example.org', email_verified: true, groups: ['admins', 'devs'] } });
    upstream.accounts.set('carol', { idToken: { name: 'Carol', email: 'carol@example.org', email_verified: true }, userinfo: { name: 'Carol', email: 'carol@example.org', email_verified: true, groups: ['ops'] } });
    upstream.accounts.set('dave', { idToken: { name: 'Dave', email: 'dave@example.org' } });
    upstream.accounts.set('erin', { idToken: { name: 'Erin', email: 'erin@example.org', email_verified: false } });
    upstream.accounts.set('azure', { idToken: { oid: 'oid-42', upn: 'frank@corp.example', mail: 'frank@corp.example', email_verified: true, roles: ['svc-admins', 'other'], dept: 'it', team: 'web' } });
  });
  after(() => upstream?.close());
  beforeEach(() => {
    logged = capture();
    fetches = upstreamFetches(logged.log, false);
  });
  afterEach(() => fetches.close());

  const open = (extra: Record<string, unknown> = {}): BrowserConnector => browser(openThroughType(oidc, {
    issuer: upstream.issuer, clientID: UPSTREAM_CLIENT_ID, clientSecret: '$oidc.clientSecret', ...extra,
  }, SECRETS, logged.log, { upstreamFetch: fetches.upstreamFetch }));

  async function login(connector: BrowserConnector, who: string, ctx = context(), tamper: (saved: Record<string, string>) => void = () => undefined): Promise<Identity> {
    upstream.loginAs = who;
    const start = await connector.begin('txn-state-1', ctx);
    if (start.via !== 'redirect') throw new Error('expected a redirect');
    const params = await upstream.roundTrip(start.url);
    const saved = JSON.parse(start.saved ?? '{}') as Record<string, string>;
    tamper(saved);
    return connector.complete(params, JSON.stringify(saved), ctx);
  }

  it('sends PKCE (S256), a nonce, the state and openid with the default scopes', async () => {
    const start = await open().begin('txn-state-1', context());
    const url = new URL(start.via === 'redirect' ? start.url : '');
    expect(url.origin).to.equal(upstream.issuer);
    expect(url.searchParams.get('scope')).to.equal('openid profile email');
    expect(url.searchParams.get('code_challenge_method')).to.equal('S256');
    expect(url.searchParams.get('code_challenge')).to.match(/^[\w-]{43}$/);
    expect(url.searchParams.get('nonce')).to.have.length.greaterThan(20);
    expect(url.searchParams.get('state')).to.equal('txn-state-1');
    expect(url.searchParams.get('redirect_uri')).to.equal(CALLBACK);
    expect(url.searchParams.has('prompt')).to.equal(false);
  });

  it('asks offline_access, with the prompt type, only when the client wants a refresh token', async () => {
    const connector = open({ promptType: 'login' });
    const offline = await connector.begin('s', context({ offlineAccess: true }));
    const url = new URL(offline.via === 'redirect' ? offline.url : '');
    expect(url.searchParams.get('scope')).to.equal('openid profile email offline_access');
    expect(url.searchParams.get('prompt')).to.equal('login');
  });

  it('maps the standard claims: sub, name, preferred_username, email, email_verified; no groups by default', async () => {
    const identity = await login(open(), 'alice');
    expect(identity).to.deep.include({ userId: 'alice', username: 'Alice Liddell', preferredUsername: 'alice', email: 'alice@example.org', emailVerified: true });
    expect(identity.groups).to.deep.equal([]);
  });

  it('takes userIDKey, userNameKey and claimMapping (preferred_username, email, groups)', async () => {
    const identity = await login(open({
      userIDKey: 'oid', userNameKey: 'upn', scopes: ['profile', 'email', 'groups'], insecureEnableGroups: true, getUserInfo: true,
      claimMapping: { preferred_username: 'upn', email: 'mail', groups: 'roles' },
      claimModifications: { newGroupFromClaims: [{ claims: ['dept', 'team'], delimiter: '/', prefix: 'org' }] },
    }), 'azure');
    expect(identity).to.deep.include({ userId: 'oid-42', username: 'frank@corp.example', preferredUsername: 'frank@corp.example', email: 'frank@corp.example' });
    expect(identity.groups).to.deep.equal(['svc-admins', 'other', 'org/it/web']);
  });

  it('gives groups only when both insecureEnableGroups and getUserInfo are true', async () => {
    const scopes = ['profile', 'email', 'groups'];
    expect((await login(open({ scopes, insecureEnableGroups: true }), 'alice')).groups, 'insecureEnableGroups alone').to.deep.equal([]);
    expect((await login(open({ scopes, getUserInfo: true }), 'alice')).groups, 'getUserInfo alone').to.deep.equal([]);
    expect((await login(open({ scopes, insecureEnableGroups: true, getUserInfo: true }), 'alice')).groups, 'both').to.deep.equal(['admins', 'devs']);
    expect((await login(open({ scopes, insecureEnableGroups: true, getUserInfo: true }), 'carol')).groups, 'from userinfo').to.deep.equal(['ops']);
  });

  it('refuses a user outside allowedGroups and keeps only the allowed groups of one inside', async () => {
    const connector = open({ scopes: ['profile', 'email', 'groups'], insecureEnableGroups: true, getUserInfo: true, allowedGroups: ['devs'] });
    expect((await login(connector, 'alice')).groups).to.deep.equal(['devs']);
    const err = await login(connector, 'carol').then(() => undefined, (e: unknown) => e as Error);
    expect(err?.message).to.equal('your account is not in any group allowed to log in here');
  });

  it('refuses a missing email_verified unless insecureSkipEmailVerified, and passes a false one on', async () => {
    const err = await login(open(), 'dave').then(() => undefined, (e: unknown) => e as Error & { code?: string });
    expect(err?.code).to.equal('unavailable');
    expect(logged.lines()).to.contain('the \\"email_verified\\" claim is missing');
    expect((await login(open({ insecureSkipEmailVerified: true }), 'dave')).emailVerified).to.equal(true);
    expect((await login(open(), 'erin')).emailVerified).to.equal(false);
  });

  it('refuses a code whose ID token carries another nonce', async () => {
    const err = await login(open(), 'alice', context(), (saved) => { saved['nonce'] = 'not-the-nonce-that-was-sent'; }).then(() => undefined, (e: unknown) => e as Error & { code?: string });
    expect(err?.code).to.equal('permission_denied');
    expect(logged.lines()).to.contain("the provider's answer does not verify").and.to.contain('"claim":"nonce"');
  });

  it('refuses a code redeemed with another PKCE verifier (the upstream says invalid_grant)', async () => {
    const err = await login(open(), 'alice', context(), (saved) => { saved['verifier'] = 'x'.repeat(43); }).then(() => undefined, (e: unknown) => e as Error & { code?: string });
    expect(err?.code).to.equal('permission_denied');
    expect(logged.lines()).to.contain('invalid_grant');
  });

  it('refuses a callback carrying the upstream\'s error, naming the error only', async () => {
    const err = await open().complete(new URLSearchParams({ error: 'access_denied', error_description: 'User cancelled', state: 's' }), undefined, context()).then(() => undefined, (e: unknown) => e as Error);
    expect(err?.message).to.equal('the identity provider did not log you in (access_denied)');
  });

  it('refreshes through the upstream\'s refresh token, and gets null once the upstream refuses it', async () => {
    upstream.accounts.set('grace', { idToken: { name: 'Grace', email: 'grace@example.org', email_verified: true } });
    const connector = open();
    const identity = await login(connector, 'grace', context({ offlineAccess: true }));
    expect(identity.connectorData, 'the refresh token is kept').to.be.a('string');
    expect(identity.connectorData).not.to.contain('Grace');
    upstream.accounts.set('grace', { idToken: { name: 'Grace Hopper', email: 'grace@example.org', email_verified: true } });
    const fresh = await connector.refresh?.(identity, context());
    expect(fresh).to.deep.include({ userId: 'grace', username: 'Grace Hopper' });
    upstream.accounts.delete('grace');
    expect(await connector.refresh?.(fresh ?? identity, context()), 'deprovisioned upstream').to.equal(null);
    expect(logged.lines()).to.contain('the provider refused the refresh token');
    expect(await connector.refresh?.({ ...identity, connectorData: JSON.stringify({ refreshToken: 'forged', sub: 'grace' }) }, context())).to.equal(null);
  });

  it('refuses a refresh whose claims name another user under userIDKey', async () => {
    upstream.accounts.set('heidi', { idToken: { oid: 'oid-1', name: 'Heidi', email: 'heidi@example.org', email_verified: true } });
    const connector = open({ userIDKey: 'oid' });
    const identity = await login(connector, 'heidi', context({ offlineAccess: true }));
    expect(identity.userId).to.equal('oid-1');
    upstream.accounts.set('heidi', { idToken: { oid: 'oid-2', name: 'Heidi', email: 'heidi@example.org', email_verified: true } });
    const err = await connector.refresh?.(identity, context()).then(() => undefined, (e: unknown) => e as Error & { code?: string });
    expect(err?.code).to.equal('unavailable');
    expect(logged.lines()).to.contain('names another user');
  });

  it('has nothing to refresh with when the login got no refresh token', async () => {
    expect(await open().refresh?.({ userId: 'x', username: 'x', emailVerified: true, groups: [] }, context())).to.equal(null);
  });

  it('says the provider is unavailable, with the reason in the log, when discovery fails', async () => {
    const err = await browser(openThroughType(oidc, { issuer: `${upstream.issuer}/nowhere`, clientID: 'a', clientSecret: 'b' }, {}, logged.log, { upstreamFetch: fetches.upstreamFetch }))
      .begin('s', context()).then(() => undefined, (e: unknown) => e as Error & { code?: string });
    expect(err?.message).to.equal('the identity source is unreachable; try again later');
    expect(logged.lines()).to.contain('answered HTTP 404');
  });

  it('moves the client secret from the Basic header to the body when the provider refuses the header, and stays there', async () => {
    const postOnly = await startUpstreamProvider({ refuseBasicAuth: true });
    try {
      postOnly.accounts.set('alice', { idToken: { name: 'Alice', email: 'alice@example.org', email_verified: true } });
      postOnly.loginAs = 'alice';
      const connector = browser(openThroughType(oidc, { issuer: postOnly.issuer, clientID: UPSTREAM_CLIENT_ID, clientSecret: UPSTREAM_CLIENT_SECRET }, {}, logged.log, { upstreamFetch: fetches.upstreamFetch }));
      for (let i = 0; i < 2; i++) {
        const start = await connector.begin('s', context());
        const params = await postOnly.roundTrip(start.via === 'redirect' ? start.url : '');
        expect((await connector.complete(params, start.saved, context())).userId).to.equal('alice');
      }
      expect(logged.lines().match(/refused the client secret in a Basic header/g), 'once').to.have.length(1);
    } finally {
      await postOnly.close();
    }
  });

  it('says so in the log, as a misconfiguration, when the provider refuses the client secret', async () => {
    const connector = open({ clientSecret: 'not-the-secret', basicAuthUnsupported: false });
    const err = await login(connector, 'alice').then(() => undefined, (e: unknown) => e as Error);
    expect(err?.message).to.equal('the identity source could not complete the login; the server log says why');
    expect(logged.lines()).to.contain("the provider refused svc's client credentials").and.not.to.contain('not-the-secret');
  });

  describe('over HTTPS with a certificate from a test CA', () => {
    const ca = makeTestCa();
    let secure: UpstreamProvider;
    before(async () => {
      secure = await startUpstreamProvider({ ca });
      secure.accounts.set('alice', { idToken: { name: 'Alice', email: 'alice@example.org', email_verified: true } });
    });
    after(() => secure?.close());

    const openSecure = (extra: Record<string, unknown>): BrowserConnector => browser(openThroughType(oidc, {
      issuer: secure.issuer, clientID: UPSTREAM_CLIENT_ID, clientSecret: UPSTREAM_CLIENT_SECRET, ...extra,
    }, {}, logged.log, { upstreamFetch: fetches.upstreamFetch }));

    it('logs in with the CA given as rootCA', async () => {
      const connector = openSecure({ rootCA: ca.caPem });
      secure.loginAs = 'alice';
      const start = await connector.begin('s', context());
      const params = await secure.roundTrip(start.via === 'redirect' ? start.url : '');
      expect((await connector.complete(params, start.saved, context())).userId).to.equal('alice');
    });

    it('fails with a clear certificate error naming the host without it', async () => {
      const err = await openSecure({}).begin('s', context()).then(() => undefined, (e: unknown) => e as Error & { code?: string });
      expect(err?.code).to.equal('unavailable');
      const host = new URL(secure.issuer).host;
      expect(logged.lines()).to.contain(`the certificate of ${host} is not trusted: give its CA as rootCA`);
    });
  });
});

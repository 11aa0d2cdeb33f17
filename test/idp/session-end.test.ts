/**
 * Ending a session of the bundled provider from svc's side (src/idp/session-end.ts), on the
 * provider itself (in process, memory state, a test double of a redirect connector): the `svc`
 * client's `sid` leads to the session (src/idp/storage/session-sids.ts); a session is ended only
 * for its own account, and once ended it logs nobody in again without the connector, nor does
 * svc's refresh token of it work. The command line's client `svc-cli` gets `sid` too, and its
 * `sid` revokes its offline grant, with the provider session or after it.
 */
import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import * as client from 'openid-client';
import { pino } from 'pino';
import type { BrowserConnector, Identity } from '../../connectors/connector.js';
import { requestTarget, type RequestTarget } from '../../src/http/request-target.js';
import { createIdpApp, type IdpApp } from '../../src/idp/app.js';
import type { ConnectorSource } from '../../src/idp/connectors/connector-source.js';
import { generateSigningKey } from '../../src/idp/keys.js';
import { createProviderSessionEnd, type ProviderSessionEnd } from '../../src/idp/session-end.js';
import { createAccountStore } from '../../src/idp/storage/federated-accounts.js';
import { createSealer } from '../../src/lib/sealed.js';
import { createMemoryState } from '../../src/state/memory.js';
import { collectAudit, type CollectedAudit } from '../helpers/audit.js';
import { authorizationRequest, svcWebClient } from '../helpers/authorization.js';
import { FormBrowser, isPage } from '../helpers/form-browser.js';
import { testPasswordGuard } from '../helpers/password-guard.js';
import { freePort } from '../helpers/peers.js';

const log = pino({ level: 'silent' });
const SECRET_KEY = 'session-end-test-secret-key-0123456789';
const UPSTREAM = 'https://upstream.test.invalid';
/** The CLI's loopback redirect (RFC 8252: any port); never visited here. */
const CLI_REDIRECT = 'http://127.0.0.1:9/auth/callback';
const BOB: Identity = { userId: 'u-bob', username: 'Bob', emailVerified: false, groups: ['qa'] };

const upstream: BrowserConnector = {
  kind: 'browser',
  async begin(state) {
    return { via: 'redirect', url: `${UPSTREAM}/authorize?state=${state}` };
  },
  async complete(params) {
    if (params.get('code') !== 'good') throw new Error('upstream said no');
    return BOB;
  },
  async refresh(identity) {
    return identity;
  },
};

describe('idp/session-end: a provider session ended from svc', function () {
  let server: Server;
  let url: string;
  let app: IdpApp;
  let rp: client.Configuration;
  let cliRp: client.Configuration;
  let ender: ProviderSessionEnd;
  let audit: CollectedAudit;
  const connectors: ConnectorSource = { list: () => [{ id: 'gh', name: 'GitHub', type: 'github' }], get: () => upstream };

  before(async function () {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    const state = createMemoryState({ log });
    const keys = { signing: [await generateSigningKey(new Date())], cookie: ['cookie-key-for-session-end-tests'] };
    app = createIdpApp({ url, keys, serverSecretKey: SECRET_KEY, state, accounts: createAccountStore(state, createSealer('account-test-secret-key', 'idp-account')), connectors, passwordGuard: testPasswordGuard(state), log });
    server = createServer((req, res) => void app.handle(req, res, requestTarget(req) as RequestTarget));
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    rp = await svcWebClient(url, SECRET_KEY);
    cliRp = await client.discovery(new URL(`${url}/api/idp`), 'svc-cli', undefined, client.None(), { execute: [client.allowInsecureRequests] });
    audit = collectAudit();
    ender = createProviderSessionEnd({ provider: () => app.provider(), audit, log, state });
  });

  after(async function () {
    await new Promise((resolve) => server.close(resolve));
  });

  /** Follows redirects until one leaves for the upstream or back to svc's callback. */
  async function follow(browser: FormBrowser, href: string): Promise<URL> {
    let next = href;
    for (let hop = 0; hop < 10; hop++) {
      const res = await browser.request(next);
      const location = res.headers.get('location');
      await res.arrayBuffer();
      if (location === null) throw new Error(`no redirect from ${next}: ${res.status}`);
      const to = new URL(location, next);
      if (to.origin === UPSTREAM || to.pathname === '/auth/callback') return to;
      next = to.href;
    }
    throw new Error('too many redirects');
  }

  /** svc's own client's authorization: where it leads, and the PKCE verifier for the code. */
  async function authorize(browser: FormBrowser): Promise<{ to: URL; verifier: string }> {
    const verifier = client.randomPKCECodeVerifier();
    const href = client.buildAuthorizationUrl(rp, {
      redirect_uri: `${url}/auth/callback`, scope: 'openid offline_access', state: 's1',
      code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
    }).href;
    return { to: await follow(browser, href), verifier };
  }

  /** Through the upstream (the connector) to tokens for svc's client. */
  async function login(browser: FormBrowser) {
    const { to, verifier } = await authorize(browser);
    expect(to.origin, 'the upstream is asked').to.equal(UPSTREAM);
    const back = await follow(browser, `${url}/api/idp/callback?state=${to.searchParams.get('state') as string}&code=good`);
    return client.authorizationCodeGrant(rp, back, { pkceCodeVerifier: verifier, expectedState: 's1' });
  }

  /** `svc login --sso` as the CLI does it, in a browser new to the provider: through the upstream. */
  async function cliLogin(browser: FormBrowser) {
    const { href, verifier, state } = await authorizationRequest(cliRp, CLI_REDIRECT, 'openid offline_access');
    const to = await follow(browser, href);
    expect(to.origin, 'the upstream is asked').to.equal(UPSTREAM);
    const asked = await browser.go(`${url}/api/idp/callback?state=${to.searchParams.get('state') as string}&code=good`, CLI_REDIRECT);
    if (!isPage(asked)) throw new Error(`expected the page that asks before the CLI gets its tokens, got ${asked.href}`);
    const back = await browser.submit(asked, { decision: 'allow' }, CLI_REDIRECT);
    if (isPage(back)) throw new Error(`expected the redirect to the CLI, got ${back.status}`);
    return client.authorizationCodeGrant(cliRp, back, { pkceCodeVerifier: verifier, expectedState: state });
  }

  async function refreshError(config: client.Configuration, refreshToken: string): Promise<string | undefined> {
    try {
      await client.refreshTokenGrant(config, refreshToken);
      return undefined;
    } catch (err: unknown) {
      return (err as { error?: string }).error;
    }
  }

  it('puts sid in svc\'s own ID tokens; another account\'s sid ends nothing', async function () {
    const browser = new FormBrowser();
    const tokens = await login(browser);
    const sid = tokens.claims()?.['sid'];
    expect(sid).to.be.a('string');

    expect(await ender.endBySvcSid(sid as string, 'someone-else')).to.deep.equal({ outcome: 'other-account' });
    expect(audit.of('idp-session-ended').map((e) => [e.outcome, e.reason])).to.deep.equal([['failure', 'the provider session belongs to another account']]);
    // Still logged in at the provider: svc's client gets a code without the upstream.
    expect((await authorize(browser)).to.origin).to.equal(url);
    expect(await ender.endBySvcSid('no-such-sid', tokens.claims()?.sub as string)).to.deep.equal({ outcome: 'gone' });
  });

  it('ends the session of its own account: no login without the upstream, svc\'s refresh token refused', async function () {
    const browser = new FormBrowser();
    const tokens = await login(browser);
    const sid = tokens.claims()?.['sid'] as string;
    const sub = tokens.claims()?.sub as string;
    expect(tokens.refresh_token).to.be.a('string');
    const before = audit.events.length;

    expect(await ender.endBySvcSid(sid, sub)).to.deep.equal({ outcome: 'ended', sids: [sid] });
    expect(audit.events.slice(before).map((e) => [e.action, e.outcome, e.user?.id, e.svc?.['via']])).to.deep.equal([['idp-session-ended', 'success', sub, 'svc-session']]);

    expect((await authorize(browser)).to.origin, 'the upstream is asked again').to.equal(UPSTREAM);
    let refused: unknown;
    try {
      await client.refreshTokenGrant(rp, tokens.refresh_token as string);
    } catch (err: unknown) {
      refused = err;
    }
    expect((refused as { error?: string } | undefined)?.error).to.equal('invalid_grant');
    expect(await ender.endBySvcSid(sid, sub), 'once').to.deep.equal({ outcome: 'gone' });
  });

  it('puts sid in the CLI\'s ID tokens, refreshed ones too; its sid ends the provider session and the CLI\'s grant', async function () {
    const browser = new FormBrowser();
    const tokens = await cliLogin(browser);
    const sid = tokens.claims()?.['sid'] as string;
    const sub = tokens.claims()?.sub as string;
    expect(sid).to.be.a('string').and.not.equal('');
    const refreshed = await client.refreshTokenGrant(cliRp, tokens.refresh_token as string);
    expect(refreshed.claims()?.['sid'], 'the refreshed ID token keeps it').to.equal(sid);

    expect(await ender.endBySvcSid(sid, 'someone-else')).to.deep.equal({ outcome: 'other-account' });
    expect(await refreshError(cliRp, refreshed.refresh_token as string), 'another account\'s sid revokes nothing').to.equal(undefined);

    const before = audit.events.length;
    const ended = await ender.endBySvcSid(sid, sub);
    expect(ended).to.deep.equal({ outcome: 'ended', sids: [sid] });
    expect(audit.events.slice(before).map((e) => [e.action, e.outcome])).to.deep.equal([['idp-session-ended', 'success']]);
    const latest = (await client.refreshTokenGrant(cliRp, refreshed.refresh_token as string).catch(() => undefined));
    expect(latest, 'the CLI\'s offline grant went with the session').to.equal(undefined);
    expect((await authorize(browser)).to.origin, 'the upstream is asked again').to.equal(UPSTREAM);
  });

  it('revokes every CLI login\'s grant of one provider session: each login has a grant of its own under the same sid', async function () {
    const browser = new FormBrowser();
    const first = await cliLogin(browser);
    // The second login finds the provider session: only the page that asks before the CLI gets its tokens.
    const { href, verifier, state } = await authorizationRequest(cliRp, CLI_REDIRECT, 'openid offline_access');
    const asked = await browser.go(href, CLI_REDIRECT);
    if (!isPage(asked)) throw new Error(`expected the page that asks, got ${asked.href}`);
    const back = await browser.submit(asked, { decision: 'allow' }, CLI_REDIRECT);
    if (isPage(back)) throw new Error(`expected the redirect to the CLI, got ${back.status}`);
    const second = await client.authorizationCodeGrant(cliRp, back, { pkceCodeVerifier: verifier, expectedState: state });
    const sid = first.claims()?.['sid'] as string;
    expect(second.claims()?.['sid'], 'one sid per client and provider session').to.equal(sid);

    const before = audit.events.length;
    expect(await ender.endBySvcSid(sid, first.claims()?.sub as string)).to.deep.equal({ outcome: 'ended', sids: [sid] });
    expect(audit.events.slice(before).map((e) => [e.action, e.outcome, e.svc?.['grants']])).to.deep.equal([['idp-session-ended', 'success', undefined], ['idp-grant-revoked', 'success', 1]]);
    expect(await refreshError(cliRp, first.refresh_token as string), 'the first login\'s grant').to.equal('invalid_grant');
    expect(await refreshError(cliRp, second.refresh_token as string), 'the second login\'s grant').to.equal('invalid_grant');
  });

  it('revokes the CLI\'s grant by its sid when the provider session is gone already (a logout there keeps offline grants)', async function () {
    const browser = new FormBrowser();
    const tokens = await cliLogin(browser);
    const sid = tokens.claims()?.['sid'] as string;
    const sub = tokens.claims()?.sub as string;
    // The user logs out at the provider: oidc-provider keeps the CLI's offline_access grant.
    const endSession = await browser.go(`${url}/api/idp/session/end?client_id=svc-cli`, 'about:');
    if (!isPage(endSession)) throw new Error('expected the logout page');
    await browser.submit(endSession, { logout: 'yes' }, 'about:');
    expect((await authorize(browser)).to.origin, 'logged out at the provider').to.equal(UPSTREAM);
    const kept = await client.refreshTokenGrant(cliRp, tokens.refresh_token as string);

    const other = await ender.endBySvcSid(sid, 'someone-else');
    expect(other).to.deep.equal({ outcome: 'other-account' });
    expect(audit.of('idp-grant-revoked').slice(-1).map((e) => [e.outcome, e.reason])).to.deep.equal([['failure', 'the grant belongs to another account']]);

    const before = audit.events.length;
    expect(await ender.endBySvcSid(sid, sub)).to.deep.equal({ outcome: 'grant-revoked', sids: [sid] });
    expect(audit.events.slice(before).map((e) => [e.action, e.outcome, e.user?.id, e.svc?.['client']])).to.deep.equal([['idp-grant-revoked', 'success', sub, 'svc-cli']]);
    expect(await refreshError(cliRp, kept.refresh_token as string)).to.equal('invalid_grant');
    expect(await ender.endBySvcSid(sid, sub), 'once').to.deep.equal({ outcome: 'gone' });
  });

  it('refuses a CLI refresh token without sid (from before svc-cli carried one): nothing could end what it mints', async function () {
    const tokens = await cliLogin(new FormBrowser());
    const provider = app.provider();
    const current = await provider.RefreshToken.find(tokens.refresh_token as string);
    if (current === undefined) throw new Error('no refresh token');
    expect(current.sid).to.be.a('string');
    const cli = await provider.Client.find('svc-cli');
    if (cli === undefined) throw new Error('no svc-cli client');
    const legacy = new provider.RefreshToken({
      accountId: current.accountId, client: cli, grantId: current.grantId as string,
      scope: current.scope as string, authTime: current.authTime as number, gty: current.gty as string, iiat: current.iiat as number,
    });
    const legacyValue = await legacy.save();
    expect(await refreshError(cliRp, legacyValue)).to.equal('invalid_grant');
    expect(await refreshError(cliRp, tokens.refresh_token as string), 'one with sid refreshes').to.equal(undefined);
  });
});

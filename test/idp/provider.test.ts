/**
 * The identity provider's app on its own (no svc around it): the connector chooser, a browser
 * connector's round trip through /api/idp/callback (redirect and SAML-style POST), single use of
 * the connector transaction, Dex's `sub`, and the ID token verifier's refusals. The connectors
 * are test doubles of the Connector contract.
 */
import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import * as client from 'openid-client';
import { pino } from 'pino';
import type { BrowserConnector, Identity } from '../../connectors/connector.js';
import { createAccountStore } from '../../src/idp/storage/federated-accounts.js';
import { createSealer } from '../../src/lib/sealed.js';
import { createIdpApp } from '../../src/idp/app.js';
import { testPasswordGuard } from '../helpers/password-guard.js';
import { subjectOf } from '../../src/idp/claims.js';
import type { ConnectorSource } from '../../src/idp/connectors/connector-source.js';
import { generateSigningKey, type IdpKeys } from '../../src/idp/keys.js';
import { escapeHtml } from '../../src/idp/login/pages.js';
import { createMemoryState } from '../../src/state/memory.js';
import { fakePasswordConnector } from '../helpers/fake-password-connector.js';
import { FormBrowser, isPage, type Page } from '../helpers/form-browser.js';
import { freePort } from '../helpers/peers.js';
import { svcWebClient } from '../helpers/authorization.js';
import { requestTarget, type RequestTarget } from '../../src/http/request-target.js';

const log = pino({ level: 'silent' });
const SECRET_KEY = 'provider-test-secret-key-0123456789';
const UPSTREAM = 'https://upstream.test.invalid';
const BOB: Identity = { userId: 'u-bob', username: 'Bob', emailVerified: false, groups: ['qa'] };

/** Redirects to UPSTREAM with the state, or posts to it (SAML); completes when `code` is "good". */
function fakeBrowserConnector(via: 'redirect' | 'post'): BrowserConnector {
  return {
    kind: 'browser',
    async begin(state) {
      return via === 'redirect'
        ? { via, url: `${UPSTREAM}/authorize?state=${state}`, saved: 'verifier-1' }
        : { via, action: `${UPSTREAM}/sso`, fields: { SAMLRequest: '<r a="1">', RelayState: state }, saved: 'request-1' };
    },
    async complete(params, saved) {
      if (params.get('code') !== 'good' || (saved !== 'verifier-1' && saved !== 'request-1')) throw new Error('upstream said no');
      return BOB;
    },
  };
}

describe('idp/provider: login pages and connectors', function () {
  let server: Server;
  let url: string;
  let keys: IdpKeys;
  let rp: client.Configuration;
  const connectors: ConnectorSource = {
    list: () => [{ id: 'dir', name: 'Directory <LDAP>', type: 'ldap' }, { id: 'gh', name: 'GitHub', type: 'github' }, { id: 'idp', name: 'SAML', type: 'saml' }],
    get: (id) => ({ dir: fakePasswordConnector({}), gh: fakeBrowserConnector('redirect'), idp: fakeBrowserConnector('post') } as const)[id as 'dir'],
  };

  before(async function () {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    keys = { signing: [await generateSigningKey(new Date())], cookie: ['cookie-key-for-provider-tests'] };
    const state = createMemoryState({ log });
    const app = createIdpApp({ url, keys, serverSecretKey: SECRET_KEY, state, accounts: createAccountStore(state, createSealer('account-test-secret-key', 'idp-account')), connectors, passwordGuard: testPasswordGuard(state), log });
    server = createServer((req, res) => void app.handle(req, res, requestTarget(req) as RequestTarget));
    await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
    rp = await svcWebClient(url, SECRET_KEY);
  });

  after(async function () {
    await new Promise((resolve) => server.close(resolve));
  });

  async function start(browser: FormBrowser, extra: Record<string, string> = {}) {
    const verifier = client.randomPKCECodeVerifier();
    const authorize = client.buildAuthorizationUrl(rp, {
      redirect_uri: `${url}/auth/callback`, scope: 'openid groups', state: 's1', ...extra,
      code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256',
    });
    return { verifier, page: await browser.go(authorize.href, UPSTREAM) };
  }

  it('encodes sub as Dex does', function () {
    expect(subjectOf('u1', 'github')).to.equal('CgJ1MRIGZ2l0aHVi');
  });

  it('shows a chooser with every connector, names escaped', async function () {
    const { page } = await start(new FormBrowser());
    expect(isPage(page) && page.status).to.equal(200);
    expect((page as Page).html).to.include('Log in with Directory &lt;LDAP&gt;').and.include('Log in with GitHub');
  });

  it('goes straight to the connector named by connector_id', async function () {
    const { page } = await start(new FormBrowser(), { connector_id: 'gh' });
    expect(page).to.be.instanceOf(URL);
    expect((page as URL).origin).to.equal(UPSTREAM);
  });

  it('completes a redirect connector through /api/idp/callback, once', async function () {
    const browser = new FormBrowser();
    const { page, verifier } = await start(browser, { connector_id: 'gh' });
    const state = (page as URL).searchParams.get('state') as string;
    const back = await browser.go(`${url}/api/idp/callback?state=${state}&code=good`, `${url}/auth/callback`);
    expect(back).to.be.instanceOf(URL);
    const tokens = await client.authorizationCodeGrant(rp, back as URL, { pkceCodeVerifier: verifier, expectedState: 's1' });
    expect(tokens.claims()).to.deep.include({ sub: subjectOf('u-bob', 'gh'), groups: ['qa'] });

    const replay = (await browser.go(`${url}/api/idp/callback?state=${state}&code=good`, `${url}/auth/callback`)) as Page;
    expect(replay.status).to.equal(400);
    expect(replay.html).to.include('This login has expired');
  });

  it('completes a SAML-style POST with RelayState, after an auto-posting page with escaped fields', async function () {
    const browser = new FormBrowser();
    const { page } = await start(browser, { connector_id: 'idp' });
    const html = (page as Page).html;
    expect(html).to.include(`action="${UPSTREAM}/sso"`).and.include(`value="${escapeHtml('<r a="1">')}"`);
    const relay = /name="RelayState" value="([^"]+)"/.exec(html)?.[1] as string;
    const back = await browser.go(`${url}/api/idp/callback`, `${url}/auth/callback`, new URLSearchParams({ RelayState: relay, code: 'good' }));
    expect(back).to.be.instanceOf(URL);
  });

  it('says the upstream did not confirm the login when the connector refuses, without details', async function () {
    const browser = new FormBrowser();
    const { page } = await start(browser, { connector_id: 'gh' });
    const state = (page as URL).searchParams.get('state') as string;
    const failed = (await browser.go(`${url}/api/idp/callback?state=${state}&code=bad`, `${url}/auth/callback`)) as Page;
    expect(failed.status).to.equal(401);
    expect(failed.html).to.include('did not confirm the login').and.not.include('upstream said no');
  });

  it('with an https url behind an ingress, links use that url whatever forwarded headers a client sends', async function () {
    const state = createMemoryState({ log });
    const app = createIdpApp({ url: 'https://svc.example.com', keys, serverSecretKey: SECRET_KEY, state, accounts: createAccountStore(state, createSealer('account-test-secret-key', 'idp-account')), connectors, passwordGuard: testPasswordGuard(state), log });
    const port = await freePort();
    const behind = createServer((req, res) => void app.handle(req, res, requestTarget(req) as RequestTarget));
    await new Promise<void>((resolve) => behind.listen(port, '127.0.0.1', resolve));
    try {
      const res = await fetch(`http://127.0.0.1:${port}/api/idp/.well-known/openid-configuration`, {
        headers: { 'x-forwarded-proto': 'http', 'x-forwarded-host': 'evil.example' },
      });
      const meta = (await res.json()) as Record<string, string>;
      expect(meta['issuer']).to.equal('https://svc.example.com/api/idp');
      expect(meta['token_endpoint']).to.equal('https://svc.example.com/api/idp/token');
    } finally {
      await new Promise((resolve) => behind.close(resolve));
    }
  });
});

/**
 * Back-channel logout from an upstream `oidc` connector of the bundled provider, end to end: a
 * real oidc-provider (test/helpers/test-provider.ts, HTTPS with a test CA) is the connector's
 * upstream, with svc's `/auth/backchannel-logout` as its client's back-channel logout URI. A user
 * logs in to svc's web UI through svc's provider and that connector; ending the session at the
 * upstream makes it post a logout token naming its `sid`, which svc verifies with the
 * upstream's keys: the provider session that login made ends, and the svc session with it
 * (its token refused), while the same user's login through another upstream session stays.
 * A static client's token of the ended provider session then introspects `{"active": false}`.
 */
import { expect } from 'chai';
import * as client from 'openid-client';
import YAML from 'yaml';
import { authorizationRequest } from '../helpers/authorization.js';
import { collectAudit } from '../helpers/audit.js';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { freePort } from '../helpers/peers.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import type { SsoBrowser } from '../helpers/sso-browser.js';
import { makeTestCa } from '../helpers/test-ca.js';
import {
  logOutAtProvider, PROVIDER_CLIENT_ID, PROVIDER_CLIENT_SECRET, providerBrowsers, startTestProvider, type ProviderBrowsers, type TestProvider,
} from '../helpers/test-provider.js';
import { removeTempDir } from '../helpers/temp-dir.js';

describe('e2e: back-channel logout from an upstream oidc connector of the bundled provider', function () {
  this.timeout(60_000);
  const ca = makeTestCa();
  const audit = collectAudit();
  let upstream: TestProvider;
  let server: TestServer;
  let browsers: ProviderBrowsers;
  let dir: string;
  let url: string;
  const WIKI = 'https://wiki.example.org/cb';
  const WIKI_SECRET = 'wiki-secret-0123456789';

  before(async function () {
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    upstream = await startTestProvider({ ca, redirectUris: [`${url}/api/idp/callback`], backchannelLogoutUri: `${url}/auth/backchannel-logout` });
    upstream.accounts.set('alice', { groups: ['devs'] });
    const connector = {
      type: 'oidc', id: 'corp', name: 'Corp',
      config: { issuer: upstream.issuer, clientID: PROVIDER_CLIENT_ID, clientSecret: '$corp.clientSecret', rootCA: ca.caPem, userNameKey: 'sub', insecureSkipEmailVerified: true },
    };
    dir = tempConfigDir({
      'svc-cm.yaml': configMap('svc-cm', { url, 'idp.config': YAML.stringify({ connectors: [connector], staticClients: [{ id: 'wiki', secret: '$wiki.secret', redirectURIs: [WIKI] }] }) }),
      'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': '' }),
      'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': 'idp-upstream-backchannel-secret-key-0123', 'corp.clientSecret': PROVIDER_CLIENT_SECRET, 'wiki.secret': WIKI_SECRET }),
    });
    server = await startTestServer(dir, { port, audit });
    browsers = providerBrowsers(ca, upstream.issuer);
  });
  after(async function () {
    await server?.close(1000);
    await upstream?.close();
    await browsers?.close();
    if (dir !== undefined) removeTempDir(dir);
  });

  const browser = (): SsoBrowser => browsers.browser();
  async function login(b: SsoBrowser): Promise<string> {
    const { url: landed } = await b.browse(`${url}/auth/login?return_url=/apps`, 'alice');
    const token = b.cookie(url, 'svc.token');
    if (token === undefined) throw new Error(`no svc.token after the login (landed on ${landed})`);
    return token;
  }
  const listStatus = async (token: string): Promise<number> => (await fetch(`${url}/api/v1/session/list`, { headers: { authorization: `Bearer ${token}` } })).status;

  it('ends the provider session and the svc session that the upstream session logged in, and no other', async function () {
    const first = browser();
    const ended = await login(first);
    const stays = await login(browser());
    expect(await listStatus(ended)).to.equal(200);

    await logOutAtProvider(first, upstream.issuer);

    expect(await listStatus(ended), 'the ended login\'s token').to.equal(401);
    expect(await listStatus(stays), 'the other upstream session\'s login').to.equal(200);
    expect(audit.of('idp-session-ended').map((e) => [e.outcome, e.svc?.['via']])).to.deep.equal([['success', 'upstream-backchannel']]);
    expect(audit.of('session-ended').map((e) => e.svc?.['via'])).to.deep.equal(['backchannel']);
    expect(server.logs()).to.include('"msg":"back-channel logout"').and.include(`"issuer":"${upstream.issuer}"`);
    // The provider session is gone: svc's login goes to the upstream again, which asks for the login.
    const again = await first.browse(`${url}/auth/login?return_url=/apps`, 'alice', (u) => u.startsWith(upstream.issuer));
    expect(again.url.startsWith(upstream.issuer), 'back at the upstream').to.equal(true);
  });

  it("answers a static client's introspection of a token of the provider session {active: false} once the upstream's logout token ended it", async function () {
    const b = browser();
    await login(b);
    // wiki's login through the same provider session: no upstream round trip.
    const wiki = await client.discovery(new URL(`${url}/api/idp`), 'wiki', undefined, client.ClientSecretBasic(WIKI_SECRET), { execute: [client.allowInsecureRequests] });
    const request = await authorizationRequest(wiki, WIKI, 'openid');
    const { url: landed } = await b.browse(request.href, 'alice', (u) => u.startsWith(WIKI));
    const tokens = await client.authorizationCodeGrant(wiki, new URL(landed), { pkceCodeVerifier: request.verifier, expectedState: request.state });
    expect(await client.tokenIntrospection(wiki, tokens.access_token)).to.include({ active: true, client_id: 'wiki' });

    await logOutAtProvider(b, upstream.issuer);

    expect(await client.tokenIntrospection(wiki, tokens.access_token)).to.deep.equal({ active: false });
  });
});

/**
 * The bundled identity provider with the Microsoft Entra ID connector, end to end, against the
 * local Entra stand-in (test/helpers/fake-entra.ts, which follows Microsoft's documented shapes)
 * over HTTPS with a test CA given as rootCA: a relying party (openid-client, the `svc` client)
 * logs a person in through svc's login routes and Entra's authorize (which approves), with a
 * plain HTTP client that follows redirects. A user with 3 groups in the token, and one with 250
 * through the overage (Graph, paged), get their groups' names in svc's ID token, which decide an
 * extension's rights; when Graph fails (500, or 429 past the bound) the login is refused on a
 * page that says why.
 */
import { expect } from 'chai';
import * as client from 'openid-client';
import { GROUPS_UNREADABLE } from '../../connectors/microsoft/microsoft.js';
import { createTlsFetch, type TlsFetch } from '../../src/lib/tls-fetch.js';
import { authorizationRequest, svcWebClient } from '../helpers/authorization.js';
import { startFakeEntra, type FakeEntra } from '../helpers/fake-entra.js';
import { FormBrowser, isPage } from '../helpers/form-browser.js';
import { toolsAndSecretPolicy } from '../helpers/manifests.js';
import { idpSvcAddress, startIdpSvc, type IdpSvc } from '../helpers/idp-svc.js';
import { ALICE, BOB, CLIENT_SECRET, entraOptions, MANY, MANYGROUPS, microsoftConfig } from '../connectors/microsoft/fixture.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const SECRET_KEY = 'idp-microsoft-e2e-secret-key-0123456789';
const POLICY = toolsAndSecretPolicy('ops', 'admins');

describe('e2e: the bundled identity provider with the Microsoft Entra ID connector (local Entra stand-in)', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let fake: FakeEntra;
  let svc: IdpSvc | undefined;
  let url: string;
  let tls: TlsFetch;
  let rp: client.Configuration;

  before(async function () {
    const at = await idpSvcAddress();
    url = at.url;
    fake = await startFakeEntra(entraOptions(`${url}/api/idp/callback`));
    tls = createTlsFetch({ rootCAs: [fake.caPem] });
    svc = await startIdpSvc(at, {
      connectors: [{ type: 'microsoft', id: 'entra', name: 'Microsoft', config: microsoftConfig(fake, { groupNameFormat: 'name', onlySecurityGroups: true }) }],
      extensions: ['tools', 'secret'], policy: POLICY,
      secrets: { 'server.secretkey': SECRET_KEY, 'entra.clientSecret': CLIENT_SECRET },
    });
    rp = await svcWebClient(url, SECRET_KEY);
  });

  after(async function () {
    await svc?.close();
    await tls?.close();
    await fake?.close();
  });

  beforeEach(() => fake.clearFailures());

  const redirectUri = (): string => `${url}/auth/callback`;
  const proxied = async (token: string, extension: string) => (await fetch(`${url}/api/v1/extensions/${extension}/x`, { headers: { authorization: `Bearer ${token}` } })).status;

  async function logIn(upn: string): Promise<client.TokenEndpointResponse & client.TokenEndpointResponseHelpers> {
    fake.signedIn = upn;
    const { href, verifier, state } = await authorizationRequest(rp, redirectUri(), 'openid profile email groups');
    const back = await new FormBrowser(tls.fetch).go(href, redirectUri());
    if (isPage(back)) throw new Error(`expected the redirect with a code, got a page (${back.status}): ${back.html.slice(0, 300)}`);
    return client.authorizationCodeGrant(rp, back, { pkceCodeVerifier: verifier, expectedState: state });
  }

  async function refusedPage(upn: string): Promise<{ status: number; html: string }> {
    fake.signedIn = upn;
    const { href } = await authorizationRequest(rp, redirectUri(), 'openid profile groups');
    const page = await new FormBrowser(tls.fetch).go(href, redirectUri());
    if (!isPage(page)) throw new Error(`expected a refusal page, got a redirect to ${page.href}`);
    return page;
  }

  it('logs in a user with 3 groups in the token: the security groups\' names decide the rights', async () => {
    const tokens = await logIn(ALICE.upn);
    expect(tokens.claims()).to.deep.include({ name: 'Alice Liddell', preferred_username: ALICE.upn, email: ALICE.email, email_verified: false });
    expect((tokens.claims()?.['groups'] as string[]).sort()).to.deep.equal(['dev', 'ops']);
    const idToken = String(tokens.id_token);
    expect(await proxied(idToken, 'tools')).to.equal(200);
    expect(await proxied(idToken, 'secret')).to.equal(403);
    expect(svc?.server.logs()).not.to.contain(CLIENT_SECRET);
  });

  it('logs in a user with 250 groups through the overage: Graph\'s pages, names resolved', async () => {
    fake.graphCalls.clear();
    const tokens = await logIn(MANYGROUPS.upn);
    const groups = tokens.claims()?.['groups'] as string[];
    const security = ['ops', 'dev', 'elsewhere', ...MANY.filter((g) => g.securityEnabled).map((g) => g.displayName)];
    expect(groups).to.have.members(security).and.have.length(security.length);
    expect(fake.graphCalls.get('/v1.0/me/getMemberObjects')).to.be.at.least(2);
    expect(await proxied(String(tokens.id_token), 'tools')).to.equal(200);
  });

  it('refuses the login, on a page that says why, when Graph answers 500 or throttles past the bound', async () => {
    fake.fail('/v1.0/me/getMemberObjects', 500);
    const failed = await refusedPage(MANYGROUPS.upn);
    expect(failed.html).to.contain('Your groups could not be read from Microsoft Graph');
    fake.fail('/v1.0/directoryObjects/getByIds', 429, 1, { 'retry-after': '300' });
    const throttled = await refusedPage(ALICE.upn);
    expect(throttled.html).to.contain('Your groups could not be read from Microsoft Graph');
    expect(throttled.status).to.equal(failed.status);
    expect(GROUPS_UNREADABLE).to.match(/^your groups could not be read from Microsoft Graph/);
    expect(svc?.server.logs()).to.contain('throttled (HTTP 429, Retry-After 300) past the bound');
  });

  it('lets in a user whose one security group the policy does not name, without rights', async () => {
    const tokens = await logIn(BOB.upn);
    expect(tokens.claims()?.['groups']).to.deep.equal(['elsewhere']);
    expect(await proxied(String(tokens.id_token), 'tools')).to.equal(403);
  });
});

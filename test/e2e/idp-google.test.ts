/**
 * The bundled identity provider with the Google connector, end to end, against the local Google
 * stand-in (test/helpers/fake-google.ts) over HTTPS with a test CA given as rootCA: a relying
 * party (openid-client, the `svc` client) logs a person in through svc's login routes and
 * Google's authorize (which approves) with a plain HTTP client that follows redirects. The ID
 * token's hd must be the hosted domain; the groups come from the Directory API through the
 * service account's JWT grant (one grant for several logins), the groups of groups with
 * fetchTransitiveGroupMembership, and decide an extension's rights; a Directory API that fails
 * refuses the login on a page that says why.
 */
import { expect } from 'chai';
import * as client from 'openid-client';
import { createTlsFetch, type TlsFetch } from '../../src/lib/tls-fetch.js';
import { authorizationRequest, svcWebClient } from '../helpers/authorization.js';
import { startFakeGoogle, type FakeGoogle } from '../helpers/fake-google.js';
import { FormBrowser, isPage } from '../helpers/form-browser.js';
import { toolsAndSecretPolicy } from '../helpers/manifests.js';
import { idpSvcAddress, startIdpSvc, type IdpSvc } from '../helpers/idp-svc.js';
import { ADMIN, CLIENT_SECRET, fakeOptions, googleConfig, secrets } from '../connectors/google/fixture.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const SECRET_KEY = 'idp-google-e2e-secret-key-0123456789';
// eng@ reaches Alice only through ops@ (the transitive walk); all@ grants the secret extension to nobody directly.
const POLICY = toolsAndSecretPolicy('eng@acme.example', 'sales@acme.example');

describe('e2e: the bundled identity provider with the Google connector (local Google stand-in)', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let fake: FakeGoogle;
  let svc: IdpSvc | undefined;
  let url: string;
  let tls: TlsFetch;
  let rp: client.Configuration;

  before(async function () {
    const at = await idpSvcAddress();
    url = at.url;
    fake = await startFakeGoogle({ ...fakeOptions(), redirectUri: `${url}/api/idp/callback` });
    tls = createTlsFetch({ rootCAs: [fake.caPem] });
    svc = await startIdpSvc(at, {
      connectors: [{ type: 'google', id: 'google', name: 'Google', config: googleConfig(fake, { fetchTransitiveGroupMembership: true }) }], extensions: ['tools', 'secret'], policy: POLICY,
      secrets: { 'server.secretkey': SECRET_KEY, ...secrets(fake) },
    });
    rp = await svcWebClient(url, SECRET_KEY);
  });

  after(async function () {
    await svc?.close();
    await tls?.close();
    await fake?.close();
  });

  const redirectUri = (): string => `${url}/auth/callback`;
  const proxied = async (token: string, extension: string) => (await fetch(`${url}/api/v1/extensions/${extension}/x`, { headers: { authorization: `Bearer ${token}` } })).status;

  async function logIn(email: string): Promise<client.TokenEndpointResponse & client.TokenEndpointResponseHelpers> {
    fake.signedIn = email;
    const { href, verifier, state } = await authorizationRequest(rp, redirectUri(), 'openid profile email groups');
    const back = await new FormBrowser(tls.fetch).go(href, redirectUri());
    if (isPage(back)) throw new Error(`expected the redirect with a code, got a page (${back.status}): ${back.html.slice(0, 300)}`);
    return client.authorizationCodeGrant(rp, back, { pkceCodeVerifier: verifier, expectedState: state });
  }

  async function refusedPage(email: string): Promise<{ status: number; html: string }> {
    fake.signedIn = email;
    const { href } = await authorizationRequest(rp, redirectUri(), 'openid profile groups');
    const page = await new FormBrowser(tls.fetch).go(href, redirectUri());
    if (!isPage(page)) throw new Error(`expected a refusal page, got a redirect to ${page.href}`);
    return page;
  }

  it('logs in a user of the hosted domain: the groups (and their groups) from the Directory API decide the rights, with one grant for several logins', async () => {
    const grantsBefore = fake.grants().get(ADMIN) ?? 0;
    const tokens = await logIn('alice@acme.example');
    expect(fake.lastAuthorize()?.get('hd')).to.equal('acme.example');
    expect(tokens.claims()).to.deep.include({ name: 'Alice Liddell', email: 'alice@acme.example' });
    expect((tokens.claims()?.['groups'] as string[]).sort()).to.deep.equal(['all@acme.example', 'dev@acme.example', 'eng@acme.example', 'ops@acme.example']);
    const idToken = String(tokens.id_token);
    expect(await proxied(idToken, 'tools')).to.equal(200);
    expect(await proxied(idToken, 'secret')).to.equal(403);

    const bob = await logIn('bob@acme.example');
    expect(bob.claims()?.['groups']).to.deep.equal(['sales@acme.example']);
    expect(await proxied(String(bob.id_token), 'secret')).to.equal(200);
    expect((fake.grants().get(ADMIN) ?? 0) - grantsBefore).to.equal(1);
    const logs = svc?.server.logs() ?? '';
    expect(logs).not.to.contain(CLIENT_SECRET);
    expect(logs).not.to.contain((JSON.parse(fake.keyFile) as { private_key: string }).private_key.split('\n')[1]);
  });

  it('refuses an account of another domain, and a consumer account without hd, on a page that says why', async () => {
    for (const who of ['carol@other.example', 'dave@gmail.com']) {
      const page = await refusedPage(who);
      expect(page.status).to.equal(401);
      expect(page.html).to.contain('Your Google account is not in a domain allowed to log in here.');
    }
  });

  it('refuses the login, on a page that says why, when the Directory API fails', async () => {
    fake.fail('/admin/directory/v1/groups', 503);
    const page = await refusedPage('alice@acme.example');
    expect(page.html).to.contain('Your groups could not be read from Google Workspace, so the login is refused');
    expect(svc?.server.logs()).to.contain('google: login refused: the groups could not be read from the Directory API');
  });
});

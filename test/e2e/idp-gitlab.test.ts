/**
 * The bundled identity provider with the GitLab connector, end to end, against the local GitLab
 * stand-in (test/helpers/fake-gitlab.ts) over HTTPS with a test CA given as rootCA: a relying
 * party (openid-client, the `svc` client) logs a person in through GitLab's authorize (which
 * approves) with a plain HTTP client that follows redirects; the ID token carries the GitLab
 * groups, filtered to `groups`, which decide an extension's rights; a refresh goes through
 * GitLab's rotating refresh token after the access token expired, and ends when the user
 * revokes the application.
 */
import { expect } from 'chai';
import * as client from 'openid-client';
import { createTlsFetch, type TlsFetch } from '../../src/lib/tls-fetch.js';
import { authorizationRequest, svcWebClient } from '../helpers/authorization.js';
import { startFakeGitlab, type FakeGitlab } from '../helpers/fake-gitlab.js';
import { FormBrowser, isPage } from '../helpers/form-browser.js';
import { toolsAndSecretPolicy } from '../helpers/manifests.js';
import { idpSvcAddress, startIdpSvc, type IdpSvc } from '../helpers/idp-svc.js';
import type { TestServer } from '../helpers/server.js';
import { CLIENT_ID, CLIENT_SECRET, gitlabConfig, USERS } from '../connectors/gitlab/fixture.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const SECRET_KEY = 'idp-gitlab-e2e-secret-key-0123456789';
const POLICY = toolsAndSecretPolicy('acme/ops', 'acme/admins');

describe('e2e: the bundled identity provider with the GitLab connector (local GitLab stand-in)', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let fake: FakeGitlab;
  let server: TestServer;
  let svc: IdpSvc | undefined;
  let url: string;
  let tls: TlsFetch;
  let rp: client.Configuration;

  before(async function () {
    const at = await idpSvcAddress();
    url = at.url;
    fake = await startFakeGitlab({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, redirectUri: `${url}/api/idp/callback`, users: USERS });
    tls = createTlsFetch({ rootCAs: [fake.caPem] });
    svc = await startIdpSvc(at, {
      connectors: [{ type: 'gitlab', id: 'gitlab', name: 'GitLab', config: gitlabConfig(fake) }], extensions: ['tools', 'secret'], policy: POLICY,
      secrets: { 'server.secretkey': SECRET_KEY, 'gitlab.clientSecret': CLIENT_SECRET },
    });
    server = svc.server;
    rp = await svcWebClient(url, SECRET_KEY);
  });

  after(async function () {
    await svc?.close();
    await tls?.close();
    await fake?.close();
  });

  const proxied = async (token: string, extension: string) => (await fetch(`${url}/api/v1/extensions/${extension}/x`, { headers: { authorization: `Bearer ${token}` } })).status;

  it('logs a GitLab user in; the groups decide the rights; refresh goes through GitLab until the app is revoked', async () => {
    fake.signedIn = 'alice';
    const redirectUri = `${url}/auth/callback`;
    const { href, verifier, state } = await authorizationRequest(rp, redirectUri, 'openid profile email groups offline_access');
    const back = await new FormBrowser(tls.fetch).go(href, redirectUri);
    if (isPage(back)) throw new Error(`expected the redirect with a code, got a page (${back.status}): ${back.html.slice(0, 300)}`);
    const tokens = await client.authorizationCodeGrant(rp, back, { pkceCodeVerifier: verifier, expectedState: state });
    expect(fake.lastScope()).to.equal('read_user openid');
    expect(tokens.claims()).to.deep.include({ preferred_username: 'alice', email: 'alice@example.org', name: 'Alice Liddell' });
    expect((tokens.claims()?.['groups'] as string[]).sort()).to.deep.equal(['acme/dev', 'acme/ops']);
    const idToken = String(tokens.id_token);
    expect(await proxied(idToken, 'tools')).to.equal(200);
    expect(await proxied(idToken, 'secret')).to.equal(403);

    fake.expireAccessTokens();
    const refreshed = await client.refreshTokenGrant(rp, String(tokens.refresh_token));
    expect((refreshed.claims()?.['groups'] as string[]).sort()).to.deep.equal(['acme/dev', 'acme/ops']);

    fake.revokeAll();
    const refused = await client.refreshTokenGrant(rp, String(refreshed.refresh_token)).then(() => undefined, (err: unknown) => err as { error?: string });
    expect(refused?.error).to.equal('invalid_grant');
    expect(server.logs()).not.to.contain(CLIENT_SECRET);
  });

  it('refuses a GitLab user in none of the configured groups, on a page that says so', async () => {
    fake.signedIn = 'bob';
    const redirectUri = `${url}/auth/callback`;
    const { href } = await authorizationRequest(rp, redirectUri, 'openid profile groups');
    const page = await new FormBrowser(tls.fetch).go(href, redirectUri);
    if (!isPage(page)) throw new Error(`expected a refusal page, got a redirect to ${page.href}`);
    expect(page.status).to.equal(401);
    expect(page.html).to.contain('Your GitLab account is not a member of the groups allowed to log in here.');
  });
});

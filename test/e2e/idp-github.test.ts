/**
 * The bundled identity provider with the GitHub connector, end to end, against the local GitHub
 * stand-in (test/helpers/fake-github.ts) over HTTPS with a test CA given as rootCA: a person
 * logs in through /auth/login with a plain HTTP client that follows redirects (svc → the
 * provider → GitHub's authorize, which approves → svc's callback → the svc.token cookie); the
 * groups (`org:team`) from GitHub's teams, read page by page, let them through the extension
 * proxy for one extension and not another. A user outside the listed orgs is refused on a page that says so.
 */
import { expect } from 'chai';
import { createTlsFetch, type TlsFetch } from '../../src/lib/tls-fetch.js';
import { startFakeGithub, type FakeGithub } from '../helpers/fake-github.js';
import { FormBrowser, isPage } from '../helpers/form-browser.js';
import { toolsAndSecretPolicy } from '../helpers/manifests.js';
import { idpSvcAddress, startIdpSvc, type IdpSvc } from '../helpers/idp-svc.js';
import type { TestServer } from '../helpers/server.js';
import { CLIENT_ID, CLIENT_SECRET, githubConfig, USERS } from '../connectors/github/fixture.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const POLICY = toolsAndSecretPolicy('acme:Developers', 'acme:Admins');

describe('e2e: the bundled identity provider with the GitHub connector (local GitHub stand-in)', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let fake: FakeGithub;
  let server: TestServer;
  let svc: IdpSvc | undefined;
  let url: string;
  let tls: TlsFetch;

  before(async function () {
    fake = await startFakeGithub({ clientId: CLIENT_ID, clientSecret: CLIENT_SECRET, users: USERS });
    tls = createTlsFetch({ rootCAs: [fake.caPem] });
    const at = await idpSvcAddress();
    url = at.url;
    svc = await startIdpSvc(at, {
      connectors: [{ type: 'github', id: 'github', name: 'GitHub', config: githubConfig(fake) }], extensions: ['tools', 'secret'], policy: POLICY,
      secrets: { 'server.secretkey': 'idp-github-e2e-secret-key-0123456789', 'github.clientSecret': CLIENT_SECRET },
    });
    server = svc.server;
  });

  after(async function () {
    await svc?.close();
    await tls?.close();
    await fake?.close();
  });

  it('logs in through /auth/login to the svc.token cookie, whose org:team groups the rights judge', async () => {
    fake.signedIn = 'alice';
    const browser = new FormBrowser(tls.fetch);
    const landed = await browser.go(`${url}/auth/login?return_url=/apps`, `${url}/apps`);
    if (isPage(landed)) throw new Error(`expected to land on /apps, got a page (${landed.status}): ${landed.html.slice(0, 300)}`);
    expect(fake.lastScope()).to.equal('user:email read:org');
    const info = await (await browser.request(`${url}/api/v1/session/userinfo`)).json() as Record<string, unknown>;
    expect(info).to.deep.include({ loggedIn: true, iss: `${url}/api/idp` });
    expect((info['groups'] as string[]).sort()).to.deep.equal(['acme', 'acme:Developers', 'acme:Platform Ops', 'wonder', 'wonder:Tea Party']);
    expect((await browser.request(`${url}/api/v1/extensions/tools/x`)).status).to.equal(200);
    expect((await browser.request(`${url}/api/v1/extensions/secret/x`)).status).to.equal(403);
    expect(server.logs()).not.to.contain(CLIENT_SECRET);
  });

  it('refuses a GitHub user outside the listed orgs and teams, with a page and no cookie', async () => {
    fake.signedIn = 'bob';
    const browser = new FormBrowser(tls.fetch);
    const landed = await browser.go(`${url}/auth/login?return_url=/apps`, `${url}/apps`);
    if (!isPage(landed)) throw new Error(`expected a refusal page, got a redirect to ${landed.href}`);
    expect(landed.status).to.equal(401);
    expect(landed.html).to.contain('Your GitHub account is not a member of the organizations or teams allowed to log in here.');
    const info = await (await browser.request(`${url}/api/v1/session/userinfo`)).json() as Record<string, unknown>;
    expect(info['loggedIn']).not.to.equal(true);
    expect(server.logs()).to.contain('github: login refused: not in the configured orgs or teams');
    // One info line at the provider, with the connector, the reason and the request id; no stack above debug.
    const lines = server.logs().split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, unknown>);
    const refused = lines.filter((l) => l['msg'] === 'identity provider: the connector refused the login');
    expect(refused).to.have.length(1);
    expect(refused[0]).to.deep.include({ level: 30, connector: 'github', reason: 'your GitHub account is not a member of the organizations or teams allowed to log in here' });
    expect(refused[0]?.['requestId']).to.be.a('string').and.not.equal('');
    expect(lines.filter((l) => (l['level'] as number) >= 30 && JSON.stringify(l).includes('"stack"'))).to.deep.equal([]);
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).to.contain('svc_login_outcomes_total{method="idp-browser",connector="github",reason="refused"} 1');
  });
});

/**
 * Single sign-on against LemonLDAP::NG, an OIDC provider nobody here wrote, over HTTPS with a
 * certificate of a test CA (started once for the file; svc is restarted between cases with
 * another oidc.config). Its ID tokens carry no groups: with enableUserInfoGroups they come from
 * its userinfo endpoint and drive the proxy's rights. Without rootCA the login fails naming
 * the certificate problem, with the skip switch it works again. The CLI's --no-browser says
 * clearly that this provider has no device login.
 */
import { expect } from 'chai';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import YAML from 'yaml';
import { echoBackend, type Backend } from '../extensions/helpers.js';
import { startCli } from '../helpers/cli-process.js';
import { LLNG_CLIENT_ID, LLNG_CLIENT_SECRET, llngBrowse, startLlng, type Llng } from '../helpers/llng.js';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { freePort } from '../helpers/peers.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { SECRET_KEY, userInfo } from '../helpers/sso-setup.js';
import { makeTestCa, type TestCa } from '../helpers/test-ca.js';
import { echoExtension } from '../helpers/test-issuer.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';

/** Members of LemonLDAP::NG's demo group `timelords` may use the extension `echo`. */
const POLICY = 'p, role:echo, extensions, *, */echo, allow\ng, timelords, role:echo\n';

describe('e2e: SSO login against LemonLDAP::NG over HTTPS', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let ca: TestCa;
  let llng: Llng;
  let echo: Backend;
  let svcUrl: string;
  let port: number;
  let svc: TestServer | undefined;
  let home: string;

  before(async () => {
    ca = makeTestCa();
    port = await freePort();
    svcUrl = `http://127.0.0.1:${port}`;
    llng = await startLlng(ca, [`${svcUrl}/auth/callback`]);
    echo = await echoBackend('echo');
    home = makeTempDir('svc-home-llng-');
    writeFileSync(join(home, 'ca.pem'), ca.caPem);
  });
  afterEach(async () => {
    await svc?.close(1000);
    svc = undefined;
  });
  after(async () => {
    await llng?.stop();
    await echo?.close();
    if (home !== undefined) rmSync(home, { recursive: true, force: true });
  });

  async function startSvc(tls: 'rootCA' | 'none' | 'skip'): Promise<TestServer> {
    const oidc = {
      name: 'LemonLDAP::NG', issuer: llng.issuer, clientID: LLNG_CLIENT_ID, clientSecret: '$oidc.clientSecret',
      enableUserInfoGroups: true, userInfoPath: '/oauth2/userinfo',
      ...(tls === 'rootCA' ? { rootCA: ca.caPem } : {}),
    };
    const dir = tempConfigDir({
      'svc-cm.yaml': configMap('svc-cm', {
        url: svcUrl,
        'oidc.config': YAML.stringify(oidc),
        'extension.config': echoExtension(echo.url),
        ...(tls === 'skip' ? { 'oidc.tls.insecure.skip.verify': 'true' } : {}),
      }),
      'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': POLICY }),
      'svc-secret.yaml': secret('svc-secret', { 'server.secretkey': SECRET_KEY, 'admin.password': '', 'oidc.clientSecret': LLNG_CLIENT_SECRET }),
    });
    svc = await startTestServer(dir, { port });
    return svc;
  }

  async function login(user: string, password: string): Promise<{ token: string; request: (path: string) => Promise<Response> }> {
    const browser = llng.browser();
    const { url, res } = await llngBrowse(browser, new URL(llng.issuer).origin, `${svcUrl}/auth/login?return_url=%2Fapps`, user, password);
    const token = browser.cookie(svcUrl, 'svc.token');
    if (token === undefined) throw new Error(`no svc.token after the login (landed on ${url}): ${res.status} ${(await res.text()).slice(0, 300)}`);
    await res.body?.cancel();
    expect(url).to.equal(`${svcUrl}/apps`);
    return { token, request: (path) => browser.request(`${svcUrl}${path}`) };
  }

  it('logs in with rootCA; groups come only from userinfo and decide what the proxy allows', async () => {
    await startSvc('rootCA');
    const dwho = await login('dwho', 'dwho');
    expect(decodeJwt(dwho.token)).to.not.have.property('groups');
    expect(decodeJwt(dwho.token)['aud']).to.deep.equal([LLNG_CLIENT_ID]);
    // LemonLDAP::NG lists groups in no fixed order.
    expect(await userInfo(svcUrl, dwho.token)).to.deep.include({ loggedIn: true, username: 'dwho', iss: llng.issuer });
    expect((await userInfo(svcUrl, dwho.token))['groups']).to.have.members(['users', 'timelords']);
    const allowed = await dwho.request('/api/v1/extensions/echo/hello');
    expect(allowed.status).to.equal(200);
    expect(((await allowed.json()) as { url: string }).url).to.equal('/hello');

    const rtyler = await login('rtyler', 'rtyler');
    expect((await userInfo(svcUrl, rtyler.token))['groups']).to.have.members(['users', 'earthlings']);
    expect((await rtyler.request('/api/v1/extensions/echo/hello')).status).to.equal(403);
    expect(svc?.logs()).to.not.include(LLNG_CLIENT_SECRET).and.not.include(dwho.token);
  });

  it('fails with a clear certificate error without rootCA, and logs in with the skip switch', async () => {
    await startSvc('none');
    const res = await fetch(`${svcUrl}/auth/login`, { redirect: 'manual' });
    expect(res.status).to.equal(503);
    expect(((await res.json()) as { message: string }).message).to.match(/certificate verification failed: UNABLE_TO_VERIFY_LEAF_SIGNATURE/);
    await svc?.close(1000);

    await startSvc('skip');
    const dwho = await login('dwho', 'dwho');
    expect((await userInfo(svcUrl, dwho.token))['groups']).to.have.members(['users', 'timelords']);
    expect(svc?.logs()).to.include('oidc.tls.insecure.skip.verify is true');
  });

  it('svc login --sso --no-browser says that LemonLDAP::NG offers no device login', async () => {
    await startSvc('rootCA');
    const result = await startCli(home, ['login', svcUrl, '--sso', '--no-browser'], { NODE_EXTRA_CA_CERTS: join(home, 'ca.pem') }).done;
    expect(result.code).to.equal(1);
    expect(result.stderr).to.equal(`svc: the identity provider at ${llng.issuer} offers no device login; run 'svc login --sso' without --no-browser\n`);
  });
});

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
import { startCli } from '../helpers/cli-process.js';
import { LLNG_CLIENT_ID, LLNG_CLIENT_SECRET, llngBrowse, type Llng } from '../helpers/llng.js';
import { startLlngSvc, type LlngSvc } from '../helpers/llng-svc.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { userInfo } from '../helpers/sso-setup.js';
import { cleanUpTempDirs, makeTempDir } from '../helpers/temp-dir.js';

/** Members of LemonLDAP::NG's demo group `timelords` may use the extension `echo`. */
const POLICY = 'p, role:echo, extensions, *, */echo, allow\ng, timelords, role:echo\n';

describe('e2e: SSO login against LemonLDAP::NG over HTTPS', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let setup: LlngSvc;
  let llng: Llng;
  let svcUrl: string;
  let svc: TestServer | undefined;
  let home: string;

  before(async () => {
    setup = await startLlngSvc();
    ({ llng, svcUrl } = setup);
    home = makeTempDir('svc-home-llng-');
    writeFileSync(join(home, 'ca.pem'), setup.ca.caPem);
  });
  afterEach(async () => {
    await svc?.close(1000);
    svc = undefined;
  });
  after(async () => {
    await setup?.close();
    if (home !== undefined) rmSync(home, { recursive: true, force: true });
  });

  async function startSvc(tls: 'rootCA' | 'none' | 'skip'): Promise<TestServer> {
    const cm = setup.svcCm(tls === 'skip' ? { 'oidc.tls.insecure.skip.verify': 'true' } : {}, { rootCA: tls === 'rootCA' });
    svc = await startTestServer(setup.configDir(cm, POLICY), { port: setup.port });
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

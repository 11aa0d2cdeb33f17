/**
 * Names from outside never become a local account or a role (docs/rbac.md "SSO users and
 * groups"), end to end against LemonLDAP::NG, whose `sub` is the username (dwho, rtyler) and
 * whose groups come from its userinfo endpoint (dwho: users, timelords; rtyler: users,
 * earthlings). svc has a local account `earthlings`, named like rtyler's group: that group gets
 * none of the account's rules. Argo CD-style `g, timelords, role:echo` still works. A local
 * account `rtyler` added after rtyler's login takes his `sub` out of his subjects at the next
 * request, and his next login is refused with a message saying which name and why.
 */
import { expect } from 'chai';
import { renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { llngBrowse, type Llng } from '../helpers/llng.js';
import { startLlngSvc, type LlngSvc } from '../helpers/llng-svc.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const POLICY = [
  'p, role:echo, extensions, *, */echo, allow',
  'g, timelords, role:echo',
  // The local account's rule: an SSO group of the same name must not get it.
  'p, earthlings, extensions, *, */echo, allow',
  // A rule for rtyler's sub, which holds until a local account takes the name.
  'p, rtyler, logs, get, *',
].join('\n');

describe('e2e: SSO names that are reserved (LemonLDAP::NG, sub = username)', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let setup: LlngSvc;
  let llng: Llng;
  let svcUrl: string;
  let svc: TestServer;
  let dir: string;

  const svcCm = (accounts: Record<string, string>) => setup.svcCm({ 'accounts.earthlings': 'apiKey', ...accounts });

  before(async () => {
    setup = await startLlngSvc();
    ({ llng, svcUrl } = setup);
    dir = setup.configDir(svcCm({}), POLICY);
    svc = await startTestServer(dir, { port: setup.port });
  });
  after(async () => {
    await svc?.close(1000);
    await setup?.close();
  });

  async function login(user: string): Promise<{ landed: string; status: number; body: string; request: (path: string) => Promise<Response> }> {
    const browser = llng.browser();
    const { url, res } = await llngBrowse(browser, new URL(llng.issuer).origin, `${svcUrl}/auth/login?return_url=%2Fapps`, user, user);
    return { landed: url, status: res.status, body: await res.text(), request: (path) => browser.request(`${svcUrl}${path}`, { headers: { accept: 'application/json' } }) };
  }

  async function canI(as: { request: (path: string) => Promise<Response> }, what: string): Promise<string> {
    const res = await as.request(`/api/v1/account/can-i/${what}`);
    expect(res.status).to.equal(200);
    return ((await res.json()) as { value: string }).value;
  }

  /** Replaces svc-cm as an operator's editor does, and resolves once the server applied it. */
  async function rewriteSvcCm(text: string): Promise<void> {
    const applied = new Promise<void>((resolve) => {
      const off = svc.services.settings.onChange(() => {
        off();
        resolve();
      });
    });
    writeFileSync(join(dir, '.svc-cm.yaml.tmp'), text);
    renameSync(join(dir, '.svc-cm.yaml.tmp'), join(dir, 'svc-cm.yaml'));
    await applied;
  }

  it("an Argo CD-style 'g, <group>, role:x' line works; a group named like a local account gets none of its rules", async () => {
    const dwho = await login('dwho');
    expect(dwho.landed).to.equal(`${svcUrl}/apps`);
    expect((await dwho.request('/api/v1/extensions/echo/hello')).status).to.equal(200);

    const rtyler = await login('rtyler');
    expect(rtyler.landed).to.equal(`${svcUrl}/apps`);
    const refused = await rtyler.request('/api/v1/extensions/echo/hello');
    expect(refused.status).to.equal(403);
    expect(((await refused.json()) as { message: string }).message).to.equal("'rtyler' may not use extension 'echo' with GET: no rights rule allows extensions, *, */echo nor extensions, get, */echo");
    expect(svc.logs()).to.include(`single sign-on group 'earthlings' from ${llng.issuer} is not used for rights: it is the name of the local account 'earthlings'`);
  });

  it('an account added after a login takes the sub out at the next request, and the next login is refused, saying why', async () => {
    const rtyler = await login('rtyler');
    expect(await canI(rtyler, 'logs/get/x')).to.equal('yes');

    await rewriteSvcCm(svcCm({ 'accounts.rtyler': 'apiKey' }));
    expect(await canI(rtyler, 'logs/get/x')).to.equal('no');

    // This client does not ask for HTML: it gets the 401 with the reason (a browser gets the login page with ?error=sso_reserved_name).
    const again = await login('rtyler');
    const message = `single sign-on user 'rtyler' from ${llng.issuer} cannot log in: it is the name of the local account 'rtyler'; svc never takes a name from the identity provider for a local account or a role. Give the user another subject at the provider, or rename the local account`;
    expect(again.landed).to.match(new RegExp(`^${svcUrl}/auth/callback\\?`));
    expect(again.status).to.equal(401);
    expect(JSON.parse(again.body)).to.deep.include({ error: 'unauthenticated', message });
    expect(svc.logs()).to.include(message);

    // A browser (it asks for HTML) is sent back to the login page, which says the name is reserved.
    const browser = llng.browser();
    const { url } = await llngBrowse(browser, new URL(llng.issuer).origin, `${svcUrl}/auth/login?return_url=%2Fapps`, 'rtyler', 'rtyler', { accept: 'text/html' });
    expect(url).to.equal(`${svcUrl}/login?error=sso_reserved_name&return_url=%2Fapps`);
    expect(browser.cookie(svcUrl, 'svc.token')).to.equal(undefined);
  });
});

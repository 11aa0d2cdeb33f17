/**
 * The bundled identity provider with the SAML connector against a real SimpleSAMLphp IdP
 * (scripts/peers/start-simplesamlphp.sh, started once for the file), end to end with a plain HTTP
 * client that follows redirects and posts forms: /auth/login → svc's chooser → the IdP's login
 * form → its auto-POST form back to /api/idp/callback → the svc.token cookie, whose SAML groups
 * a `g, <group>, role:x` rule judges on the extension proxy; groups named like svc's roles or its
admin account grant nothing. Refused: a user in none of
 * allowedGroups, a response signed by a key the connector does not trust (a second connector
 * whose `ca` is another certificate, same IdP), and a replayed response. A login's round trip
 * is bound to the browser that started it: an attacker who sends the upstream URL of a login
 * they started to a victim already signed in at the IdP gets nothing at /finish (issue 21).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import { FormBrowser, isPage, type Page } from '../helpers/form-browser.js';
import { toolsAndSecretPolicy } from '../helpers/manifests.js';
import { freePort, startPeer, type Peer } from '../helpers/peers.js';
import { idpSvcAddress, startIdpSvc, type IdpSvc } from '../helpers/idp-svc.js';
import type { TestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

const SECRET_KEY = 'idp-saml-e2e-secret-key-0123456789';
const POLICY = toolsAndSecretPolicy('devs', 'admins');

interface SamlPost { readonly SAMLResponse: string; readonly RelayState: string }

describe('e2e: the bundled identity provider with the SAML connector (real SimpleSAMLphp)', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let ssp: Peer;
  let server: TestServer;
  let svc: IdpSvc | undefined;
  let url: string;
  let ssoUrl: string;

  before(async function () {
    const at = await idpSvcAddress();
    url = at.url;
    const acs = `${url}/api/idp/callback`;
    const sspPort = await freePort();
    ssp = await startPeer('start-simplesamlphp.sh', [String(sspPort)], { SP_ENTITY_ID: acs, SP_ACS_URL: acs, SP_SLO_URL: `${url}/api/idp/logout` });
    const idp = `http://127.0.0.1:${sspPort}`;
    ssoUrl = `${idp}/saml2/idp/SSOService.php`;
    const saml = {
      ssoURL: `${idp}/saml2/idp/SSOService.php`, ssoIssuer: `${idp}/saml2/idp/metadata.php`, ca: await readFile(join(ssp.dir, 'cert', 'idp.crt'), 'utf8'),
      usernameAttr: 'uid', emailAttr: 'mail', groupsAttr: 'groups', nameIDPolicyFormat: 'unspecified',
    };
    const otherCa = await readFile(new URL('../../fixtures/saml/other.crt', import.meta.url), 'utf8');
    const connectors = [
      { type: 'saml', id: 'corp', name: 'Corp SAML', config: { ...saml, allowedGroups: ['admins', 'devs'] } },
      { type: 'saml', id: 'wrongkey', name: 'Untrusted key', config: { ...saml, ca: otherCa } },
    ];
    svc = await startIdpSvc(at, {
      connectors, extensions: ['tools', 'secret'], policy: POLICY,
      secrets: { 'server.secretkey': SECRET_KEY },
    });
    server = svc.server;
  });

  after(async function () {
    await svc?.close();
    await ssp?.stop();
  });

  const page = (value: URL | Page, what: string): Page => {
    if (!isPage(value)) throw new Error(`expected ${what}, got a redirect to ${value.href}`);
    return value;
  };

  /** /auth/login → the chooser → `connector` → the IdP's form, filled in → its auto-POST form. */
  async function atIdp(browser: FormBrowser, connector: string, username: string, password: string): Promise<{ post: Page; saml: SamlPost }> {
    const chooser = page(await browser.go(`${url}/auth/login?return_url=/apps`, `${url}/apps`), 'the chooser');
    const href = new RegExp(`href="([^"]*/connector/${connector})"`).exec(chooser.html)?.[1];
    if (href === undefined) throw new Error(`no ${connector} on the chooser: ${chooser.html}`);
    const form = page(await browser.go(new URL(href, url).href, `${url}/apps`), 'the IdP login form');
    expect(form.url).to.match(/loginuserpass\.php/);
    const post = page(await browser.submit(form, { username, password }, `${url}/apps`), 'the IdP auto-POST form');
    const field = (name: string): string => new RegExp(`name="${name}" value="([^"]*)"`).exec(post.html)?.[1] ?? '';
    const saml = { SAMLResponse: field('SAMLResponse'), RelayState: field('RelayState') };
    expect(saml.SAMLResponse, 'a SAMLResponse from the IdP').not.to.equal('');
    expect(post.html).to.contain(`action="${url}/api/idp/callback"`);
    return { post, saml };
  }

  async function logIn(connector: string, username: string, password: string): Promise<{ browser: FormBrowser; landed: URL | Page; saml: SamlPost }> {
    const browser = new FormBrowser();
    const { post, saml } = await atIdp(browser, connector, username, password);
    return { browser, landed: await browser.submit(post, {}, `${url}/apps`), saml };
  }

  async function groupsOf(browser: FormBrowser): Promise<string[]> {
    const info = await (await browser.request(`${url}/api/v1/session/userinfo`)).json() as Record<string, unknown>;
    expect(info).to.deep.include({ loggedIn: true, iss: `${url}/api/idp` });
    return (info['groups'] as string[]).sort();
  }

  const status = async (browser: FormBrowser, extension: string): Promise<number> => (await browser.request(`${url}/api/v1/extensions/${extension}/x`)).status;

  it('logs bob in through /auth/login to a svc.token; his SAML group allows one extension and not another', async () => {
    const { browser, landed } = await logIn('corp', 'bob', 'bob123');
    expect(landed, 'back at return_url').to.be.instanceOf(URL);
    expect(await groupsOf(browser)).to.deep.equal(['devs']);
    expect(await status(browser, 'tools')).to.equal(200);
    expect(await status(browser, 'secret')).to.equal(403);
  });

  it('lets alice, in admins too, through to both extensions', async () => {
    const { browser, landed } = await logIn('corp', 'alice', 'alice123');
    expect(landed).to.be.instanceOf(URL);
    expect(await groupsOf(browser)).to.deep.equal(['admins', 'devs']);
    expect(await status(browser, 'tools')).to.equal(200);
    expect(await status(browser, 'secret')).to.equal(200);
  });

  it("gives mallory's signed SAML groups 'role:admin' and 'admin' nothing: only her group devs counts", async () => {
    const { browser, landed } = await logIn('corp', 'mallory', 'mallory123');
    expect(landed).to.be.instanceOf(URL);
    // The token says what the IdP said; the rights leave out the names svc reserves.
    expect(await groupsOf(browser)).to.deep.equal(['Role:Admin', 'admin', 'devs', 'role:admin']);
    expect(await status(browser, 'tools')).to.equal(200);
    expect(await status(browser, 'secret')).to.equal(403);
    const canI = await browser.request(`${url}/api/v1/account/can-i/applications/delete/x`);
    expect(await canI.json()).to.deep.equal({ value: 'no' });
    expect(server.logs()).to.contain(`single sign-on group 'role:admin' from ${url}/api/idp is not used for rights: names starting with 'role:' are reserved for svc's own roles`);
    expect(server.logs()).to.contain(`single sign-on group 'admin' from ${url}/api/idp is not used for rights: it is the name of the built-in local account 'admin'`);
  });

  it('refuses carol, in none of allowedGroups, tells her so and logs why', async () => {
    const { landed, browser } = await logIn('corp', 'carol', 'carol123');
    const refused = page(landed, 'the refusal page');
    expect(refused.status).to.equal(401);
    expect(refused.html).to.contain('Login failed');
    expect(refused.html).to.contain('You are not a member of any group allowed to log in here: ask your administrator for access.');
    expect(refused.html).not.to.contain('contractors');
    expect(server.logs()).to.contain('user carol is in none of allowedGroups (admins, devs)');
    // Once at info at the provider, with the connector, the person's sentence and the request id.
    const refusals = server.logs().split('\n').filter((l) => l.includes('"msg":"identity provider: the connector refused the login"')).map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(refusals).to.have.length(1);
    expect(refusals[0]).to.deep.include({ level: 30, connector: 'corp' });
    expect(refusals[0]?.['reason']).to.match(/^user carol is in none of allowedGroups \(admins, devs\)/);
    expect(refusals[0]?.['requestId']).to.be.a('string').and.not.equal('');
    expect(await (await fetch(`${url}/metrics`)).text()).to.contain('svc_login_outcomes_total{method="idp-browser",connector="corp",reason="refused"} 1');
    expect((await browser.request(`${url}/api/v1/extensions/tools/x`)).status).to.equal(401);
  });

  it('refuses a response signed by a key the connector does not trust', async () => {
    const { landed } = await logIn('wrongkey', 'alice', 'alice123');
    const refused = page(landed, 'the refusal page');
    expect(refused.status).to.equal(401);
    expect(refused.html).to.contain('could not be verified');
    expect(refused.html).not.to.contain('signature');
    expect(server.logs()).to.match(/saml: response refused: Invalid signature/);
  });

  it('refuses a replayed response: again with its RelayState, and for another login', async () => {
    const { landed, saml } = await logIn('corp', 'bob', 'bob123');
    expect(landed).to.be.instanceOf(URL);
    // The same POST again: its transaction was used up by the first.
    const again = page(await new FormBrowser().go(`${url}/api/idp/callback`, `${url}/apps`, new URLSearchParams({ ...saml })), 'the expired page');
    expect(again.status).to.equal(400);
    expect(again.html).to.contain('Login expired');
    // The same response under the RelayState of a new login: it answers the old request.
    const browser = new FormBrowser();
    const fresh = await atIdp(browser, 'corp', 'bob', 'bob123');
    const replay = page(await browser.go(`${url}/api/idp/callback`, `${url}/apps`, new URLSearchParams({ SAMLResponse: saml.SAMLResponse, RelayState: fresh.saml.RelayState })), 'the refusal page');
    expect(replay.status).to.equal(401);
    expect(server.logs()).to.match(/saml: response refused: the Response answers request _[0-9a-f]{40}, not this login's _[0-9a-f]{40}/);
  });

  it('binds the round trip to the browser that started it: the attacker\'s /finish gets no token, the victim\'s own login completes', async () => {
    // The victim already has a session at the IdP (from an earlier login through svc).
    const victim = (await logIn('corp', 'bob', 'bob123')).browser;
    const attacker = new FormBrowser();
    const chooser = page(await attacker.go(`${url}/auth/login?return_url=/apps`, `${url}/apps`), 'the chooser');
    const href = /href="([^"]*\/interaction\/([^/"]+)\/connector\/corp)"/.exec(chooser.html);
    if (href?.[1] === undefined || href[2] === undefined) throw new Error(`no corp on the chooser: ${chooser.html}`);
    const uid = href[2];
    const upstream = await attacker.go(new URL(href[1], url).href, ssoUrl);
    expect(upstream, 'the attacker stops at the IdP').to.be.instanceOf(URL);
    // The victim opens the link: the IdP answers at once (no click), the answer posts back to svc.
    const post = page(await victim.go((upstream as URL).href, `${url}/apps`), 'the IdP auto-POST form');
    expect(post.html).to.contain(`action="${url}/api/idp/callback"`);
    const landed = page(await victim.submit(post, {}, `${url}/apps`), 'the refusal');
    expect(landed.status).to.equal(400);
    expect(landed.html).to.contain('Login expired');
    // The attacker's /finish, with the interaction's cookies: no login, no token.
    const finish = await attacker.go(`${url}/api/idp/interaction/${uid}/finish`, `${url}/apps`);
    expect(finish, 'no way back to the application').not.to.be.instanceOf(URL);
    expect((finish as Page).status).to.equal(400);
    const info = await (await attacker.request(`${url}/api/v1/session/userinfo`)).json() as Record<string, unknown>;
    expect(info['loggedIn'], 'the attacker holds no session').not.to.equal(true);
    expect((await attacker.request(`${url}/api/v1/extensions/tools/x`)).status).to.equal(401);
    expect(server.logs()).to.contain('a login response came back in a browser that did not start the login; refused');
    // The victim's own login goes through, without a click at the IdP.
    const own = await victim.go(`${url}/auth/login?return_url=/apps`, `${url}/apps`);
    const onward = isPage(own) ? await victim.go(new URL(/href="([^"]*\/connector\/corp)"/.exec(own.html)?.[1] ?? '', url).href, `${url}/apps`) : own;
    const back = isPage(onward) ? await victim.submit(onward, {}, `${url}/apps`) : onward;
    expect(back, 'back at return_url').to.be.instanceOf(URL);
    expect(await groupsOf(victim)).to.deep.equal(['devs']);
  });

  it('keeps the binding in a cookie only the interaction\'s pages get: HttpOnly, SameSite=Lax, 5 minutes', async () => {
    const browser = new FormBrowser();
    const chooser = page(await browser.go(`${url}/auth/login?return_url=/apps`, `${url}/apps`), 'the chooser');
    const href = /href="([^"]*\/interaction\/([^/"]+)\/connector\/corp)"/.exec(chooser.html);
    const res = await browser.request(new URL(href?.[1] ?? '', url).href);
    expect(res.status).to.equal(302);
    const cookie = res.headers.getSetCookie().find((c) => c.startsWith('svc.idp.login='));
    expect(cookie).to.match(new RegExp(`^svc\\.idp\\.login=[A-Za-z0-9_-]{43}; path=/api/idp/interaction/${href?.[2] ?? ''}; expires=[^;]+; samesite=lax; httponly$`));
    const expires = Date.parse(/expires=([^;]+)/.exec(cookie ?? '')?.[1] ?? '');
    expect(expires - Date.now()).to.be.within(290_000, 301_000);
  });

  it('serves the SP metadata of a SAML connector, and 404 for any other id', async () => {
    const res = await fetch(`${url}/api/idp/saml/corp/metadata`);
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.match(/samlmetadata\+xml/);
    const xml = await res.text();
    expect(xml).to.contain(`entityID="${url}/api/idp/callback"`);
    expect(xml).to.contain(`Location="${url}/api/idp/callback"`);
    expect((await fetch(`${url}/api/idp/saml/nope/metadata`)).status).to.equal(404);
  });
});

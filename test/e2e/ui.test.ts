/**
 * svc's login and account pages in a real browser (Debian's Chromium through playwright-core),
 * against a real server with local accounts and the bundled identity provider's LDAP connector
 * on a real slapd: local login (by keyboard alone), the wrong-password and lockout messages, SSO
 * through the provider's own pages, the failed and expired SSO messages with their return_url,
 * API tokens, the password change, logout, the admin's account list, the security headers, a
 * cross-origin call refused, and axe-core's serious and critical findings on every page.
 * Screenshots land in test-output/ui/ (docs/ui.md shows two of them).
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import bcrypt from 'bcryptjs';
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import YAML from 'yaml';
import { subjectOf } from '../../src/idp/claims.js';
import { seriousViolations, ssoLoginFromLoginPage, type Chromium } from '../helpers/chromium.js';
import { LDAP_BIND_SECRETS, startLdapDirectory, type LdapDirectory } from '../helpers/ldap-directory.js';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import { freePort } from '../helpers/peers.js';
import { ldapConnectorConfig } from '../connectors/ldap/fixture.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';
import { startUiSvc, type UiSvc } from '../helpers/ui-svc.js';

const PASSWORDS = { admin: 'admin-ui-pass', alice: 'alice-ui-pass', erin: 'erin-ui-pass', frank: 'frank-ui-pass' } as const;

describe('e2e: the login and account pages in Chromium', function () {
  cleanUpTempDirs();
  this.timeout(120_000);
  let slapd: LdapDirectory | undefined;
  let ui: UiSvc | undefined;
  let url: string;
  let chromium: Chromium;

  before(async function () {
    slapd = await startLdapDirectory();
    const port = await freePort();
    url = `http://127.0.0.1:${port}`;
    const ldap = ldapConnectorConfig(slapd.port);
    const hash = (p: string) => bcrypt.hashSync(p, 4);
    const dir = tempConfigDir({
      'svc-cm.yaml': configMap('svc-cm', {
        url,
        'idp.config': YAML.stringify({ connectors: [
          { type: 'ldap', id: 'corp', name: 'Corp directory', config: ldap },
          { type: 'ldap', id: 'lab', name: 'Lab directory', config: ldap },
        ] }),
        'accounts.admin': 'apiKey, login',
        'accounts.alice': 'apiKey, login',
        'accounts.erin': 'login',
        'accounts.frank': 'login',
        'accounts.robot': 'apiKey',
        'accounts.robot.enabled': 'false',
      }),
      'svc-rbac-cm.yaml': configMap('svc-rbac-cm', { 'policy.csv': '' }),
      'svc-secret.yaml': secret('svc-secret', {
        'server.secretkey': 'ui-e2e-secret-key-0123456789abcdef',
        ...LDAP_BIND_SECRETS,
        'admin.password': hash(PASSWORDS.admin),
        ...Object.fromEntries((['alice', 'erin', 'frank'] as const).map((n) => [`accounts.${n}.password`, hash(PASSWORDS[n])])),
      }),
    });
    // Two failures lock a name out, so the lockout test needs three tries, not six. The provider's
    // random wait after a wrong password (up to 1 s) is left out: no test here is about it.
    ui = await startUiSvc(dir, { port, env: { SVC_SESSION_FAILURE_MAX_FAIL_COUNT: '2' }, idp: { failureDelay: () => Promise.resolve() } });
    ({ chromium } = ui);
  });

  after(async function () {
    await Promise.all([ui?.close(), slapd?.stop()]);
  });

  async function noSeriousViolations(page: Page, what: string): Promise<void> {
    expect(await seriousViolations(page), what).to.deep.equal([]);
  }

  async function localLogin(page: Page, username: string, password: string): Promise<void> {
    await page.getByLabel('Username').fill(username);
    await page.getByLabel('Password').fill(password);
    await page.getByRole('button', { name: 'Log in', exact: true }).click();
  }

  const alert = (page: Page) => page.getByRole('alert');

  it('/login: the local form and one button per connector, with the security headers, accessible at laptop and phone width', async function () {
    // The two widths in two contexts at once: each page waits mostly on the browser and the server.
    await Promise.all([laptopWidth(), phoneWidth()]);
  });

  async function laptopWidth(): Promise<void> {
    const page = await chromium.page();
    const res = await page.goto(`${url}/login?return_url=/`);
    const headers = res?.headers() ?? {};
    expect(headers['content-security-policy']).to.contain("frame-ancestors 'none'").and.contain("script-src 'self'").and.not.contain('unsafe-inline');
    expect(headers['referrer-policy']).to.equal('no-referrer');
    expect(headers['cache-control']).to.equal('no-store');
    await page.getByRole('link', { name: 'Log in via Corp directory' }).waitFor();
    expect(await page.getByRole('link', { name: /^Log in via/ }).allTextContents()).to.deep.equal(['Log in via Corp directory', 'Log in via Lab directory']);
    expect(await page.getByRole('link', { name: 'Log in via Corp directory' }).getAttribute('href')).to.equal('/auth/login?return_url=%2F&connector_id=corp');
    expect(await page.getByLabel('Username').isVisible()).to.equal(true);
    await noSeriousViolations(page, '/login');
    await chromium.screenshot(page, 'login');
  }

  async function phoneWidth(): Promise<void> {
    const phone = await chromium.page({ viewport: { width: 375, height: 740 } });
    await phone.goto(`${url}/login`);
    await phone.getByRole('link', { name: 'Log in via Lab directory' }).waitFor();
    const overflow = await phone.evaluate('document.documentElement.scrollWidth > window.innerWidth');
    expect(overflow, 'no horizontal scrolling at phone width').to.equal(false);
    await chromium.screenshot(phone, 'login-phone');
  }

  it('logs in with the keyboard alone and lands on the account page, which says who I am and when the session ends', async function () {
    const page = await chromium.page();
    await page.goto(`${url}/`);
    expect(new URL(page.url()).pathname + new URL(page.url()).search).to.equal('/login?return_url=%2F');
    await page.getByLabel('Username').waitFor();
    // The page puts the focus in the username field; Tab and Enter do the rest.
    await page.locator('#username:focus').waitFor();
    await page.keyboard.type('alice');
    await page.keyboard.press('Tab');
    await page.keyboard.type(PASSWORDS.alice);
    await page.keyboard.press('Enter');
    await page.waitForURL(`${url}/`);
    await page.locator('#me-username', { hasText: 'alice' }).waitFor();
    expect(await page.locator('#me-issuer').textContent()).to.equal('svc (local account)');
    expect(await page.locator('#me-expires').textContent()).to.match(/\d{4}/);
    expect(await page.locator('#accounts').isHidden(), 'alice may not list accounts').to.equal(true);
  });

  it('stays on svc after a local login whatever return_url says: the page goes by the server\'s rule', async function () {
    // Each return_url in its own context, all three at once.
    await Promise.all(['/.//evil.example/x', '/a/..//evil.example/y', '//evil.example/z'].map(async (returnUrl) => {
      const page = await chromium.page();
      const offSite: string[] = [];
      await page.route((u) => u.hostname === 'evil.example', async (route) => {
        offSite.push(route.request().url());
        await route.abort();
      });
      await page.goto(`${url}/login?return_url=${encodeURIComponent(returnUrl)}`);
      await localLogin(page, 'alice', PASSWORDS.alice);
      await page.waitForURL((u) => u.hostname === 'evil.example' || u.href === `${url}/`, { waitUntil: 'commit' }).catch(() => undefined);
      expect(offSite, returnUrl).to.deep.equal([]);
      expect(page.url(), returnUrl).to.equal(`${url}/`);
      // The context, not the page: page.close() right after a navigation committed waited out the
      // test's whole timeout in Chromium (closing the context takes milliseconds).
      await page.context().close();
    }));
  });

  it('says "Wrong username or password" for a wrong password, and keeps the name', async function () {
    const page = await chromium.page();
    await page.goto(`${url}/login`);
    await localLogin(page, 'alice', 'not-her-password');
    await alert(page).filter({ hasText: 'Wrong username or password.' }).waitFor();
    expect(await page.getByLabel('Username').inputValue()).to.equal('alice');
    expect(await page.evaluate('document.activeElement?.id')).to.equal('password');
    await chromium.screenshot(page, 'login-wrong-password');
  });

  it('says when a locked-out name may try again (from Retry-After)', async function () {
    const page = await chromium.page();
    await page.goto(`${url}/login`);
    for (let i = 0; i < 2; i++) {
      await localLogin(page, 'erin', `wrong-${i}`);
      await alert(page).filter({ hasText: 'Wrong username or password.' }).waitFor();
      await page.getByRole('button', { name: 'Log in', exact: true }).and(page.locator(':enabled')).waitFor();
    }
    await localLogin(page, 'erin', PASSWORDS.erin);
    await alert(page).filter({ hasText: /Too many failed logins for this user\. Try again in \d+ (seconds|minutes) \(at \d\d:\d\d\)\./ }).waitFor();
    expect(page.url()).to.equal(`${url}/login`);
    await chromium.screenshot(page, 'login-locked-out');
  });

  it('generates an API token (shown once, copied), which works as a bearer, and deletes it', async function () {
    const page = await chromium.page({ clipboardFor: url });
    await page.goto(`${url}/login`);
    await localLogin(page, 'alice', PASSWORDS.alice);
    await page.waitForURL(`${url}/`);
    await page.getByRole('heading', { name: 'API tokens' }).waitFor();
    await page.getByLabel('Token ID (optional)').fill('ci-bot');
    await page.getByLabel('Expires').selectOption('168h');
    await page.getByRole('button', { name: 'Generate token' }).click();
    await page.locator('#new-token').waitFor();
    const token = await page.getByLabel('New token').inputValue();
    await page.getByRole('button', { name: 'Copy' }).click();
    await page.getByText('Token copied to the clipboard.').waitFor();
    expect(await page.evaluate('navigator.clipboard.readText()')).to.equal(token);
    await page.getByRole('cell', { name: 'ci-bot', exact: true }).waitFor();
    const me = await fetch(`${url}/api/v1/session/userinfo`, { headers: { authorization: `Bearer ${token}` } });
    expect(await me.json()).to.deep.include({ loggedIn: true, username: 'alice' });
    await noSeriousViolations(page, 'the account page');
    await chromium.screenshot(page, 'account', { fullPage: true });

    await page.getByRole('button', { name: 'Delete token ci-bot' }).click();
    await page.getByText('Token ci-bot deleted.').waitFor();
    expect(await page.getByRole('cell', { name: 'ci-bot', exact: true }).count()).to.equal(0);
    const after = await fetch(`${url}/api/v1/session/userinfo`, { headers: { authorization: `Bearer ${token}` } });
    expect(await after.json()).to.deep.equal({ loggedIn: false });
  });

  it('changes the password, logs out, and only the new password logs in again', async function () {
    const page = await chromium.page();
    await page.goto(`${url}/login`);
    await localLogin(page, 'frank', PASSWORDS.frank);
    await page.waitForURL(`${url}/`);
    expect(await page.locator('#tokens').isHidden(), 'frank has no apiKey capability').to.equal(true);
    await page.getByLabel('Current password').fill(PASSWORDS.frank);
    await page.getByLabel('New password', { exact: true }).fill('frank-new-pass-2');
    await page.getByLabel('New password again').fill('frank-new-pass-2');
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByText('Password changed.').waitFor();
    // The session was renewed with the change: the page still works.
    await page.reload();
    await page.locator('#me-username', { hasText: 'frank' }).waitFor();

    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL(`${url}/login`);
    expect((await page.context().cookies(url)).find((c) => c.name === 'svc.token')).to.equal(undefined);
    await page.goto(`${url}/`);
    await page.waitForURL(/\/login\?return_url=%2F$/);
    await localLogin(page, 'frank', PASSWORDS.frank);
    await alert(page).filter({ hasText: 'Wrong username or password.' }).waitFor();
    await localLogin(page, 'frank', 'frank-new-pass-2');
    await page.waitForURL(`${url}/`);
  });

  it('shows an admin every account with its capabilities and enabled state', async function () {
    const page = await chromium.page();
    await page.goto(`${url}/login`);
    await localLogin(page, 'admin', PASSWORDS.admin);
    await page.waitForURL(`${url}/`);
    const rows = page.locator('#account-rows tr');
    await page.getByRole('heading', { name: 'Accounts' }).waitFor();
    const table = await rows.evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].slice(0, 3).map((td) => td.textContent)));
    expect(table).to.deep.include.members([['alice', 'apiKey, login', 'yes'], ['robot', 'apiKey', 'no'], ['admin', 'apiKey, login', 'yes']]);
    await chromium.screenshot(page, 'account-admin');
  });

  /** Visible elements of the page that stick out of the viewport's width, as `tag#id.class: left-right`. */
  async function outsideViewport(page: Page): Promise<string[]> {
    return page.evaluate(`[...document.body.querySelectorAll('*')].filter((e) => {
      const r = e.getBoundingClientRect();
      return r.width > 0 && r.height > 0 && (r.left < 0 || r.right > window.innerWidth);
    }).map((e) => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className ? '.' + e.className : '') + ': ' + Math.round(e.getBoundingClientRect().left) + '-' + Math.round(e.getBoundingClientRect().right))`);
  }

  it('at 375 px: no element outside the viewport; the token count follows a new token; times name their zone; /favicon.ico', async function () {
    const page = await chromium.page({ viewport: { width: 375, height: 740 } });
    await page.goto(`${url}/login`);
    await localLogin(page, 'admin', PASSWORDS.admin);
    await page.waitForURL(`${url}/`);
    await page.getByRole('heading', { name: 'Accounts' }).waitFor();
    const adminTokens = page.locator('#account-rows tr', { hasText: 'admin' }).locator('td').nth(3);
    expect(await adminTokens.textContent()).to.equal('0');
    await page.getByLabel('Token ID (optional)').fill('phone-token-with-a-long-name');
    await page.getByRole('button', { name: 'Generate token' }).click();
    await page.locator('#new-token').waitFor();
    await page.locator('#token-rows td', { hasText: /^phone-token-with-a-long-name$/ }).waitFor();
    await page.locator('#account-rows tr', { hasText: 'admin' }).locator('td', { hasText: /^1$/ }).waitFor();
    expect(await adminTokens.textContent()).to.equal('1');
    // The test's browser runs in UTC (en-GB): every time on the page says so.
    expect(await page.locator('#me-expires').textContent()).to.match(/\d{4}.*\d{2}:\d{2} UTC$/);
    expect(await page.locator('#token-rows td').nth(1).textContent()).to.match(/ UTC$/);
    expect(await outsideViewport(page)).to.deep.equal([]);
    expect(await page.evaluate('document.documentElement.scrollWidth > window.innerWidth'), 'no horizontal scrolling').to.equal(false);
    await chromium.screenshot(page, 'account-phone', { fullPage: true });
    await page.getByRole('button', { name: 'Delete token phone-token-with-a-long-name' }).click();
    await page.getByText('Token phone-token-with-a-long-name deleted.').waitFor();
    await page.locator('#account-rows tr', { hasText: 'admin' }).locator('td', { hasText: /^0$/ }).waitFor();

    const icon = await fetch(`${url}/favicon.ico`);
    expect(icon.status).to.equal(200);
    expect(icon.headers.get('content-type')).to.match(/^image\//);
  });

  it('logs in through the bundled provider and its LDAP connector (real slapd) from the login page, back to return_url, and out', async function () {
    const page = await chromium.page();
    await ssoLoginFromLoginPage(page, {
      svcUrl: url,
      button: 'Log in via Corp directory',
      returnUrl: '/?from=sso',
      async logIn(at) {
        await at.getByRole('heading', { name: 'Log in with Corp directory' }).waitFor();
        await noSeriousViolations(at, "the provider's password form");
        await chromium.screenshot(at, 'idp-password-form');
        await at.getByLabel('Username').fill('bob');
        await at.getByLabel('Password').fill('wrong');
        await at.getByRole('button', { name: 'Log in' }).click();
        await alert(at).filter({ hasText: 'Wrong username or password.' }).waitFor();
        await at.getByLabel('Password').fill('bob123');
        await at.getByRole('button', { name: 'Log in' }).click();
      },
    });
    // The readable name, and the opaque sub (what rights name) beside it.
    await page.locator('#me-subject', { hasText: subjectOf('bob', 'corp') }).waitFor();
    expect(await page.locator('#me-username').textContent()).to.equal('bob');
    expect(await page.locator('#me-groups').textContent()).to.equal('devs, qa');
    expect(await page.locator('#me-issuer').textContent()).to.equal(`${url}/api/idp`);
    expect(await page.locator('#password').isHidden(), 'no password form for an SSO user').to.equal(true);
    await chromium.screenshot(page, 'account-sso');

    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Log out' }).waitFor();
    await noSeriousViolations(page, "the provider's logout page");
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL(/\/login\?return_url=%2F$/);
    const info = await page.evaluate("fetch('/api/v1/session/userinfo').then((r) => r.json())");
    expect(info).to.deep.equal({ loggedIn: false });
  });

  it('logs no one out from a link or a form on another site; /auth/logout asks, and its button logs out', async function () {
    const page = await chromium.page();
    await ssoLoginFromLoginPage(page, {
      svcUrl: url, button: 'Log in via Corp directory', returnUrl: '/',
      async logIn(at) {
        await at.getByLabel('Username').fill('bob');
        await at.getByLabel('Password').fill('bob123');
        await at.getByRole('button', { name: 'Log in' }).click();
      },
    });
    await page.locator('#me-subject', { hasText: subjectOf('bob', 'corp') }).waitFor();
    const loggedIn = async (): Promise<unknown> => (await page.evaluate("fetch('/api/v1/session/userinfo').then((r) => r.json())") as { loggedIn: unknown }).loggedIn;
    // Another site's page: an <img> to /auth/logout, and a form that posts there.
    const evil = await pageServer(`<!doctype html><img src="${url}/auth/logout"><form method="post" action="${url}/auth/logout"></form>`);
    try {
      await page.goto(evil.url);
      await page.evaluate('document.forms[0].submit()');
      await page.waitForURL(`${url}/auth/logout`);
      expect(await page.locator('body').textContent()).to.contain('permission_denied');
    } finally {
      evil.server.close();
    }
    await page.goto(`${url}/`);
    expect(await loggedIn(), 'still logged in').to.equal(true);
    // A link to /auth/logout shows svc's page, which asks; its button logs out.
    const res = await page.goto(`${url}/auth/logout`);
    expect(res?.headers()['content-security-policy']).to.contain("form-action 'self'");
    await page.getByRole('heading', { name: 'Log out of svc?' }).waitFor();
    await noSeriousViolations(page, 'the logout confirmation');
    expect(await loggedIn(), 'still logged in').to.equal(true);
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.getByRole('heading', { name: 'Log out' }).waitFor();
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL(/\/login/);
    expect(await loggedIn()).to.equal(false);
  });

  it("the provider's chooser and error pages look like svc's and pass the accessibility check", async function () {
    const page = await chromium.page();
    await page.goto(`${url}/auth/login?return_url=/`);
    await page.getByRole('link', { name: 'Log in with Lab directory' }).waitFor();
    const res = await page.reload();
    expect(res?.headers()['content-security-policy']).to.contain("frame-ancestors 'none'");
    await noSeriousViolations(page, "the provider's chooser");
    await chromium.screenshot(page, 'idp-chooser');

    const error = await page.goto(`${url}/api/idp/interaction/not-a-login`);
    expect(error?.status()).to.equal(400);
    await page.getByRole('heading', { name: 'Login expired' }).waitFor();
    await noSeriousViolations(page, "the provider's error page");
    await chromium.screenshot(page, 'idp-error');

    // The device flow's page (the CLI on a machine without a browser).
    const discovery = (await (await fetch(`${url}/api/idp/.well-known/openid-configuration`)).json()) as { device_authorization_endpoint: string };
    const device = await fetch(discovery.device_authorization_endpoint, { method: 'POST', body: new URLSearchParams({ client_id: 'svc-cli', scope: 'openid' }) });
    const { verification_uri: verificationUri } = (await device.json()) as { verification_uri: string };
    const input = await page.goto(verificationUri);
    expect(input?.headers()['content-security-policy']).to.contain("frame-ancestors 'none'");
    await page.getByLabel('Code').waitFor();
    await noSeriousViolations(page, "the provider's device code page");
    await chromium.screenshot(page, 'idp-device');
  });

  it('brings a failed or expired SSO login back to the login page with a message and its return_url', async function () {
    // The two logins in two contexts, at once.
    await Promise.all([failedSso(), expiredSso()]);
  });

  /** Started (the login cookie is set), then the provider answers with an error. */
  async function failedSso(): Promise<void> {
    const page = await chromium.page();
    await page.goto(`${url}/auth/login?return_url=${encodeURIComponent('/?after=failure')}&connector_id=corp`);
    await page.getByRole('heading', { name: 'Log in with Corp directory' }).waitFor();
    await page.goto(`${url}/auth/callback?error=access_denied&state=whatever`);
    await page.waitForURL(`${url}/login?error=sso_failed&return_url=%2F%3Fafter%3Dfailure`);
    await alert(page).filter({ hasText: 'Your identity provider did not complete the login.' }).waitFor();
    await chromium.screenshot(page, 'login-sso-failed');
    await localLogin(page, 'alice', PASSWORDS.alice);
    await page.waitForURL(`${url}/?after=failure`);
  }

  /**
   * Started from the login page, then the login cookie is gone (expired) when the browser comes
   * back: the page still knows where the login was going.
   */
  async function expiredSso(): Promise<void> {
    const expired = await chromium.page();
    await expired.goto(`${url}/login?return_url=${encodeURIComponent('/?after=expiry')}`);
    await expired.getByRole('link', { name: 'Log in via Corp directory' }).click();
    await expired.getByRole('heading', { name: 'Log in with Corp directory' }).waitFor();
    await expired.context().clearCookies();
    await expired.goto(`${url}/auth/callback?code=abc&state=def`);
    await expired.waitForURL(`${url}/login?error=sso_expired`);
    await alert(expired).filter({ hasText: 'That login took too long or was started in another browser.' }).waitFor();
    await localLogin(expired, 'alice', PASSWORDS.alice);
    await expired.waitForURL(`${url}/?after=expiry`);
  }

  it('refuses a state-changing call a page of another origin makes with the cookie', async function () {
    const page = await chromium.page();
    await page.goto(`${url}/login`);
    await localLogin(page, 'alice', PASSWORDS.alice);
    await page.waitForURL(`${url}/`);
    // Same site (127.0.0.1, another port), so the SameSite=Lax cookie does go along: the Origin
    // rule is what refuses it.
    const other = await pageServer('<!doctype html><title>other</title><p>another origin</p>');
    try {
      await page.goto(other.url);
      // The classic forgery: a form posted from the other page, the answer shown as the page.
      const target = `${url}/api/v1/account/alice/token`;
      const [answer] = await Promise.all([
        page.waitForNavigation(),
        page.evaluate(`(() => {
          const form = document.createElement('form');
          form.method = 'post';
          form.enctype = 'text/plain';
          form.action = ${JSON.stringify(target)};
          document.body.append(form);
          form.submit();
        })()`),
      ]);
      expect(answer?.status()).to.equal(401);
      // The cookie went along (same site), and the Origin rule is what refused it.
      expect(await page.locator('body').textContent()).to.contain(`the svc.token cookie does not sign in a POST from origin '${other.url}'`);
    } finally {
      other.server.close();
    }
    await page.goto(`${url}/`);
    await page.getByRole('heading', { name: 'API tokens' }).waitFor();
    expect(await page.getByRole('cell', { name: 'forged', exact: true }).count()).to.equal(0);
  });
});

/** A page on another origin of the same site: 127.0.0.1 on another port. */
async function pageServer(html: string): Promise<{ server: Server; url: string }> {
  const server = createServer((_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end(html));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

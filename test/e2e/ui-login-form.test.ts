/**
 * The login page's password form in Chromium when its script fails after showing the form (here:
 * the script is blocked and the form shown by hand, the state such a failure leaves): the browser
 * submits the form itself, which must send the password in a POST body to an action that logs
 * in (POST /login), never in a URL. And the page, with its script, says why a posted form was
 * refused.
 */
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { accountsConfigDir, PASSWORDS } from '../helpers/accounts-fixture.js';
import type { Chromium } from '../helpers/chromium.js';
import type { TestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';
import { startUiSvc, type UiSvc } from '../helpers/ui-svc.js';

describe('e2e: the login form posted by the browser itself, in Chromium', function () {
  cleanUpTempDirs();
  this.timeout(120_000);
  let ui: UiSvc | undefined;
  let server: TestServer;
  let chromium: Chromium;

  before(async function () {
    ui = await startUiSvc(accountsConfigDir());
    ({ server, chromium } = ui);
  });
  after(async function () {
    await ui?.close();
  });

  /** The login page without its script, the form shown as the script would have; every request's method and URL. */
  async function pageWithoutScript(path: string): Promise<{ page: Page; requests: string[] }> {
    const page = await chromium.page();
    const requests: string[] = [];
    page.on('request', (r) => requests.push(`${r.method()} ${r.url()}`));
    await page.route('**/web/login.js', (route) => route.abort());
    await page.goto(`${server.url}${path}`);
    await page.evaluate("document.getElementById('local-login').removeAttribute('hidden')");
    return { page, requests };
  }

  it('logs in with the password in a POST body, never in a URL, and lands at return_url', async function () {
    const { page, requests } = await pageWithoutScript('/login');
    await page.fill('#username', 'alice');
    await page.fill('#password', PASSWORDS.alice);
    await Promise.all([page.waitForURL((u) => u.href !== `${server.url}/login`), page.click('button[type=submit]')]);
    expect(requests.filter((r) => r.includes(PASSWORDS.alice)), 'no URL carries the password').to.deep.equal([]);
    expect(requests).to.include(`POST ${server.url}/login`);
    await page.waitForURL(`${server.url}/`);
    const cookies = await page.context().cookies();
    expect(cookies.map((c) => c.name)).to.include('svc.token');
  });

  it('sends a wrong password back to the page, which says so with its script', async function () {
    const { page, requests } = await pageWithoutScript('/login');
    await page.fill('#username', 'alice');
    await page.fill('#password', 'not-alices-password');
    await Promise.all([page.waitForURL((u) => u.href !== `${server.url}/login`), page.click('button[type=submit]')]);
    expect(requests.filter((r) => r.includes('not-alices-password')), 'no URL carries the password').to.deep.equal([]);
    expect(page.url()).to.equal(`${server.url}/login?error=invalid_credentials&return_url=%2F`);
    const withScript = await chromium.page();
    await withScript.goto(page.url());
    await withScript.locator('#message:not([hidden])').waitFor();
    expect(await withScript.textContent('#message')).to.equal('Wrong username or password.');
  });
});

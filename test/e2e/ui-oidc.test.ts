/**
 * svc's login page in Chromium when an external OIDC provider (oidc.config) is configured: one
 * "Log in via <name>" button beside the local form, and the button alone once no local login is
 * possible (the admin disabled, no other account with `login`). The provider itself is not
 * needed to draw the page: its name comes from /api/v1/settings.
 */
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { expect } from 'chai';
import { seriousViolations, type Chromium } from '../helpers/chromium.js';
import { configMap, secret, tempConfigDir } from '../helpers/manifests.js';
import type { TestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';
import { startUiSvc, type UiSvc } from '../helpers/ui-svc.js';

const OIDC = 'name: Corp SSO\nissuer: https://sso.example.org\nclientID: svc\nclientSecret: $oidc.secret\n';

describe('e2e: the login page with an external OIDC provider, in Chromium', function () {
  cleanUpTempDirs();
  this.timeout(120_000);
  let ui: UiSvc | undefined;
  let server: TestServer;
  let dir: string;
  let chromium: Chromium;

  before(async function () {
    dir = tempConfigDir({
      'cm.yaml': configMap('svc-cm', { url: 'http://127.0.0.1', 'oidc.config': OIDC }),
      'secret.yaml': secret('svc-secret', { 'server.secretkey': 'ui-oidc-e2e-secret-key-0123456789', 'oidc.secret': 's', 'admin.password': '$2a$04$abcdefghijklmnopqrstuv' }),
    });
    ui = await startUiSvc(dir);
    ({ server, chromium } = ui);
  });

  after(async function () {
    await ui?.close();
  });

  it('offers "Log in via Corp SSO" beside the local form, keeping return_url', async function () {
    const page = await chromium.page();
    await page.goto(`${server.url}/login?return_url=/apps`);
    const button = page.getByRole('link', { name: 'Log in via Corp SSO', exact: true });
    await button.waitFor();
    expect(await page.getByRole('link', { name: /^Log in via/ }).count()).to.equal(1);
    expect(await button.getAttribute('href')).to.equal('/auth/login?return_url=%2Fapps');
    expect(await page.getByLabel('Username').isVisible()).to.equal(true);
    expect(await seriousViolations(page)).to.deep.equal([]);
    await chromium.screenshot(page, 'login-oidc');
  });

  it('shows the button alone, without the local form, when no local login is possible', async function () {
    await writeFile(join(dir, 'cm.yaml'), configMap('svc-cm', { url: 'http://127.0.0.1', 'oidc.config': OIDC, 'admin.enabled': 'false' }));
    for (let i = 0; i < 100; i++) {
      const settings = (await (await fetch(`${server.url}/api/v1/settings`)).json()) as { userLoginsDisabled: boolean };
      if (settings.userLoginsDisabled) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const page = await chromium.page();
    await page.goto(`${server.url}/login`);
    await page.getByRole('link', { name: 'Log in via Corp SSO', exact: true }).waitFor();
    expect(await page.locator('#local-login').isHidden(), 'the local form is hidden').to.equal(true);
    expect(await page.getByLabel('Username').count() === 0 || await page.getByLabel('Username').isHidden()).to.equal(true);
    expect(await seriousViolations(page)).to.deep.equal([]);
    await chromium.screenshot(page, 'login-oidc-only');
  });
});

/**
 * The pages and a second factor, in Chromium: TOTP enrolled on the account page (the password
 * asked for first; the code computed from the secret the page shows), then a login with
 * password and code; a wrong code
 * (a message, and it counts toward the lockout); a recovery code that works once; the second
 * step by keyboard alone and axe-clean; a passkey registered with Chromium's virtual
 * authenticator (the DevTools protocol's WebAuthn domain), used to log in, and removed (each
 * change of factor with the password and a code).
 *
 * WebAuthn takes no IP address as relying party: svc's `url` is http://localhost:<port>, and the
 * pages are opened there.
 */
import { expect } from 'chai';
import type { Page } from 'playwright-core';
import { codeAt } from '../../src/second-factor/totp.js';
import { PASSWORDS } from '../helpers/accounts-fixture.js';
import type { CollectedAudit } from '../helpers/audit.js';
import { openChromium, seriousViolations, type Chromium } from '../helpers/chromium.js';
import { enrolTotp, startSecondFactorSvc, STEP_MS, type SecondFactorSvc } from '../helpers/second-factor.js';

describe('e2e: the second factor on the login and account pages, in Chromium', function () {
  this.timeout(120_000);
  let svc: SecondFactorSvc;
  let chromium: Chromium;
  let base: string;
  let audit: CollectedAudit;
  const now = (): number => svc.now();
  const nextSteps = (): void => svc.nextSteps();
  let aliceSecret = '';
  let aliceCodes: string[] = [];

  before(async function () {
    // Both at once (each takes seconds); the after hook closes whichever started.
    const [started, launched] = await Promise.allSettled([startSecondFactorSvc({ maxFailCount: 3, localhost: true }), openChromium()]);
    if (started.status === 'fulfilled') ({ base, audit } = svc = started.value);
    if (launched.status === 'fulfilled') chromium = launched.value;
    if (started.status === 'rejected') throw started.reason;
    if (launched.status === 'rejected') throw launched.reason;
  });
  after(async function () {
    await chromium?.close();
    await svc?.close();
  });

  /** The later tests log alice in with what the first one enrolled: say so, rather than time out on a second step that never comes. */
  function aliceEnrolled(): void {
    if (aliceSecret === '' || aliceCodes.length === 0) throw new Error('alice has no second factor: the first test, which enrols it, failed');
  }

  async function passwordStep(page: Page, username: string, password: string): Promise<void> {
    await page.goto(`${base}/login`);
    await page.fill('#username', username);
    await page.fill('#password', password);
    await page.click('#local-login button[type=submit]');
  }

  it('enrols TOTP on the account page, then logs out and in with the password and a code', async function () {
    const page = await chromium.page();
    await passwordStep(page, 'alice', PASSWORDS.alice);
    await page.waitForURL(`${base}/`);
    // Without the password the page asks for it, and nothing is started.
    await page.getByRole('button', { name: 'Set up an authenticator app' }).click();
    await pageSays(page, "document.getElementById('message').textContent.startsWith('Type your password first')");
    expect(await page.isHidden('#totp-setup')).to.equal(true);
    expect(await page.isHidden('#factor-code-field')).to.equal(true);
    await page.fill('#factor-password', PASSWORDS.alice);
    await page.getByRole('button', { name: 'Set up an authenticator app' }).click();
    // The click only starts the page's POST …/totp: the secret and its link are filled in when
    // that answers, and the setup shown after them. Read before then, the field is still empty.
    await page.waitForSelector('#totp-setup:not([hidden])');
    const secret = await page.inputValue('#totp-secret');
    expect(secret).to.match(/^[A-Z2-7]{32}$/);
    expect(await page.getAttribute('#totp-uri', 'href')).to.match(/^otpauth:\/\/totp\//);
    await page.fill('#totp-code', codeAt(secret, now()));
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.waitForSelector('#recovery:not([hidden])');
    aliceCodes = await page.locator('#recovery-codes li').allTextContents();
    expect(aliceCodes).to.have.length(10);
    // The status is asked again (GET …/second-factor) only after the codes are shown.
    await pageSays(page, "document.getElementById('second-factor-status').textContent.startsWith('On:')");
    expect(await page.textContent('#second-factor-status')).to.equal('On: an authenticator app; 10 recovery codes left.');
    await chromium.screenshot(page, 'account-second-factor', { fullPage: true });
    aliceSecret = secret;
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL(`${base}/login`);
    nextSteps();
    await passwordStep(page, 'alice', PASSWORDS.alice);
    await page.waitForSelector('#second-step:not([hidden])');
    await page.fill('#code', codeAt(secret, now()));
    await page.keyboard.press('Enter');
    await page.waitForURL(`${base}/`);
    expect(audit.of('second-factor-enrolled')).to.have.length(1);
  });

  it('says so when a code is wrong, back at the password, and counts it toward the lockout', async function () {
    const bob = await enrolTotp(base, 'bob', PASSWORDS.bob, now);
    const page = await chromium.page();
    const wrong = codeAt(bob.secret, now() - 20 * STEP_MS);
    for (let i = 0; i < 3; i++) {
      await passwordStep(page, 'bob', PASSWORDS.bob);
      await page.waitForSelector('#second-step:not([hidden])');
      await page.fill('#code', wrong);
      await page.keyboard.press('Enter');
      await page.waitForSelector('#local-login:not([hidden])');
      expect(await page.textContent('#message')).to.equal('Wrong or already used code. Enter your password and a new code.');
      expect(await page.evaluate('document.activeElement.id')).to.equal('password');
    }
    await passwordStep(page, 'bob', PASSWORDS.bob);
    await pageSays(page, "document.getElementById('message').textContent.startsWith('Too many failed logins')");
  });

  it('logs in with a recovery code once', async function () {
    aliceEnrolled();
    const code = aliceCodes[0] ?? '';
    const first = await chromium.page();
    await passwordStep(first, 'alice', PASSWORDS.alice);
    await first.waitForSelector('#second-step:not([hidden])');
    await first.fill('#code', code);
    await first.keyboard.press('Enter');
    await first.waitForURL(`${base}/`);
    const again = await chromium.page();
    await passwordStep(again, 'alice', PASSWORDS.alice);
    await again.waitForSelector('#second-step:not([hidden])');
    await again.fill('#code', code);
    await again.keyboard.press('Enter');
    await again.waitForSelector('#local-login:not([hidden])');
    expect(await again.textContent('#message')).to.equal('Wrong or already used code. Enter your password and a new code.');
    expect(audit.of('recovery-code-used')).to.have.length(1);
  });

  it('takes the second step by keyboard alone, and the step is axe-clean', async function () {
    aliceEnrolled();
    nextSteps();
    const page = await chromium.page();
    await page.goto(`${base}/login`);
    await pageSays(page, "document.activeElement?.id === 'username'");
    await page.keyboard.type('alice');
    await page.keyboard.press('Tab');
    await page.keyboard.type(PASSWORDS.alice);
    await page.keyboard.press('Enter');
    await page.waitForSelector('#second-step:not([hidden])');
    // The page moves the focus to the code field itself.
    await pageSays(page, "document.activeElement?.id === 'code'");
    expect(await seriousViolations(page)).to.deep.equal([]);
    await chromium.screenshot(page, 'login-second-step');
    await page.keyboard.type(codeAt(aliceSecret, now()));
    await page.keyboard.press('Enter');
    await page.waitForURL(`${base}/`);
    expect(await seriousViolations(page)).to.deep.equal([]);
  });

  it('registers a passkey with Chromium\'s virtual authenticator on the account page, logs in with it, and removes it with the password and a code', async function () {
    aliceEnrolled();
    const page = await chromium.page();
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('WebAuthn.enable');
    await cdp.send('WebAuthn.addVirtualAuthenticator', {
      options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
    });
    nextSteps();
    await passwordStep(page, 'alice', PASSWORDS.alice);
    await page.waitForSelector('#second-step:not([hidden])');
    await page.fill('#code', codeAt(aliceSecret, now()));
    await page.keyboard.press('Enter');
    await page.waitForURL(`${base}/`);
    // TOTP is on: adding a passkey takes the password and a code.
    await pageSays(page, "!document.getElementById('factor-code-field').hidden");
    await page.fill('#passkey-name', 'laptop');
    await page.fill('#factor-password', PASSWORDS.alice);
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await pageSays(page, "document.getElementById('message').textContent.startsWith('Type a code from your authenticator app')");
    await page.fill('#factor-code', codeAt(aliceSecret, now() + STEP_MS));
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await pageSays(page, "document.getElementById('message').textContent === 'Passkey laptop added.'");
    // The message comes before the list is asked again (GET …/second-factor).
    await pageSays(page, "document.querySelectorAll('#passkey-list li').length > 0");
    expect(await page.locator('#passkey-list li').allTextContents()).to.deep.equal(['laptop Remove']);
    await page.getByRole('button', { name: 'Log out' }).click();
    await page.waitForURL(`${base}/login`);
    await passwordStep(page, 'alice', PASSWORDS.alice);
    await page.waitForSelector('#use-passkey:not([hidden])');
    await page.getByRole('button', { name: 'Use a passkey' }).click();
    await page.waitForURL(`${base}/`);
    const logins = audit.of('login').filter((e) => e.svc?.['factor'] === 'webauthn');
    expect(logins.map((e) => e.outcome)).to.deep.equal(['success']);
    // Removing it takes the password and a code too: the button alone only asks for them.
    await pageSays(page, "document.querySelectorAll('#passkey-list li').length > 0");
    await page.getByRole('button', { name: 'Remove passkey laptop' }).click();
    await pageSays(page, "document.getElementById('message').textContent.startsWith('Type your password first')");
    expect(await page.locator('#passkey-list li').allTextContents()).to.deep.equal(['laptop Remove']);
    expect(await seriousViolations(page)).to.deep.equal([]);
    nextSteps();
    await page.fill('#factor-password', PASSWORDS.alice);
    await page.fill('#factor-code', codeAt(aliceSecret, now()));
    await page.getByRole('button', { name: 'Remove passkey laptop' }).click();
    await page.waitForURL(`${base}/login`);
    expect(audit.of('second-factor-removed').map((e) => e.svc?.['factor'])).to.deep.equal(['webauthn']);
  });
});

/**
 * Waits until `expression` is true in the page, asked with page.evaluate: waitForFunction turns a
 * string into a function with eval, which the pages' Content-Security-Policy (script-src 'self') refuses.
 */
async function pageSays(page: Page, expression: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await page.evaluate(expression).catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`the page never said: ${expression}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

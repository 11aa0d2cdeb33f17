/**
 * The person's side of the device flow at the bundled provider, in a form-posting browser: the
 * verification page, the user code typed, the device confirmed, up to the connector's password
 * form (what happens there is the test's).
 */
import { expect } from 'chai';
import { FormBrowser, type Page } from './form-browser.js';

export async function devicePasswordForm(verificationUri: string, userCode: string): Promise<{ browser: FormBrowser; form: Page }> {
  const browser = new FormBrowser();
  const input = (await browser.go(verificationUri, 'about:')) as Page;
  const confirm = (await browser.submit(input, { user_code: userCode }, 'about:')) as Page;
  expect(confirm.html).to.include('Confirm the device');
  const form = (await browser.submit(confirm, {}, 'about:')) as Page;
  return { browser, form };
}

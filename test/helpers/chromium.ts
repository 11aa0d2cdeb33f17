/**
 * One headless Debian Chromium per test file for the page tests (playwright-core downloads no
 * browser; helpers/browser.ts finds the binary), with what every page test needs: a fresh
 * context per test (its own cookies), a screenshot under test-output/ui/, and the axe-core
 * accessibility check run inside the page.
 *
 *   const chromium = await openChromium();            // in before()
 *   const page = await chromium.page();               // in a test: new context, new page
 *   await chromium.screenshot(page, 'login');         // test-output/ui/login.png
 *   expect(await seriousViolations(page)).to.deep.equal([]);
 *   await chromium.close();                           // in after()
 *
 * ssoLoginFromLoginPage() is a whole single sign-on from svc's login page: the button, whatever
 * login form the provider shows (the caller fills it), and back at return_url.
 *
 * The pages' scripts are compiled from web/src into dist/web by the suite's global setup
 * (test/build.ts), before any server starts (it reads them at start), as `npm run build` does
 * for a real deployment.
 */
import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { chromiumPath, CHROMIUM_ARGS } from './browser.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
export const SCREENSHOT_DIR = join(ROOT, 'test-output', 'ui');

/** Generous: two busy cores, and a cold Chromium. Waits, never assertions on time. */
const ACTION_TIMEOUT_MS = 30_000;
const LAUNCH_TIMEOUT_MS = 60_000;

export interface ContextOptions {
  /** Viewport; default a laptop, { width: 375, height: 740 } for a phone. */
  readonly viewport?: { readonly width: number; readonly height: number };
  /** Origins whose pages may use the clipboard (the account page's copy button). */
  readonly clipboardFor?: string;
}

export interface Chromium {
  readonly browser: Browser;
  /** A page in a fresh context: no cookies, no storage. */
  page(options?: ContextOptions): Promise<Page>;
  /** Saves a PNG of the viewport (or the whole page) as test-output/ui/<name>.png and returns its path. */
  screenshot(page: Page, name: string, options?: { readonly fullPage?: boolean }): Promise<string>;
  close(): Promise<void>;
}

export async function openChromium(): Promise<Chromium> {
  mkdirSync(SCREENSHOT_DIR, { recursive: true });
  const browser = await chromium.launch({ executablePath: chromiumPath(), args: CHROMIUM_ARGS, headless: true, timeout: LAUNCH_TIMEOUT_MS });
  const contexts: BrowserContext[] = [];
  return {
    browser,
    async page(options = {}) {
      const context = await browser.newContext({ viewport: options.viewport ?? { width: 1024, height: 720 }, locale: 'en-GB', timezoneId: 'UTC' });
      context.setDefaultTimeout(ACTION_TIMEOUT_MS);
      context.setDefaultNavigationTimeout(ACTION_TIMEOUT_MS);
      if (options.clipboardFor !== undefined) await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: options.clipboardFor });
      contexts.push(context);
      return context.newPage();
    },
    async screenshot(page, name, options = {}) {
      const path = join(SCREENSHOT_DIR, `${name}.png`);
      await page.screenshot({ path, fullPage: options.fullPage === true });
      return path;
    },
    async close() {
      for (const context of contexts) await context.close().catch(() => undefined);
      await browser.close();
    },
  };
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

export interface Violation {
  readonly id: string;
  readonly impact: string;
  readonly help: string;
  readonly targets: readonly string[];
}

/**
 * axe-core's serious and critical findings on the page as it is now (WCAG 2.x A and AA rules
 * and best practices). Injected through the DevTools protocol, which the pages' CSP (no inline
 * script, scripts from svc only) does not govern, so the pages are checked with their real policy.
 */
export async function seriousViolations(page: Page): Promise<Violation[]> {
  await page.evaluate(AXE_SOURCE);
  // A string, as the test project has no DOM types; it runs in the page.
  return page.evaluate(`axe.run(document, { resultTypes: ['violations'] }).then((result) => result.violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => ({ id: v.id, impact: v.impact, help: v.help, targets: v.nodes.map((n) => n.target.map(String).join(' ')) })))`);
}

export interface SsoLogin {
  /** svc's base URL. */
  readonly svcUrl: string;
  /** The login page's link, as it reads: `Log in via <connector name>`. */
  readonly button: string;
  /** A path on svc; the login must end there. */
  readonly returnUrl: string;
  /** Fills and submits the login form the link led to (the provider's own, or an upstream's). */
  logIn(page: Page): Promise<void>;
}

/** From /login?return_url=… through the chosen provider back to return_url, with the svc.token cookie set. */
export async function ssoLoginFromLoginPage(page: Page, sso: SsoLogin): Promise<void> {
  await page.goto(`${sso.svcUrl}/login?return_url=${encodeURIComponent(sso.returnUrl)}`);
  await page.getByRole('link', { name: sso.button, exact: true }).click();
  await sso.logIn(page);
  await page.waitForURL(`${sso.svcUrl}${sso.returnUrl}`);
  const cookie = (await page.context().cookies(sso.svcUrl)).find((c) => c.name === 'svc.token');
  if (cookie === undefined) throw new Error(`back at ${sso.returnUrl} without the svc.token cookie`);
}

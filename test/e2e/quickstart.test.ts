/**
 * docs/quickstart.md followed step by step: its `bash` blocks, in order, run as one bash script
 * from the repository's checkout (as the page says), each command as written, and its numbered
 * browser steps done in Chromium while the script runs (the browser login on svc's login page,
 * the browser that `svc login --sso` sends to the provider, and the device-code page), with the
 * repository's directory fixtures in slapd as the page starts them. What the test substitutes,
 * and nothing else:
 * - the values of the port variables of its first block (PORT, HELLO_PORT, IN_CLUSTER_PORT,
 *   PROD_PORT, LDAP_PORT): free ports, as this machine runs other servers;
 * - HOME: a temporary directory, so the CLI's config file is the test's own, and TMPDIR a dir in
 *   it, so the page's `mktemp -d` (its config with the admin password and keys) goes when HOME
 *   goes, also when a step fails;
 * - SVC_NO_BROWSER_OPEN=1: the CLI prints the login URL (as it does when no browser opens) and
 *   the test's Chromium opens it.
 * The whole process group is stopped at the end, whatever happened.
 */
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { EventEmitter, once } from 'node:events';
import { mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { openChromium, ssoLoginFromLoginPage, type Chromium } from '../helpers/chromium.js';
import { freePort } from '../helpers/peers.js';
import { ROOT } from '../helpers/run.js';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';

const PORT_VARIABLES = ['PORT', 'HELLO_PORT', 'IN_CLUSTER_PORT', 'PROD_PORT', 'LDAP_PORT'];
/** The page's directory user (fixtures/ldap/ldap-connector.ldif). */
const ALICE = { username: 'alice', password: 'alice123' };
/** Waits for a step of the script: the build, the first start and slapd take their time on two busy cores. */
const STEP_TIMEOUT_MS = 180_000;

/** The fenced `bash` blocks of a Markdown text, in order. */
export function bashBlocks(markdown: string): string[] {
  return [...markdown.matchAll(/^```bash\n([\s\S]*?)^```$/gm)].map((m) => m[1] as string);
}

/** The script's output so far, and a wait for a line of it that fails when the script ends first. */
class Output {
  text = '';
  exited: number | null | undefined;
  /** 'change' on each chunk and on the exit: a wait looks again then, not on a timer. */
  readonly #changes = new EventEmitter();

  add(chunk: Buffer): void {
    this.text += chunk.toString();
    this.#changes.emit('change');
  }

  exit(code: number | null): number | null {
    this.exited = code;
    this.#changes.emit('change');
    return code;
  }

  async waitFor(pattern: RegExp, what: string): Promise<RegExpExecArray> {
    const deadline = AbortSignal.timeout(STEP_TIMEOUT_MS);
    for (;;) {
      const found = pattern.exec(this.text);
      if (found !== null) return found;
      if (this.exited !== undefined) throw new Error(`the script ended (${String(this.exited)}) before ${what}:\n${this.text}`);
      if (deadline.aborted) throw new Error(`no ${what} within ${STEP_TIMEOUT_MS} ms:\n${this.text}`);
      await once(this.#changes, 'change', { signal: deadline }).catch(() => undefined);
    }
  }
}

/** The provider's password form, as the page's step 3 says. */
async function logInAsAlice(page: Page): Promise<void> {
  await page.getByRole('heading', { name: 'Log in with Directory' }).waitFor();
  await page.getByLabel('Username').fill(ALICE.username);
  await page.getByLabel('Password').fill(ALICE.password);
  await page.getByRole('button', { name: 'Log in', exact: true }).click();
}

describe('e2e: docs/quickstart.md, step by step', function () {
  this.timeout(600_000);
  let home: string;
  let chromium: Chromium | undefined;

  before(() => {
    home = makeTempDir('svc-quickstart-home-');
  });
  after(async () => {
    await chromium?.close();
    removeTempDir(home);
  });

  it('runs every bash block in order and every browser step, and each step shows what the page says', async function () {
    const blocks = bashBlocks(readFileSync(join(ROOT, 'docs', 'quickstart.md'), 'utf8'));
    expect(blocks.length).to.be.greaterThanOrEqual(9);
    let script = blocks.join('\n');
    for (const name of PORT_VARIABLES) {
      const line = new RegExp(`^${name}=\\d+`, 'm');
      expect(script, `the quick start sets ${name}`).to.match(line);
      script = script.replace(line, `${name}=${await freePort()}`);
    }
    const port = /^PORT=(\d+)/m.exec(script)?.[1];
    const svcUrl = `http://127.0.0.1:${String(port)}`;
    const tmp = join(home, 'tmp');
    mkdirSync(tmp);
    const child = spawn('bash', ['-euo', 'pipefail', '-c', script], {
      cwd: ROOT, env: { ...process.env, HOME: home, TMPDIR: tmp, SVC_REDIS_URL: '', SVC_NO_BROWSER_OPEN: '1' }, detached: true, stdio: ['ignore', 'pipe', 'pipe'],
    });
    // One text for both streams, in the order written: the CLI prints its URLs on stderr.
    const output = new Output();
    child.stdout.on('data', (d: Buffer) => output.add(d));
    child.stderr.on('data', (d: Buffer) => output.add(d));
    // 'exit', not 'close': the servers the page starts in the background hold the pipes open.
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(output.exit(code))));
    let code: number | null;
    try {
      // Launched while the script builds and starts: the page needs it only once the provider answers.
      const browser = await openChromium();
      chromium = browser;
      // "In a browser": once the provider answers (the last line of the block that turns it on).
      await output.waitFor(/"issuer":"http:\/\/127\.0\.0\.1:\d+\/api\/idp"/, 'the provider');
      // The script goes on to the command line's login meanwhile: its browser steps are done
      // beside these, in a context of their own (the two logins share nothing).
      const inABrowser = async (): Promise<void> => {
        const page = await browser.page();
        await ssoLoginFromLoginPage(page, { svcUrl, button: 'Log in via Directory', returnUrl: '/', logIn: logInAsAlice });
        await page.locator('#me-username', { hasText: /^alice$/ }).waitFor();
        await page.locator('#me-groups', { hasText: 'admins, devs' }).waitFor();
      };
      // "From the command line, with a browser on this machine": the URL the CLI prints.
      const fromTheCommandLine = async (): Promise<void> => {
        const [, loginUrl] = await output.waitFor(/visit:\n(http:\/\/127\.0\.0\.1:\d+\/api\/idp\/\S+)\n/, 'the login URL of svc login --sso');
        const cliBrowser = await browser.page();
        await cliBrowser.goto(loginUrl as string);
        await logInAsAlice(cliBrowser);
        await cliBrowser.getByRole('heading', { name: 'Allow the svc command line?' }).waitFor();
        await cliBrowser.getByRole('button', { name: 'Allow', exact: true }).click();
        await cliBrowser.getByText(/login is complete/i).waitFor();
        await output.waitFor(/'alice' logged in successfully\n/, 'the browser login of the CLI');
      };
      await Promise.all([inABrowser(), fromTheCommandLine()]);

      // "From a machine without a browser": the address and the code the CLI prints.
      const [, deviceUrl, userCode] = await output.waitFor(/visit (\S+) and enter the code (\S+)/, 'the device code');
      expect(deviceUrl).to.equal(`${svcUrl}/api/idp/device`);
      const device = await browser.page();
      await device.goto(deviceUrl as string);
      await device.getByLabel('Code').fill(userCode as string);
      await device.getByRole('button', { name: 'Continue', exact: true }).click();
      await device.getByRole('heading', { name: 'Confirm the device' }).waitFor();
      await device.locator('code', { hasText: userCode as string }).waitFor();
      await device.getByRole('button', { name: 'Continue', exact: true }).click();
      await logInAsAlice(device);
      await device.getByText('You are logged in on your device.').waitFor();
      code = await exited;
    } finally {
      try {
        process.kill(-(child.pid as number), 'SIGTERM');
      } catch {
        // the group has ended
      }
    }
    const text = output.text;
    expect(code, text).to.equal(0);
    expect(text).to.include('"msg":"svc listening"');
    expect(text).to.match(/Username: admin\n/);
    expect(text).to.include('hello from the backend: /greeting as alice');
    expect(text).to.match(/^prod$/m);
    expect(text).to.match(/"issuer":"http:\/\/127\.0\.0\.1:\d+\/api\/idp"/);
    // Both CLI logins, each followed by get-user-info as the page says it reads.
    expect(text.match(/^'alice' logged in successfully$/gm)).to.have.length(2);
    const userInfo = [...text.matchAll(/^Logged In: true\nUsername: (.*)\n(?:Name: (.*)\n)?Issuer: (.*)\nGroups: (.*)$/gm)].map((m) => m.slice(1));
    // An SSO user's Username is the subject, an opaque id (as Argo CD shows it), and Name the readable one.
    const shown = userInfo.map(([username, ...rest]) => [/^[A-Za-z0-9_-]{16,}$/.test(username ?? '') ? '<subject>' : username, ...rest]);
    expect(shown).to.deep.equal([
      ['admin', undefined, 'svc', ''],
      ['<subject>', 'alice', `${svcUrl}/api/idp`, 'admins,devs'],
      ['<subject>', 'alice', `${svcUrl}/api/idp`, 'admins,devs'],
    ]);
  });
});

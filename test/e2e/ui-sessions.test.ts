/**
 * The sessions list end to end: two replicas (their own processes) sharing a real Redis, two
 * Chromium browsers and the CLI logged in as one user. The account page lists three sessions
 * with the right kinds and clients; ending one there makes its token fail at once on both
 * replicas; "Sign out everywhere else" leaves only the page's own session.
 */
import { expect } from 'chai';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { accountsConfigDir, PASSWORDS } from '../helpers/accounts-fixture.js';
import { openChromium, seriousViolations, type Chromium } from '../helpers/chromium.js';
import { startRedis, type RedisPeer } from '../helpers/peers.js';
import { startReplica, stopReplica, type Replica } from '../helpers/replica-process.js';
import { runCli } from '../cli/run-cli.js';

describe('e2e: the sessions list with two browsers, the CLI and two replicas', function () {
  this.timeout(120_000);
  let redis: RedisPeer;
  let dir: string;
  let home: string;
  let a: Replica;
  let b: Replica;
  let chromium: Chromium;

  before(async function () {
    dir = accountsConfigDir();
    home = mkdtempSync(join(tmpdir(), 'svc-home-ui-sessions-'));
    // The browser is launched while Redis and the replicas start: none of them needs it.
    const launched = openChromium();
    try {
      redis = await startRedis();
      [a, b] = await Promise.all([startReplica(dir, redis.url), startReplica(dir, redis.url)]);
    } finally {
      chromium = await launched;
    }
  });
  after(async function () {
    await chromium?.close();
    await Promise.all([stopReplica(a), stopReplica(b)]);
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
    rmSync(home, { recursive: true, force: true });
  });

  const svc = (...args: string[]) => runCli(home, args);

  /** A fresh browser on the login page, its form filled in. */
  async function loginForm(): Promise<Page> {
    const page = await chromium.page();
    await page.goto(`${a.url}/login?return_url=/`);
    await page.getByLabel('Username').fill('bob');
    await page.getByLabel('Password').fill(PASSWORDS.bob);
    return page;
  }

  async function browserLogin(page: Page): Promise<{ page: Page; token: string }> {
    await page.getByRole('button', { name: 'Log in', exact: true }).click();
    await page.getByRole('heading', { name: 'Sessions' }).waitFor();
    const cookie = (await page.context().cookies()).find((c) => c.name === 'svc.token');
    if (cookie === undefined) throw new Error('no svc.token cookie after the login');
    return { page, token: cookie.value };
  }

  /** Whether the token is accepted by the replica, asked with a bearer header (no cookie, no origin). */
  async function loggedIn(replica: Replica, token: string): Promise<boolean> {
    const res = await fetch(`${replica.url}/api/v1/session/userinfo`, { headers: { authorization: `Bearer ${token}` } });
    return ((await res.json()) as { loggedIn: boolean }).loggedIn;
  }

  const clientCells = (page: Page) => page.locator('#session-rows tr td:first-child').allTextContents();

  it('lists three sessions, ends one from the page (refused at once on both replicas), then signs out everywhere else', async function () {
    // The two pages load at once; the logins are sent one after the other, as the list is newest first.
    const [firstForm, secondForm] = await Promise.all([loginForm(), loginForm()]);
    const first = await browserLogin(firstForm);
    const second = await browserLogin(secondForm);
    const cliLogin = await svc('login', a.url, '--plaintext', '--username', 'bob', '--password', PASSWORDS.bob);
    expect(cliLogin.code, cliLogin.err).to.equal(0);

    await first.page.reload();
    await first.page.locator('#session-rows tr').nth(2).waitFor();
    expect(await clientCells(first.page)).to.deep.equal(['Command line', 'Browser', 'Browser (this one)']);
    expect(await first.page.locator('#session-rows tr td:nth-child(2)').allTextContents()).to.deep.equal(['password', 'password', 'password']);
    expect(await seriousViolations(first.page), 'account page with sessions').to.deep.equal([]);
    await chromium.screenshot(first.page, 'account-sessions', { fullPage: true });

    for (const replica of [a, b]) expect(await loggedIn(replica, second.token)).to.equal(true);
    await first.page.getByRole('button', { name: /^End the Browser session/ }).click();
    await first.page.getByRole('status').filter({ hasText: 'Session ended.' }).waitFor();
    for (const replica of [a, b]) expect(await loggedIn(replica, second.token), replica.url).to.equal(false);
    expect(await clientCells(first.page)).to.deep.equal(['Command line', 'Browser (this one)']);
    expect((await svc('session', 'list', '-o', 'json')).code).to.equal(0);

    await first.page.getByRole('button', { name: 'Sign out everywhere else' }).click();
    await first.page.getByRole('status').filter({ hasText: '1 other session ended.' }).waitFor();
    expect(await clientCells(first.page)).to.deep.equal(['Browser (this one)']);
    expect(await first.page.getByRole('button', { name: 'Sign out everywhere else' }).isHidden()).to.equal(true);
    const cli = await svc('session', 'list');
    expect(cli.code).to.equal(1);
    expect(cli.err).to.match(/revoked/);
    for (const replica of [a, b]) expect(await loggedIn(replica, first.token)).to.equal(true);
  });
});

/**
 * The account page behind two replicas (issue 52, finding 9): TOTP turned on through one replica
 * while the page's next GET reaches the other, which has not read the write yet. The page shows
 * what was just enrolled, from the confirmation's own answer.
 *
 * The lagging replica reads a copy of the config dir taken before the enrolment (same accounts
 * and password hashes, same server.secretkey, same Redis), so it never sees the write: the lag made permanent, not
 * raced against a file watch.
 */
import { expect } from 'chai';
import { cpSync } from 'node:fs';
import type { Page } from 'playwright-core';
import { codeAt } from '../../src/second-factor/totp.js';
import { accountsConfigDir, PASSWORDS } from '../helpers/accounts-fixture.js';
import { openChromium, type Chromium } from '../helpers/chromium.js';
import { startForwarder, type Forwarder } from '../helpers/forwarder.js';
import { freePort, startRedis, type RedisPeer } from '../helpers/peers.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { makeTempDir, removeTempDir } from '../helpers/temp-dir.js';

const STATUS_PATH = '/api/v1/account/second-factor';

describe('e2e: the account page\'s second factor behind two replicas, in Chromium', function () {
  this.timeout(120_000);
  let redis: RedisPeer;
  let dirs: string[] = [];
  let writer: TestServer;
  let lagging: TestServer;
  let balancer: Forwarder;
  let chromium: Chromium;

  before(async function () {
    redis = await startRedis();
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    const first = accountsConfigDir({ cm: { url } });
    const copy = makeTempDir('svc-config-');
    cpSync(first, copy, { recursive: true });
    dirs = [first, copy];
    writer = await startTestServer(dirs[0] as string, { redisUrl: redis.url });
    lagging = await startTestServer(dirs[1] as string, { redisUrl: redis.url });
    // The status GET goes to the replica that has not read the enrolment; everything else to the one that writes it.
    balancer = await startForwarder(port, (req) => (req.method === 'GET' && req.url === STATUS_PATH ? lagging.url : writer.url));
    chromium = await openChromium();
  });
  after(async function () {
    await chromium?.close();
    await balancer?.close();
    await writer?.close();
    await lagging?.close();
    await redis?.stop();
    for (const dir of dirs) removeTempDir(dir);
  });

  it('says the authenticator app is on right after it was turned on, whichever replica answers next', async function () {
    const page = await chromium.page();
    await page.goto(`${balancer.url}/login`);
    await page.fill('#username', 'alice');
    await page.fill('#password', PASSWORDS.alice);
    await page.click('#local-login button[type=submit]');
    await page.waitForURL(`${balancer.url}/`);
    await pageSays(page, "document.getElementById('second-factor-status').textContent.startsWith('No second factor')");
    await page.fill('#factor-password', PASSWORDS.alice);
    await page.getByRole('button', { name: 'Set up an authenticator app' }).click();
    await page.waitForSelector('#totp-setup:not([hidden])');
    const secret = await page.inputValue('#totp-secret');
    await page.fill('#totp-code', codeAt(secret, Date.now()));
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.waitForSelector('#recovery:not([hidden])');
    await pageSays(page, "document.getElementById('second-factor-status').textContent.startsWith('On:')", 5_000);
    expect(await page.textContent('#second-factor-status')).to.equal('On: an authenticator app; 10 recovery codes left.');
    // The code field is asked for from now on, and the set-up button is gone.
    expect(await page.isHidden('#factor-code-field')).to.equal(false);
    expect(await page.isHidden('#totp-start')).to.equal(true);
    // The other replica has indeed not read the write: what the page showed did not come from it.
    expect(await page.evaluate(`fetch('${STATUS_PATH}').then((r) => r.json()).then((s) => s.totp)`)).to.equal(false);
  });
});

/** As ui-second-factor.test.ts: page.evaluate, since the pages' Content-Security-Policy refuses eval. */
async function pageSays(page: Page, expression: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await page.evaluate(expression).catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`the page never said: ${expression}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

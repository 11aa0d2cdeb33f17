/**
 * The second factor on two servers sharing one Redis and one config dir: a challenge made on
 * one is completed on the other, a code accepted on one is refused on the other, and wrong
 * codes sent to both add up to one lockout that both enforce.
 */
import { expect } from 'chai';
import { rm } from 'node:fs/promises';
import { accountsConfigDir, PASSWORDS } from '../helpers/accounts-fixture.js';
import { startRedis, type RedisPeer } from '../helpers/peers.js';
import { challengeOf, enrolTotp, loginWithCode, passwordStep, secondStep } from '../helpers/second-factor.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { codeAt } from '../../src/second-factor/totp.js';

describe('second factor on two replicas sharing Redis', function () {
  this.timeout(60_000);
  let redis: RedisPeer;
  let dir: string;
  let a: TestServer;
  let b: TestServer;

  before(async function () {
    redis = await startRedis();
    dir = accountsConfigDir();
    const env = { SVC_SESSION_FAILURE_MAX_FAIL_COUNT: '4' };
    a = await startTestServer(dir, { redisUrl: redis.url, env });
    b = await startTestServer(dir, { redisUrl: redis.url, env });
  });
  after(async function () {
    await a?.close();
    await b?.close();
    await redis?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('completes on one replica a challenge made on the other, and refuses the code there after', async function () {
    const alice = await enrolTotp(a.url, 'alice', PASSWORDS.alice, Date.now);
    // Both replicas read the factor from the shared config dir.
    await waitUntil(async () => (await passwordStep(b.url, 'alice', PASSWORDS.alice)).status === 401);
    // The enrolment used this step's code: wait for the next step, so the code is new.
    const step = Math.floor(Date.now() / 30_000);
    await waitUntil(async () => Math.floor(Date.now() / 30_000) > step, 31_000);
    const code = codeAt(alice.secret, Date.now());
    const challenge = await challengeOf(a.url, 'alice', PASSWORDS.alice);
    expect((await secondStep(b.url, challenge, code)).status).to.equal(200);
    expect((await secondStep(a.url, challenge, code)).status).to.equal(401);
    expect((await loginWithCode(a.url, 'alice', PASSWORDS.alice, code)).status).to.equal(401);
  });

  it('adds up wrong codes sent to both replicas into one lockout that both enforce', async function () {
    const bob = await enrolTotp(a.url, 'bob', PASSWORDS.bob, Date.now);
    await waitUntil(async () => (await passwordStep(b.url, 'bob', PASSWORDS.bob)).status === 401);
    const wrong = codeAt(bob.secret, Date.now() - 600_000);
    const replies = [];
    for (const server of [a, b, a, b]) replies.push((await loginWithCode(server.url, 'bob', PASSWORDS.bob, wrong)).status);
    expect(replies).to.deep.equal([401, 401, 401, 401]);
    for (const server of [a, b]) {
      const locked = await passwordStep(server.url, 'bob', PASSWORDS.bob);
      expect(locked.status).to.equal(429);
      expect(locked.body['error']).to.equal('too_many_attempts');
    }
  });
});

async function waitUntil(condition: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 100));
  }
}

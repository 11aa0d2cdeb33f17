/**
 * The second factor on two servers sharing one Redis and one config dir: a challenge made on
 * one is completed on the other, a code accepted on one is refused on the other, and wrong
 * codes sent to both add up to one lockout that both enforce. Raced: one challenge, one TOTP
 * code or one recovery code sent many times at once to both succeeds once.
 */
import bcrypt from 'bcryptjs';
import { expect } from 'chai';
import { rm } from 'node:fs/promises';
import { accountsConfigDir, PASSWORDS, type Reply } from '../helpers/accounts-fixture.js';
import { startRedis, type RedisPeer } from '../helpers/peers.js';
import { challengeOf, enrolTotp, loginWithCode, passwordStep, secondStep, stepClock, type StepClock } from '../helpers/second-factor.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { codeAt } from '../../src/second-factor/totp.js';

describe('second factor on two replicas sharing Redis', function () {
  this.timeout(60_000);
  let redis: RedisPeer;
  let dir: string;
  let a: TestServer;
  let b: TestServer;
  /** Both replicas' clock, moved on in whole TOTP steps when a test needs a step no code was used in. */
  let clock: StepClock;

  before(async function () {
    redis = await startRedis();
    // One account per race: the losers of a race count as failures and lock the name out.
    const racers = Object.fromEntries(RACERS.map((name) => [`accounts.${name}`, 'login']));
    const racerPasswords = Object.fromEntries(RACERS.map((name) => [`accounts.${name}.password`, bcrypt.hashSync(RACER_PASSWORD, 4)]));
    dir = accountsConfigDir({ cm: racers, secret: racerPasswords });
    clock = stepClock();
    const env = { SVC_SESSION_FAILURE_MAX_FAIL_COUNT: '4' };
    // Both at once: replicas started together agree on one marker of the record of used steps (HSETNX).
    [a, b] = await Promise.all([startTestServer(dir, { redisUrl: redis.url, env, now: clock.now }), startTestServer(dir, { redisUrl: redis.url, env, now: clock.now })]);
  });
  after(async function () {
    await a?.close();
    await b?.close();
    await redis?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('completes on one replica a challenge made on the other, and refuses the code there after', async function () {
    const alice = await enrolTotp(a.url, 'alice', PASSWORDS.alice, clock.now);
    // Both replicas read the factor from the shared config dir.
    await waitUntil(async () => (await passwordStep(b.url, 'alice', PASSWORDS.alice)).status === 401);
    // The enrolment used this step's code, and a code first accepted (a step early, the skew) by
    // the time the record of used steps began counts as used: move both replicas' clock on, past
    // both, so this code is new (rather than wait up to a minute of real time for such a step).
    clock.nextSteps();
    const code = codeAt(alice.secret, clock.now());
    const challenge = await challengeOf(a.url, 'alice', PASSWORDS.alice);
    expect((await secondStep(b.url, challenge, code)).status).to.equal(200);
    expect((await secondStep(a.url, challenge, code)).status).to.equal(401);
    expect((await loginWithCode(a.url, 'alice', PASSWORDS.alice, code)).status).to.equal(401);
  });

  it('adds up wrong codes sent to both replicas into one lockout that both enforce', async function () {
    const bob = await enrolTotp(a.url, 'bob', PASSWORDS.bob, clock.now);
    await waitUntil(async () => (await passwordStep(b.url, 'bob', PASSWORDS.bob)).status === 401);
    const wrong = codeAt(bob.secret, clock.now() - 600_000);
    // The password steps one by one, then the wrong codes at once, each to the replica that made
    // its challenge: each failure's random delay (0.5-1 s) runs beside the others, and every
    // attempt is counted (one INCR in the shared Redis) before its code is checked, so the four
    // add up as sent one by one.
    const sent: { server: TestServer; challenge: string }[] = [];
    for (const server of [a, b, a, b]) sent.push({ server, challenge: await challengeOf(server.url, 'bob', PASSWORDS.bob) });
    const replies = (await Promise.all(sent.map(({ server, challenge }) => secondStep(server.url, challenge, wrong)))).map((r) => r.status);
    expect(replies).to.deep.equal([401, 401, 401, 401]);
    for (const server of [a, b]) {
      const locked = await passwordStep(server.url, 'bob', PASSWORDS.bob);
      expect(locked.status).to.equal(429);
      expect(locked.body['error']).to.equal('too_many_attempts');
    }
  });

  /** Enrols TOTP for `name` on one replica and waits until the other asks it for a second step. */
  async function enrolOnBoth(name: string) {
    const enrolled = await enrolTotp(a.url, name, RACER_PASSWORD, clock.now);
    await waitUntil(async () => (await passwordStep(b.url, name, RACER_PASSWORD)).status === 401);
    return enrolled;
  }

  /** `count` challenges for `name`, half from each replica. */
  async function challenges(name: string, count: number): Promise<string[]> {
    const made: string[] = [];
    for (let i = 0; i < count; i++) made.push(await challengeOf(i % 2 === 0 ? a.url : b.url, name, RACER_PASSWORD));
    return made;
  }

  /** The replies of second steps sent all at once, alternately to each replica; exactly one must be 200. */
  function expectOneSuccess(replies: readonly Reply[]): void {
    const statuses = replies.map((r) => r.status);
    expect(statuses.filter((s) => s === 200), `statuses: ${statuses.join(',')}`).to.have.length(1);
    for (const reply of replies.filter((r) => r.status !== 200)) {
      expect(reply.status, JSON.stringify(reply.body)).to.be.oneOf([401, 429]);
      expect(reply.body['error']).to.be.oneOf(['invalid_credentials', 'too_many_attempts']);
      expect(reply.body).not.to.have.property('token');
    }
  }

  it('of one challenge sent many times at once to both replicas, each with a valid answer of its own, one succeeds', async function () {
    const enrolled = await enrolOnBoth('racer1');
    const [challenge] = await challenges('racer1', 1);
    // Ten different recovery codes, each good once: only the challenge can keep all but one out.
    const replies = await Promise.all(enrolled.recoveryCodes.map((code, i) => secondStep(i % 2 === 0 ? a.url : b.url, challenge as string, code)));
    expectOneSuccess(replies);
    for (const reply of replies.filter((r) => r.status !== 200)) expect(reply.body['message']).to.equal('the second-factor challenge is unknown, used or expired; log in again');
  });

  it('of one TOTP code sent at once with many challenges to both replicas, one succeeds', async function () {
    const enrolled = await enrolOnBoth('racer2');
    // The enrolment used its step's code: move both replicas' clock on, so this code is new.
    clock.nextSteps();
    const code = codeAt(enrolled.secret, clock.now());
    const replies = await Promise.all((await challenges('racer2', 8)).map((challenge, i) => secondStep(i % 2 === 0 ? a.url : b.url, challenge, code)));
    expectOneSuccess(replies);
  });

  it('of one recovery code sent at once with many challenges to both replicas, one succeeds', async function () {
    const enrolled = await enrolOnBoth('racer3');
    const code = enrolled.recoveryCodes[0] as string;
    const replies = await Promise.all((await challenges('racer3', 8)).map((challenge, i) => secondStep(i % 2 === 0 ? a.url : b.url, challenge, code)));
    expectOneSuccess(replies);
  });
});

const RACERS = ['racer1', 'racer2', 'racer3'] as const;
const RACER_PASSWORD = 'racer-pass-1';

async function waitUntil(condition: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 100));
  }
}

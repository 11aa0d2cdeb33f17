/**
 * Redis dies in the middle of a run of logins: no login fails because of it. Throttling moves
 * to the replica's memory, says so in /metrics, and moves back when Redis returns.
 */
import { rm } from 'node:fs/promises';
import { expect } from 'chai';
import { accountsConfigDir, call, PASSWORDS } from '../helpers/accounts-fixture.js';
import { startRedis, type RedisPeer } from '../helpers/peers.js';
import { startTestServer, type TestServer } from '../helpers/server.js';
import { cleanUpTempDirs } from '../helpers/temp-dir.js';

describe('logins while Redis goes away', function () {
  cleanUpTempDirs();
  this.timeout(60_000);
  let redis: RedisPeer;
  let dir: string;
  let server: TestServer;

  before(async function () {
    redis = await startRedis();
    dir = accountsConfigDir();
    server = await startTestServer(dir, { redisUrl: redis.url });
  });
  after(async function () {
    await server?.close();
    await redis?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  async function fallbackGauge(): Promise<string | undefined> {
    const text = await (await fetch(`${server.url}/metrics`)).text();
    return /^svc_login_throttle_fallback (\S+)$/m.exec(text)?.[1];
  }

  it('no login fails when Redis is killed mid-run', async function () {
    const statuses: number[] = [];
    let running = true;
    async function loginLoop(): Promise<void> {
      while (running) {
        const reply = await call(server.url, 'POST', '/api/v1/session', { body: { username: 'alice', password: PASSWORDS.alice } });
        statuses.push(reply.status);
      }
    }
    const loops = [loginLoop(), loginLoop(), loginLoop()];
    await new Promise((r) => setTimeout(r, 500));
    const beforeKill = statuses.length;
    expect(await fallbackGauge()).to.equal('0');
    await redis.stop();
    await new Promise((r) => setTimeout(r, 1500));
    expect(await fallbackGauge()).to.equal('1');
    running = false;
    await Promise.all(loops);
    expect(beforeKill).to.be.greaterThan(0);
    expect(statuses.length - beforeKill).to.be.greaterThan(3); // logins went on during the outage
    expect(statuses.filter((s) => s !== 200)).to.deep.equal([]);
    expect(server.logs()).to.include("login throttle: state backend unreachable; counting failed logins in this replica's memory");

    await redis.restart();
    let gauge: string | undefined = '1';
    for (let i = 0; i < 50 && gauge !== '0'; i++) {
      await new Promise((r) => setTimeout(r, 100));
      await call(server.url, 'POST', '/api/v1/session', { body: { username: 'alice', password: PASSWORDS.alice } });
      gauge = await fallbackGauge();
    }
    expect(gauge).to.equal('0');
  });
});

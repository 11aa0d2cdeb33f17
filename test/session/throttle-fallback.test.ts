/** Redis goes away under the throttle: counting moves to memory, is logged and shows in metrics. */
import { expect } from 'chai';
import { Registry } from 'prom-client';
import { TooManyAttempts } from '../../src/errors.js';
import { createRedisState } from '../../src/state/redis.js';
import type { StateBackend } from '../../src/state/state.js';
import { createLoginThrottle, type LoginThrottle } from '../../src/session/throttle.js';
import { startRedis, type RedisPeer } from '../helpers/peers.js';

describe('login throttle when Redis is unreachable', function () {
  let peer: RedisPeer;
  let redis: StateBackend;
  let throttle: LoginThrottle;
  const registry = new Registry();
  const warnings: string[] = [];
  const log = { info: () => undefined, warn: (_o: unknown, msg?: string) => void warnings.push(String(msg ?? _o)) };

  before(async function () {
    this.timeout(30_000);
    peer = await startRedis();
    redis = createRedisState({ url: peer.url, log: { info: () => undefined, warn: () => undefined } });
    await redis.ping();
    const limits = { maxFailCount: 3, windowSeconds: 300, maxCacheSize: 1000, maxConcurrentLogins: 50 };
    throttle = createLoginThrottle({ state: redis, limits, log, registry, now: Date.now });
  });
  after(async function () {
    await throttle.close();
    await redis.close();
    await peer.stop();
  });

  async function gauge(): Promise<number | undefined> {
    const metric = await registry.getSingleMetric('svc_login_throttle_fallback')?.get();
    return metric?.values[0]?.value;
  }

  it('keeps counting in memory, warns once, sets the metric, and goes back when Redis returns', async function () {
    this.timeout(30_000);
    const fail = async (name: string) => throttle.recordFailure(name, await throttle.admit(name));
    await fail('ivy');
    expect(await gauge()).to.equal(0);
    await peer.stop();
    expect(await throttle.admit('ivy')).to.equal(1); // works: memory knows nothing, so not locked
    await throttle.recordFailure('ivy', 1);
    await fail('ivy');
    await fail('ivy');
    let err: unknown;
    await throttle.admit('ivy').catch((e: unknown) => (err = e));
    expect(err).to.be.instanceOf(TooManyAttempts);
    expect(throttle.degraded).to.equal(true);
    expect(await gauge()).to.equal(1);
    const total = await registry.getSingleMetric('svc_login_throttle_fallback_total')?.get();
    expect(total?.values[0]?.value).to.be.greaterThan(0);
    expect(warnings.filter((w) => w.includes('state backend unreachable'))).to.deep.equal([
      "login throttle: state backend unreachable; counting failed logins in this replica's memory",
    ]);

    await peer.restart();
    await redis.ping().catch(() => undefined);
    for (let i = 0; i < 40 && throttle.degraded; i++) {
      await new Promise((r) => setTimeout(r, 100));
      await throttle.admit('someone-else').catch(() => undefined);
    }
    expect(throttle.degraded).to.equal(false);
    expect(await gauge()).to.equal(0);
  });
});

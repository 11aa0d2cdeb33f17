/** `svc-server login unlock`: the break-glass for a locked login, on a real Redis. */
import { expect } from 'chai';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { runLoginUnlock } from '../../src/commands/login-unlock.js';
import { createLoginThrottle } from '../../src/session/throttle.js';
import { createRedisState } from '../../src/state/redis.js';
import type { StateBackend } from '../../src/state/state.js';
import { startRedis, type RedisPeer } from '../helpers/peers.js';
import { textSink } from '../helpers/text-sink.js';


describe('login unlock', function () {
  this.timeout(30_000);
  let peer: RedisPeer;
  let redis: StateBackend;

  before(async function () {
    peer = await startRedis();
    redis = createRedisState({ url: peer.url, log: { info: () => undefined, warn: () => undefined } });
    await redis.ping();
  });
  after(async function () {
    await redis?.close();
    await peer?.stop();
  });

  it('lifts a lockout of admin that anyone could set, so the operator logs in at once', async function () {
    const throttle = createLoginThrottle({
      state: redis,
      limits: { maxFailCount: 2, windowSeconds: 300, maxCacheSize: 100, maxConcurrentLogins: 0 },
      log: pino({ level: 'silent' }),
      registry: new Registry(),
      now: Date.now,
    });
    try {
      for (let i = 0; i < 2; i++) await throttle.recordFailure('admin', await throttle.admit('admin'));
      expect(await throttle.admit('admin').catch((e: unknown) => e)).to.include({ code: 'too_many_attempts' });
      const out = textSink();
      const err = textSink();
      expect(await runLoginUnlock(peer.url, 'admin', out.stream, err.stream)).to.equal(0);
      expect(out.text()).to.equal('"admin": lockout lifted; 3 counted attempt(s) forgotten\n');
      expect(err.text()).to.equal('');
      expect(await throttle.admit('admin')).to.equal(1);
      expect(await redis.hashGet('login-failures-index', 'admin')).to.equal(null);
    } finally {
      await throttle.close();
      await redis.delete('login-failures:admin');
    }
  });

  it('waits for a Redis that answers only a moment after it starts', async function () {
    const late = await startRedis();
    try {
      await late.stop();
      const out = textSink();
      const err = textSink();
      const unlocking = runLoginUnlock(late.url, 'admin', out.stream, err.stream);
      await late.restart();
      expect(await unlocking, err.text()).to.equal(0);
      expect(out.text()).to.equal('"admin": was not locked; 0 counted attempt(s) forgotten\n');
    } finally {
      await late.stop();
    }
  });

  it('says what to do without Redis', async function () {
    const err = textSink();
    expect(await runLoginUnlock(undefined, 'admin', textSink().stream, err.stream)).to.equal(1);
    expect(err.text()).to.equal(
      "svc-server: login unlock needs --redis, --redis-sentinel or --redis-cluster (or SVC_REDIS_URL, SVC_REDIS_SENTINELS, SVC_REDIS_CLUSTER): without Redis the failed logins are counted in the server's memory, and restarting the server clears them\n",
    );
  });
});

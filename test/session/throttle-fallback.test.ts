/**
 * Redis goes away under the throttle: counting moves to memory, is logged and shows in metrics;
 * when Redis returns, what memory counted is carried to it, so another replica sees it.
 */
import { expect } from 'chai';
import { Registry } from 'prom-client';
import { TooManyAttempts } from '../../src/errors.js';
import { createRedisState } from '../../src/state/redis.js';
import { StateUnavailable, type StateBackend } from '../../src/state/state.js';
import { createMemoryState } from '../../src/state/memory.js';
import { RETRY_AFTER_MS } from '../../src/session/throttle-fallback.js';
import { createLoginThrottle, type LoginThrottle } from '../../src/session/throttle.js';
import { startRedis, type RedisPeer } from '../helpers/peers.js';
import { fail, rejection } from './throttle-suite.js';

const LIMITS = { maxFailCount: 3, windowSeconds: 300, maxCacheSize: 1000, maxConcurrentLogins: 50 };

describe('login throttle when Redis is unreachable', function () {
  let peer: RedisPeer;
  let redis: StateBackend;
  let throttle: LoginThrottle;
  const registry = new Registry();
  const warnings: string[] = [];
  const infos: string[] = [];
  const log = { info: (_o: unknown, msg?: string) => void infos.push(String(msg ?? _o)), warn: (_o: unknown, msg?: string) => void warnings.push(String(msg ?? _o)) };

  before(async function () {
    this.timeout(30_000);
    peer = await startRedis();
    redis = createRedisState({ url: peer.url, log: { info: () => undefined, warn: () => undefined } });
    await redis.ping();
    throttle = createLoginThrottle({ state: redis, limits: LIMITS, log, registry, now: Date.now });
  });
  after(async function () {
    await throttle.close();
    await redis.close();
    await peer.stop();
  });

  /** Redis back, and the throttle on it again: its calls keep coming, as logins would, until one finds Redis. */
  async function restartRedis(): Promise<void> {
    await peer.restart();
    await redis.ping().catch(() => undefined);
    for (let i = 0; i < 40 && throttle.degraded; i++) {
      await new Promise((r) => setTimeout(r, 100));
      await throttle.admit('someone-else').catch(() => undefined);
    }
    expect(throttle.degraded).to.equal(false);
  }

  async function gauge(): Promise<number | undefined> {
    const metric = await registry.getSingleMetric('svc_login_throttle_fallback')?.get();
    return metric?.values[0]?.value;
  }

  it('keeps counting in memory, warns once, sets the metric, and goes back when Redis returns', async function () {
    this.timeout(30_000);
    await fail(throttle, 'ivy');
    expect(await gauge()).to.equal(0);
    await peer.stop();
    expect(await throttle.admit('ivy')).to.equal(1); // works: memory knows nothing, so not locked
    await throttle.recordFailure('ivy', 1);
    await fail(throttle, 'ivy');
    await fail(throttle, 'ivy');
    expect(await rejection(throttle.admit('ivy'))).to.be.instanceOf(TooManyAttempts);
    expect(throttle.degraded).to.equal(true);
    expect(await gauge()).to.equal(1);
    const total = await registry.getSingleMetric('svc_login_throttle_fallback_total')?.get();
    expect(total?.values[0]?.value).to.be.greaterThan(0);
    expect(warnings.filter((w) => w.includes('state backend unreachable'))).to.deep.equal([
      "login throttle: state backend unreachable; counting failed logins in this replica's memory",
    ]);

    await restartRedis();
    expect(await gauge()).to.equal(0);
  });

  it('carries what memory counted during the outage to Redis when it returns, so another replica locks the name', async function () {
    this.timeout(30_000);
    const other = createLoginThrottle({ state: redis, limits: LIMITS, log, registry: new Registry(), now: Date.now });
    try {
      await peer.stop();
      await fail(throttle, 'june');
      await fail(throttle, 'june');   // two of three, in this replica's memory
      for (let i = 0; i < 3; i++) await fail(throttle, 'kay');   // locked, in memory
      expect(throttle.degraded).to.equal(true);
      await restartRedis();

      // The other replica counts on Redis alone: without the carrying it would see neither name.
      expect(await rejection(other.admit('kay')), 'kay, locked in memory during the outage').to.be.instanceOf(TooManyAttempts);
      expect(await other.admit('june'), 'june\'s third attempt').to.equal(3);
      await other.recordFailure('june', 3);
      expect(await rejection(throttle.admit('june')), 'june after three failures over two replicas').to.be.instanceOf(TooManyAttempts);
      expect(infos).to.include('login throttle: failed logins counted in memory during the outage carried to the state backend');
    } finally {
      await other.close();
    }
  });
});

describe('login throttle: carrying memory\'s counts when the backend fails again half-way', function () {
  /**
   * A backend that answers `answers` more calls, then fails every call as Redis does when away
   * (StateUnavailable): memory state standing for Redis, to cut the carrying at a chosen call.
   */
  function flakyBackend(): { readonly state: StateBackend; answers: number } {
    const inner = createMemoryState();
    const control = { answers: Infinity, state: inner };
    control.state = new Proxy(inner, {
      get(target, prop, receiver) {
        if (prop === 'kind') return 'redis';
        const value: unknown = Reflect.get(target, prop, receiver);
        if (typeof value !== 'function') return value;
        return (...args: unknown[]) => {
          if (control.answers <= 0) return Promise.reject(new StateUnavailable('redis unreachable (test)'));
          control.answers--;
          return (value as (...a: unknown[]) => unknown).apply(target, args);
        };
      },
    });
    return control;
  }

  it('counts the backend unreachable again, and the next call that reaches it carries what is left', async function () {
    let now = 1_000_000;
    const backend = flakyBackend();
    const log = { info: () => undefined, warn: () => undefined };
    const throttle = createLoginThrottle({ state: backend.state, limits: LIMITS, log, registry: new Registry(), now: () => now });
    const other = createLoginThrottle({ state: backend.state, limits: LIMITS, log, registry: new Registry(), now: () => now });
    try {
      backend.answers = 0;
      for (let i = 0; i < 3; i++) await fail(throttle, 'kay');
      expect(throttle.degraded).to.equal(true);

      // Back for the two calls of one admit (the lock read and the count), away again for the carrying.
      now += RETRY_AFTER_MS;
      backend.answers = 2;
      expect(await throttle.admit('someone-else')).to.equal(1);
      expect(throttle.degraded, 'unreachable again: the carrying failed').to.equal(true);

      backend.answers = Infinity;
      now += RETRY_AFTER_MS;
      await throttle.admit('someone-else');
      expect(throttle.degraded).to.equal(false);
      expect(await rejection(other.admit('kay')), 'kay, locked in memory, carried at the second return').to.be.instanceOf(TooManyAttempts);
    } finally {
      await Promise.all([throttle.close(), other.close()]);
    }
  });

  it('locks, and announces, a name whose failures in memory and in the backend together reach the limit', async function () {
    let now = 1_000_000;
    const backend = flakyBackend();
    const warned: string[] = [];
    const log = { info: () => undefined, warn: (o: unknown, msg?: string) => void warned.push(`${msg ?? ''} ${JSON.stringify(o)}`) };
    const audited: string[] = [];
    const audit = { record: (e: { action: string; user?: { name?: string } }) => void audited.push(`${e.action} ${e.user?.name ?? ''}`) };
    const throttle = createLoginThrottle({ state: backend.state, limits: LIMITS, log, audit, registry: new Registry(), now: () => now });
    try {
      await fail(throttle, 'lee');   // one on the backend
      backend.answers = 0;
      for (let i = 0; i < 2; i++) await fail(throttle, 'lee');   // two in memory
      expect(audited, 'memory alone has not reached the limit').to.deep.equal([]);
      backend.answers = Infinity;
      now += RETRY_AFTER_MS;
      await throttle.admit('someone-else');
      expect(throttle.degraded).to.equal(false);
      expect(await rejection(throttle.admit('lee')), 'lee after one failure on the backend and two in memory').to.be.instanceOf(TooManyAttempts);
      expect(audited).to.deep.equal(['lockout-started lee']);
      expect(warned.filter((w) => w.startsWith('login locked after too many failures'))).to.have.length(1);
    } finally {
      await throttle.close();
    }
  });
});

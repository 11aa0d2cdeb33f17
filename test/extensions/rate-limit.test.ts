/** The rate limiter in front of the extension checks: buckets per caller and extension, the bound, Redis away. */
import { expect } from 'chai';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { RateLimited } from '../../src/errors.js';
import type { ExtensionConfig } from '../../src/extensions/config.js';
import { createRateLimiter, REDIS_RETRY_MS, type RateLimiterDeps } from '../../src/extensions/rate-limit.js';
import { LEASE_MS } from '../../src/extensions/rate-leases.js';
import type { Principal } from '../../src/principal.js';
import { createMemoryState } from '../../src/state/memory.js';
import { StateUnavailable, type StateBackend } from '../../src/state/state.js';

const log = pino({ level: 'silent' });
const base: ExtensionConfig = { name: 'metrics', enabled: true, idleConnTimeoutMs: 60_000, contentSecurityPolicy: undefined, services: [{ url: 'http://m' }] };
const limited: ExtensionConfig = { ...base, rateLimit: { requestsPerSecond: 2, burst: 2 } };
const user = (username: string): Principal => ({ username, groups: [], issuer: 'svc', kind: 'session', tokenId: 't', expiresAt: undefined });
const noAddress = (): string => {
  throw new Error('a signed-in caller is not limited by address');
};

/** Runs a take that may answer at once or by promise; the refusal, or undefined when allowed. */
async function outcome(take: () => Promise<void> | undefined): Promise<RateLimited | undefined> {
  try {
    await take();
    return undefined;
  } catch (err: unknown) {
    if (err instanceof RateLimited) return err;
    throw err;
  }
}

function setup(overrides: Partial<RateLimiterDeps> = {}) {
  let now = 1_700_000_000_000;
  const registry = new Registry();
  const warnings: string[] = [];
  const limiter = createRateLimiter({
    state: createMemoryState({ log, now: () => now }), // the limiter's clock: a bucket expires on it too
    now: () => now,
    log: { warn: (_o: unknown, msg?: string) => void warnings.push(String(msg)), info: () => undefined } as unknown as RateLimiterDeps['log'],
    registry,
    ...overrides,
  });
  return { limiter, registry, warnings, advance: (ms: number) => (now += ms) };
}

describe('extensions/rate-limit', () => {
  it('does nothing without backend.rateLimit (no bucket, no promise)', () => {
    const { limiter } = setup();
    for (let i = 0; i < 100; i++) expect(limiter.take(base, user('alice'), noAddress)).to.equal(undefined);
    expect(limiter.localBuckets()).to.equal(0);
  });

  it('refuses past the burst with the wait in whole seconds and a message naming the extension, counted in /metrics', async () => {
    const { limiter, registry, advance } = setup();
    expect(await outcome(() => limiter.take(limited, user('alice'), noAddress))).to.equal(undefined);
    expect(await outcome(() => limiter.take(limited, user('alice'), noAddress))).to.equal(undefined);
    const refused = await outcome(() => limiter.take(limited, user('alice'), noAddress));
    expect(refused).to.include({ code: 'rate_limited', extension: 'metrics', retryAfterSeconds: 1 });
    expect(refused?.message).to.equal("extension 'metrics' allows 2 requests per second per caller (burst 2); try again in 1s");
    advance(500);
    expect(await outcome(() => limiter.take(limited, user('alice'), noAddress))).to.equal(undefined);
    expect(await registry.getSingleMetricAsString('svc_extension_rate_limited_total')).to.include('svc_extension_rate_limited_total{extension="metrics"} 1');
  });

  it('keeps one bucket per caller and extension; an unauthenticated request counts against its address', async () => {
    const { limiter } = setup();
    const other: ExtensionConfig = { ...limited, name: 'other' };
    for (let i = 0; i < 2; i++) await limiter.take(limited, user('alice'), noAddress);
    expect(await outcome(() => limiter.take(limited, user('alice'), noAddress))).to.be.instanceOf(RateLimited);
    expect(await outcome(() => limiter.take(limited, user('bob'), noAddress))).to.equal(undefined);
    expect(await outcome(() => limiter.take(other, user('alice'), noAddress))).to.equal(undefined);
    for (let i = 0; i < 2; i++) await limiter.take(limited, undefined, () => '192.0.2.1');
    expect(await outcome(() => limiter.take(limited, undefined, () => '192.0.2.1'))).to.be.instanceOf(RateLimited);
    expect(await outcome(() => limiter.take(limited, undefined, () => '192.0.2.2'))).to.equal(undefined);
    // A name that looks like an address is still a caller of its own.
    expect(await outcome(() => limiter.take(limited, user('192.0.2.1'), noAddress))).to.equal(undefined);
  });

  it('keeps one bucket per person: two tokens of one person share it, and the SSO user alice never spends local alice\'s', async () => {
    const { limiter } = setup();
    const token = (over: Partial<Principal>): Principal => ({ ...user('alice'), ...over });
    const local = [token({ tokenId: 'session-1' }), token({ kind: 'apiKey', tokenId: 'api-key-2' })];
    const sso = [token({ kind: 'sso', issuer: 'https://idp.example', tokenId: 'id-token-1' }), token({ kind: 'ssoApiKey', issuer: 'https://idp.example', tokenId: 'sso-key-2' })];
    for (const caller of sso) expect(await outcome(() => limiter.take(limited, caller, noAddress)), caller.tokenId).to.equal(undefined);
    for (const caller of sso) expect(await outcome(() => limiter.take(limited, caller, noAddress)), `${caller.tokenId}, the SSO user's bucket spent by two tokens`).to.be.instanceOf(RateLimited);
    expect(await outcome(() => limiter.take(limited, token({ kind: 'sso', issuer: 'https://other.example', tokenId: 'id-token-3' }), noAddress)), 'alice of another provider').to.equal(undefined);
    for (const caller of local) expect(await outcome(() => limiter.take(limited, caller, noAddress)), `local ${caller.tokenId}`).to.equal(undefined);
    for (const caller of local) expect(await outcome(() => limiter.take(limited, caller, noAddress)), `local ${caller.tokenId}, spent by two tokens`).to.be.instanceOf(RateLimited);
  });

  it('bounds the buckets it keeps, dropping the one idle longest first', async () => {
    const { limiter } = setup({ maxBuckets: 3 });
    for (let i = 0; i < 2; i++) await limiter.take(limited, user('old'), noAddress);
    for (let i = 0; i < 2; i++) await limiter.take(limited, user('busy'), noAddress);
    await limiter.take(limited, user('third'), noAddress);
    expect(await outcome(() => limiter.take(limited, user('busy'), noAddress))).to.be.instanceOf(RateLimited);
    await limiter.take(limited, user('fourth'), noAddress);
    expect(limiter.localBuckets()).to.equal(3);
    // 'old' was idle longest: dropped, it comes back full; 'busy' (used since) is still empty.
    expect(await outcome(() => limiter.take(limited, user('busy'), noAddress))).to.be.instanceOf(RateLimited);
    expect(await outcome(() => limiter.take(limited, user('old'), noAddress))).to.equal(undefined);
  });

  it('counts in its own buckets while Redis is away, says so once, and asks Redis again after a pause', async () => {
    let asked = 0;
    let down = true;
    const redis: Pick<StateBackend, 'kind' | 'leaseTokens'> = {
      kind: 'redis',
      leaseTokens: async () => {
        asked++;
        if (down) throw new StateUnavailable('redis leaseTokens: connection refused');
        return { granted: 0, retryAfterMs: 3_500 };
      },
    };
    const { limiter, registry, warnings, advance } = setup({ state: redis as StateBackend });
    expect(await outcome(() => limiter.take(limited, user('alice'), noAddress))).to.equal(undefined);
    expect(await outcome(() => limiter.take(limited, user('alice'), noAddress))).to.equal(undefined);
    expect(await outcome(() => limiter.take(limited, user('alice'), noAddress))).to.be.instanceOf(RateLimited);
    expect(asked).to.equal(1);
    expect(warnings).to.have.length(1);
    expect(await registry.getSingleMetricAsString('svc_extension_rate_limit_fallback')).to.include('svc_extension_rate_limit_fallback 1');
    down = false;
    advance(REDIS_RETRY_MS);
    const shared = await outcome(() => limiter.take(limited, user('alice'), noAddress));
    expect(asked).to.equal(2);
    expect(shared).to.include({ retryAfterSeconds: 4 });
    expect(await registry.getSingleMetricAsString('svc_extension_rate_limit_fallback')).to.include('svc_extension_rate_limit_fallback 0');
  });

  describe('on a shared bucket (Redis): leases', () => {
    /** A shared backend that counts its round trips: the memory backend's buckets, seen as Redis. */
    function sharedState(now?: () => number): { state: Pick<StateBackend, 'kind' | 'leaseTokens'>; asked: () => number } {
      // The limiter's clock, when the test moves one: the backend's expiry of a bucket runs on it too.
      const memory = createMemoryState({ log, ...(now === undefined ? {} : { now }) });
      let asked = 0;
      return {
        state: { kind: 'redis', leaseTokens: (...args) => ((asked += 1), memory.leaseTokens(...args)) },
        asked: () => asked,
      };
    }

    it('far from the limit, spends a lease without a round trip: 1,000 requests in 1 s cost a handful of calls', async () => {
      const shared = sharedState();
      const { limiter, advance } = setup({ state: shared.state as StateBackend });
      const roomy: ExtensionConfig = { ...base, rateLimit: { requestsPerSecond: 100_000, burst: 100_000 } };
      let synchronous = 0;
      for (let i = 0; i < 1_000; i++) {
        const waiting = limiter.take(roomy, user('alice'), noAddress);
        if (waiting === undefined) synchronous++;
        else await waiting;
        advance(1);
      }
      // The first lease is a tenth of the bucket (10,000 tokens), good for LEASE_MS: one call, then local spends.
      expect(shared.asked()).to.equal(1);
      expect(synchronous).to.equal(999);
      expect(limiter.leases()).to.equal(1);
    });

    it('near the limit, asks the shared bucket for every request and refuses exactly past it', async () => {
      const shared = sharedState();
      const { limiter } = setup({ state: shared.state as StateBackend });
      const answers = [];
      for (let i = 0; i < 4; i++) answers.push(await outcome(() => limiter.take(limited, user('alice'), noAddress)));
      expect(answers.map((a) => a === undefined)).to.deep.equal([true, true, false, false]);
      expect(answers[2]).to.include({ retryAfterSeconds: 1 });
      expect(shared.asked()).to.equal(4);
    });

    it('two replicas sharing the bucket, a caller at twice the rate for 10 s: allowed within the bucket plus one lease per replica', async () => {
      let now = 1_700_000_000_000;
      // One clock for the limiters and the shared bucket: with the real one, a bucket expired
      // (refilled) whenever the loop ran slower than its refill time on a busy machine.
      const shared = sharedState(() => now);
      const replicas = [0, 1].map(() => createRateLimiter({ state: shared.state as StateBackend, now: () => now, log, registry: new Registry() }));
      const rate = { requestsPerSecond: 200, burst: 100 };
      const busy: ExtensionConfig = { ...base, rateLimit: rate };
      let allowed = 0;
      const seconds = 10;
      for (let i = 0; i < 2 * rate.requestsPerSecond * seconds; i++) {
        if ((await outcome(() => replicas[i % 2]!.take(busy, user('alice'), noAddress))) === undefined) allowed++;
        now += 1000 / (2 * rate.requestsPerSecond);
      }
      const strict = rate.burst + rate.requestsPerSecond * seconds;
      // The excess a lease can add (rate-leases.ts): one per replica, a tenth of the burst each.
      expect(allowed).to.be.within(strict * 0.9, strict + 2 * rate.burst * 0.1);
      // Near the limit the leases are small: most requests still asked, fewer than one call per request.
      expect(shared.asked()).to.be.below(2 * rate.requestsPerSecond * seconds);
    });

    it('requests of one caller arriving together wait for one lease instead of each asking', async () => {
      let asked = 0;
      let answer: (granted: number) => void = () => undefined;
      const state: Pick<StateBackend, 'kind' | 'leaseTokens'> = {
        kind: 'redis',
        leaseTokens: () => {
          asked++;
          return new Promise((resolve) => (answer = (granted) => resolve({ granted, retryAfterMs: granted === 0 ? 250 : 0 })));
        },
      };
      const { limiter } = setup({ state: state as StateBackend });
      const roomy: ExtensionConfig = { ...base, rateLimit: { requestsPerSecond: 1000, burst: 1000 } };
      const waiting = Array.from({ length: 10 }, () => outcome(() => limiter.take(roomy, user('alice'), noAddress)));
      expect(asked).to.equal(1);
      answer(6);
      await new Promise((resolve) => setImmediate(resolve));
      // Six spent the lease; the four others asked again, together.
      expect(asked).to.equal(2);
      answer(0);
      const results = await Promise.all(waiting);
      expect(results.filter((r) => r === undefined)).to.have.length(6);
      expect(results.filter((r) => r instanceof RateLimited)).to.have.length(4);
    });

    it('drops a lease after LEASE_MS and when the limit changes, asking the shared bucket again', async () => {
      const shared = sharedState();
      const { limiter, advance } = setup({ state: shared.state as StateBackend });
      const roomy: ExtensionConfig = { ...base, rateLimit: { requestsPerSecond: 1000, burst: 1000 } };
      await limiter.take(roomy, user('alice'), noAddress);
      expect(limiter.take(roomy, user('alice'), noAddress)).to.equal(undefined);
      expect(shared.asked()).to.equal(1);
      advance(LEASE_MS);
      await limiter.take(roomy, user('alice'), noAddress);
      expect(shared.asked()).to.equal(2);
      const lowered: ExtensionConfig = { ...base, rateLimit: { requestsPerSecond: 1000, burst: 500 } };
      await limiter.take(lowered, user('alice'), noAddress);
      expect(shared.asked()).to.equal(3);
    });
  });
});

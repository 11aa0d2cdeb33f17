/**
 * Failure counts that no replica acknowledged, through a failover that loses them (issue 56):
 * two workers' throttles on one stand-in for a Sentinel-watched primary. The stand-in answers
 * from the current primary's data; `failover()` swaps in a primary that never received the
 * old one's writes (Redis's asynchronous replication: what the old primary took with no
 * replica is gone), and `replicated` writes fail (NotReplicated) while `replica` is false.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { expect } from 'chai';
import { Registry } from 'prom-client';
import { TooManyAttempts } from '../../src/errors.js';
import { createMemoryState } from '../../src/state/memory.js';
import { NotReplicated, StateUnavailable, type StateBackend } from '../../src/state/state.js';
import { RETRY_AFTER_MS } from '../../src/session/throttle-fallback.js';
import { createLoginThrottle, type LoginThrottle } from '../../src/session/throttle.js';
import { COUNT_PREFIX, LOCK_PREFIX } from '../../src/session/throttle-keys.js';
import { fail, rejection } from './throttle-suite.js';

const LIMITS = { maxFailCount: 3, windowSeconds: 300, maxCacheSize: 1000, maxConcurrentLogins: 50 };
const RETRY_MS = 20;

interface Primary {
  readonly state: StateBackend;
  /** False: no replica acknowledges, so a `replicated` write fails (the primary keeps it). */
  replica: boolean;
  /** True: no primary answers (every call rejects with StateUnavailable). */
  down: boolean;
  /** `raiseTo` calls so far (the held counts' writes back). */
  raised: number;
  /** The replica takes over without what the primary took meanwhile. */
  failover(): void;
  close(): Promise<void>;
}

function lossyPrimary(): Primary {
  let current = createMemoryState();
  const old: StateBackend[] = [];
  const self: Primary = {
    replica: true,
    down: false,
    raised: 0,
    state: new Proxy({} as StateBackend, {
      get(_target, name: keyof StateBackend) {
        if (name === 'kind') return 'redis';
        if (self.down) return () => Promise.reject(new StateUnavailable('redis is unreachable (reconnecting)'));
        if (name === 'raiseTo') {
          return async (key: string, atLeast: number, opts?: { ttlMs?: number; replicated?: boolean }) => {
            self.raised++;
            const value = await current.raiseTo(key, atLeast, opts);
            if (opts?.replicated === true && !self.replica) throw new NotReplicated('no replica acknowledged the write within 500 ms');
            return value;
          };
        }
        const member = current[name];
        return typeof member === 'function' ? (member as (...args: unknown[]) => unknown).bind(current) : member;
      },
    }),
    failover() {
      old.push(current);
      current = createMemoryState();
    },
    async close() {
      await Promise.all([current, ...old].map((s) => s.close()));
    },
  };
  return self;
}

describe('login throttle: failure counts no replica acknowledged', function () {
  let primary: Primary;
  let workers: LoginThrottle[];
  let warnings: string[];
  let infos: string[];
  let registry: Registry;
  let clock: number;

  beforeEach(function () {
    primary = lossyPrimary();
    warnings = [];
    infos = [];
    registry = new Registry();
    clock = Date.now();
    const log = { info: (_o: unknown, msg?: string) => void infos.push(String(msg)), warn: (_o: unknown, msg?: string) => void warnings.push(String(msg)) };
    workers = [
      createLoginThrottle({ state: primary.state, limits: LIMITS, log, registry, now: () => clock, heldRetryMs: RETRY_MS }),
      createLoginThrottle({ state: primary.state, limits: LIMITS, log, registry: new Registry(), now: () => clock, heldRetryMs: RETRY_MS }),
    ];
  });
  afterEach(async function () {
    await Promise.all(workers.map((w) => w.close()));
    await primary.close();
  });

  const a = () => workers[0] as LoginThrottle;
  const b = () => workers[1] as LoginThrottle;
  const held = async () => (await registry.getSingleMetric('svc_login_throttle_unconfirmed')?.get())?.values[0]?.value;

  it('locks at the limit across two workers when a failover lost the failures the old primary took without a replica', async function () {
    primary.replica = false;
    await fail(a(), 'ivy');
    await fail(b(), 'ivy');
    primary.failover();
    primary.replica = true;
    // Each worker writes back what it holds within a retry: the new primary counts 2 again.
    await sleep(RETRY_MS * 5);
    expect(await a().admit('ivy'), 'the third attempt, after the two the failover lost').to.equal(3);
    await a().recordFailure('ivy', 3);
    expect(await rejection(b().admit('ivy')), 'ivy on the other worker after three failures').to.be.instanceOf(TooManyAttempts);
    expect(await held()).to.equal(0);
  });

  it('counts from what it holds and refuses at the limit while the primary that lost the lock has no replica yet', async function () {
    primary.replica = false;
    for (let i = 0; i < 3; i++) await fail(a(), 'ivy');
    primary.failover();
    // The new primary has neither the count nor the lock, and acknowledges nothing yet.
    expect(await rejection(a().admit('ivy')), 'the worker holding three failures').to.be.instanceOf(TooManyAttempts);
    expect(await held()).to.equal(1);
    await sleep(RETRY_MS * 5);
    expect(await rejection(b().admit('ivy')), 'the other worker, once the lock is written back').to.be.instanceOf(TooManyAttempts);
    expect(warnings.filter((w) => w.includes('is on no Redis replica'))).to.deep.equal([
      `login throttle: a failed login's count is on no Redis replica (a failover could lose it); this worker holds it, counts the name's next attempts from it, refuses the name once it reaches the limit, and writes it back every ${RETRY_MS} ms until a replica acknowledges`,
    ]);
    expect(await held()).to.equal(1);
    primary.replica = true;
    await sleep(RETRY_MS * 5);
    expect(await held()).to.equal(0);
    expect(infos).to.include('login throttle: this worker holds no unacknowledged failed-login count any more (each written back to a replica, expired with its window, or cleared by a success)');
  });

  it('holds nothing once a replica acknowledged, and forgets a name on a success', async function () {
    await fail(a(), 'ivy');
    await sleep(RETRY_MS);
    expect(await held()).to.equal(0);
    primary.replica = false;
    await fail(a(), 'june');
    expect(await held()).to.equal(1);
    await a().recordSuccess('june');
    expect(await held()).to.equal(0);
    expect(await a().admit('june')).to.equal(1);
  });

  it('writes back what it holds as soon as a call finds the backend back after an outage, not at the next retry', async function () {
    const slow = createLoginThrottle({ state: primary.state, limits: LIMITS, log: { info: () => undefined, warn: () => undefined }, registry: new Registry(), now: () => clock, heldRetryMs: 60_000 });
    try {
      primary.replica = false;
      await fail(slow, 'ivy');
      await fail(slow, 'ivy');
      primary.down = true;
      await fail(slow, 'someone-else'); // counted in memory: the worker is degraded
      primary.failover();
      primary.down = false;
      primary.replica = true;
      clock += RETRY_AFTER_MS;
      await slow.admit('someone-else'); // finds the backend back
      await sleep(RETRY_MS);
      expect(await b().admit('ivy'), 'ivy\'s third attempt, on the other worker').to.equal(3);
    } finally {
      await slow.close();
    }
  });

  it('holds a count one failure window at most: past it, nothing is written back, no lock comes back, and the name is admitted again', async function () {
    primary.replica = false;
    for (let i = 0; i < 3; i++) await fail(a(), 'ivy');
    primary.failover();
    await sleep(RETRY_MS * 3);
    expect(await primary.state.get(LOCK_PREFIX + 'ivy'), 'written back within the window').to.not.equal(null);
    // The window is over (the backend's own keys would have expired); the new primary loses them again.
    clock += LIMITS.windowSeconds * 1000 + 1;
    primary.failover();
    await sleep(RETRY_MS * 5);
    expect(await primary.state.get(LOCK_PREFIX + 'ivy'), 'no lock re-created past the window').to.equal(null);
    expect(await primary.state.get(COUNT_PREFIX + 'ivy'), 'no count re-created past the window').to.equal(null);
    expect(await a().admit('ivy'), 'ivy on the worker that held her count').to.equal(1);
    expect(await held(), 'the expired count is dropped').to.equal(0);
  });

  it('while no replica acknowledges, sends one write back per retry, not one per name or per failure', async function () {
    primary.replica = false;
    for (const name of ['ivy', 'june', 'kim', 'lee', 'max']) await fail(a(), name);
    expect(await held()).to.equal(5);
    const before = primary.raised;
    await sleep(RETRY_MS * 5 + RETRY_MS / 2);
    const sent = primary.raised - before;
    expect(sent, 'writes back in five retries').to.be.within(1, 6);
    primary.replica = true;
    await sleep(RETRY_MS * 3);
    expect(await held(), 'all written back once a replica acknowledges').to.equal(0);
  });
});

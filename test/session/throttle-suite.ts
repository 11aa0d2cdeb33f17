/**
 * The login-throttle rules, one suite run against every state backend (memory and a real
 * Redis, see throttle.test.ts): replicas behave the same whichever backend they share.
 */
import { expect } from 'chai';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { TooManyAttempts } from '../../src/errors.js';
import type { LoginLimits } from '../../src/session/limits.js';
import { createLoginThrottle, LockedUntilCleared, type LoginThrottle } from '../../src/session/throttle.js';
import type { StateBackend } from '../../src/state/state.js';

const LIMITS: LoginLimits = { maxFailCount: 5, windowSeconds: 300, maxCacheSize: 1000, maxConcurrentLogins: 50 };
let unique = 0;

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err: unknown) {
    return err;
  }
  return undefined;
}

export function throttleSuite(kind: string, backend: () => StateBackend): void {
  describe(`login throttle on ${kind}`, function () {
    const opened: LoginThrottle[] = [];
    /** Fresh names per test, so tests sharing one Redis never see each other's counts. */
    let tag: string;
    const n = (name: string) => `${name}-${tag}`;

    function throttle(limits: Partial<LoginLimits> = {}): LoginThrottle {
      const t = createLoginThrottle({ state: backend(), limits: { ...LIMITS, ...limits }, log: pino({ level: 'silent' }), registry: new Registry(), now: Date.now });
      opened.push(t);
      return t;
    }

    beforeEach(function () {
      tag = `${process.pid}-${++unique}`;
    });
    afterEach(async function () {
      await Promise.all(opened.splice(0).map((t) => t.close()));
    });

    it('locks a name after SVC_SESSION_FAILURE_MAX_FAIL_COUNT failures, for the whole window', async function () {
      const t = throttle();
      for (let i = 0; i < 4; i++) await t.recordFailure(n('alice'));
      await t.check(n('alice'));
      await t.recordFailure(n('alice'));
      const err = await rejection(t.check(n('alice')));
      expect(err).to.be.instanceOf(TooManyAttempts);
      expect((err as TooManyAttempts).code).to.equal('too_many_attempts');
      expect((err as TooManyAttempts).retryAfterSeconds).to.equal(300);
      expect((err as Error).message).to.equal('too many failed logins; try again in 300s');
    });

    it('counts names exactly as typed, unknown names included, each on its own', async function () {
      const t = throttle({ maxFailCount: 2 });
      await t.recordFailure(n('nobody'));
      await t.recordFailure(n('nobody'));
      await t.recordFailure(n('Alice'));
      expect(await rejection(t.check(n('nobody')))).to.be.instanceOf(TooManyAttempts);
      await t.check(n('Alice'));
      await t.check(n('alice'));
    });

    it('resets the count on a success', async function () {
      const t = throttle({ maxFailCount: 3 });
      await t.recordFailure(n('bob'));
      await t.recordFailure(n('bob'));
      await t.recordSuccess(n('bob'));
      await t.recordFailure(n('bob'));
      await t.recordFailure(n('bob'));
      await t.check(n('bob'));
    });

    it('forgets failures and ends the lockout when the window has passed', async function () {
      const t = throttle({ maxFailCount: 2, windowSeconds: 1 });
      await t.recordFailure(n('erin'));
      await t.recordFailure(n('erin'));
      const err = await rejection(t.check(n('erin')));
      expect((err as TooManyAttempts).retryAfterSeconds).to.equal(1);
      await new Promise((r) => setTimeout(r, 1100));
      await t.check(n('erin'));
      await t.recordFailure(n('erin'));
      await t.check(n('erin'));
    });

    it('with a window of 0 locks after 10 consecutive failures, for good', async function () {
      const t = throttle({ windowSeconds: 0, maxFailCount: 10 });
      for (let i = 0; i < 9; i++) await t.recordFailure(n('frank'));
      await t.check(n('frank'));
      await t.recordFailure(n('frank'));
      const err = await rejection(t.check(n('frank')));
      expect(err).to.be.instanceOf(LockedUntilCleared);
      expect((err as Error).message).to.equal('too many consecutive failed logins; logins for this name are locked until an operator clears them');
      const key = `login-locked:${n('frank')}`;
      expect(await backend().ttlMs(key)).to.equal(null);
    });

    it('counts concurrent failures exactly (no lost update)', async function () {
      const t = throttle({ maxFailCount: 20 });
      await Promise.all(Array.from({ length: 19 }, () => t.recordFailure(n('gina'))));
      await t.check(n('gina'));
      await t.recordFailure(n('gina'));
      expect(await rejection(t.check(n('gina')))).to.be.instanceOf(TooManyAttempts);
    });

    it('shares counts between throttles on the same backend (replicas)', async function () {
      const a = throttle({ maxFailCount: 4 });
      const b = throttle({ maxFailCount: 4 });
      await a.recordFailure(n('hank'));
      await b.recordFailure(n('hank'));
      await a.recordFailure(n('hank'));
      await b.recordFailure(n('hank'));
      expect(await rejection(a.check(n('hank')))).to.be.instanceOf(TooManyAttempts);
      expect(await rejection(b.check(n('hank')))).to.be.instanceOf(TooManyAttempts);
    });

    it('when the name cache is full, evicts the oldest entry that is neither admin nor the current name', async function () {
      const state = backend();
      await state.delete('login-failures-index');
      await state.delete('login-failures:admin');
      const t = throttle({ maxFailCount: 3, maxCacheSize: 3 });
      await t.recordFailure('admin');
      await t.recordFailure('admin');
      await t.recordFailure(n('x'));
      await t.recordFailure(n('x'));
      await t.recordFailure(n('y'));
      await t.recordFailure(n('z')); // full: x is the oldest that is not admin
      expect(Object.keys(await state.hashGetAll('login-failures-index')).sort()).to.deep.equal(['admin', n('y'), n('z')].sort());
      await t.recordFailure(n('x')); // x starts over at 1 (y evicted now)
      await t.recordFailure(n('x'));
      await t.check(n('x'));
      await t.recordFailure('admin'); // admin kept its 2 failures: the third locks
      expect(await rejection(t.check('admin'))).to.be.instanceOf(TooManyAttempts);
      await state.delete('login-failures-index');
      await state.delete('login-failures:admin');
      await state.delete('login-locked:admin');
    });
  });
}

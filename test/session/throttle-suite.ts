/**
 * The login-throttle rules, one suite run against every state backend (memory and a real
 * Redis, see throttle.test.ts): replicas behave the same whichever backend they share.
 */
import bcrypt from 'bcrypt';
import { expect } from 'chai';
import { pino } from 'pino';
import { Registry } from 'prom-client';
import { TooManyAttempts } from '../../src/errors.js';
import { createLoginConcurrency } from '../../src/session/concurrency.js';
import type { LoginLimits } from '../../src/session/limits.js';
import { createLoginService } from '../../src/session/login.js';
import { createLoginThrottle, LockedUntilCleared, type LoginThrottle } from '../../src/session/throttle.js';
import { createTokenSigner } from '../../src/session/tokens.js';
import type { StateBackend } from '../../src/state/state.js';

const LIMITS: LoginLimits = { maxFailCount: 5, windowSeconds: 300, maxCacheSize: 1000, maxConcurrentLogins: 50 };
let unique = 0;

/** What `promise` was rejected with; undefined when it resolved. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (err: unknown) {
    return err;
  }
  return undefined;
}

/** One attempt that fails: counted first (admit), then recorded as a failure. */
export async function fail(t: LoginThrottle, name: string): Promise<void> {
  await t.recordFailure(name, await t.admit(name));
}

export function throttleSuite(kind: string, backend: () => StateBackend): void {
  describe(`login throttle on ${kind}`, function () {
    const opened: LoginThrottle[] = [];
    /** Fresh names per test, so tests sharing one Redis never see each other's counts. */
    let tag: string;
    const n = (name: string) => `${name}-${tag}`;

    function throttle(limits: Partial<LoginLimits> = {}, options: { maxWaitMs?: number; now?: () => number } = {}): LoginThrottle {
      const t = createLoginThrottle({ state: backend(), limits: { ...LIMITS, ...limits }, log: pino({ level: 'silent' }), registry: new Registry(), now: Date.now, ...options });
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
      for (let i = 0; i < 4; i++) await fail(t, n('alice'));
      await t.recordSuccess(n('other')); // another name's success changes nothing
      await fail(t, n('alice'));
      const err = await rejection(t.admit(n('alice')));
      expect(err).to.be.instanceOf(TooManyAttempts);
      expect((err as TooManyAttempts).code).to.equal('too_many_attempts');
      expect((err as TooManyAttempts).retryAfterSeconds).to.equal(300);
      expect((err as Error).message).to.equal('too many failed logins; try again in 300s');
    });

    it('counts names exactly as typed, unknown names included, each on its own', async function () {
      const t = throttle({ maxFailCount: 2 });
      await fail(t, n('nobody'));
      await fail(t, n('nobody'));
      await fail(t, n('Alice'));
      expect(await rejection(t.admit(n('nobody')))).to.be.instanceOf(TooManyAttempts);
      expect(await t.admit(n('Alice'))).to.equal(2);
      expect(await t.admit(n('alice'))).to.equal(1);
    });

    it('resets the count on a success', async function () {
      const t = throttle({ maxFailCount: 3 });
      await fail(t, n('bob'));
      await fail(t, n('bob'));
      await t.admit(n('bob'));
      await t.recordSuccess(n('bob'));
      await fail(t, n('bob'));
      await fail(t, n('bob'));
      expect(await t.admit(n('bob'))).to.equal(3);
    });

    it('counts each attempt before its password is checked: attempts past the limit wait, and are refused once failures lock the name', async function () {
      const t = throttle({ maxFailCount: 5 });
      const admitted: number[] = [];
      const pending = Array.from({ length: 40 }, () => t.admit(n('par')).then((a) => (admitted.push(a), a)));
      const results = Promise.allSettled(pending);
      while (admitted.length < 5) await new Promise((r) => setTimeout(r, 5));
      await new Promise((r) => setTimeout(r, 100));
      expect([...admitted].sort((a, b) => a - b)).to.deep.equal([1, 2, 3, 4, 5]);
      for (const attempt of admitted.slice()) await t.recordFailure(n('par'), attempt);
      const refused = (await results).filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason as TooManyAttempts);
      expect(refused).to.have.length(35);
      expect(refused[0]).to.include({ code: 'too_many_attempts', retryAfterSeconds: 300, message: 'too many failed logins; try again in 300s' });
    });

    it('an attempt waits its turn for a bounded time only: then 429 with Retry-After 1', async function () {
      const t = throttle({ maxFailCount: 1 }, { maxWaitMs: 200 });
      expect(await t.admit(n('slow'))).to.equal(1); // in flight and never finishes
      const err = await rejection(t.admit(n('slow')));
      expect(err).to.include({ code: 'too_many_attempts', retryAfterSeconds: 1, message: 'too many failed logins; try again in 1s' });
      expect(await backend().get(`login-failures:${n('slow')}`)).to.equal('1');
    });

    it('20 parallel logins of one account with the right password all succeed', async function () {
      this.timeout(20_000);
      const name = n('ci');
      const passwordHash = await bcrypt.hash('right-password', 4);
      const login = createLoginService({
        accounts: () => new Map([[name, { name, enabled: true, capabilities: ['login'], tokens: [], passwordHash }]]),
        throttle: throttle({ maxFailCount: 5 }),
        concurrency: createLoginConcurrency(0),
        signer: createTokenSigner({ secretKey: () => 'k'.repeat(32), now: Date.now }),
        sessionDurationMs: () => 60_000,
        log: pino({ level: 'silent' }),
        now: Date.now,
        failureDelay: async () => undefined,
      });
      const results = await Promise.allSettled(Array.from({ length: 20 }, () => login.withPassword({ username: name, password: 'right-password' })));
      expect(results.map((r) => (r.status === 'rejected' ? (r.reason as { code: string }).code : 'ok'))).to.deep.equal(Array(20).fill('ok'));
    });

    it('a success in flight beside the failures lifts the lock', async function () {
      const t = throttle({ maxFailCount: 2 });
      expect(await t.admit(n('kim'))).to.equal(1); // in flight, with the right password
      await fail(t, n('kim')); // attempt 2 fails: locked
      for (let i = 0; i < 5; i++) expect(await rejection(t.admit(n('kim')))).to.be.instanceOf(TooManyAttempts);
      await t.recordSuccess(n('kim')); // attempt 1 succeeds
      expect(await backend().get(`login-locked:${n('kim')}`)).to.equal(null);
      expect(await t.admit(n('kim'))).to.equal(1);
    });

    it('attempts refused during a lockout leave no count behind once it ends', async function () {
      const t = throttle({ maxFailCount: 2, windowSeconds: 1 });
      const until = (at: number) => new Promise((r) => setTimeout(r, Math.max(0, at - Date.now())));
      const first = Date.now();
      await fail(t, n('lee'));
      await until(first + 500);
      await fail(t, n('lee')); // locks for 1 s from now (first + 1.5 s at the earliest); the count (from 0.5 s ago) now ends with it
      const locked = Date.now(); // the lock was written by now: it ends by locked + 1 s
      await until(first + 1_050); // past the first failure's window, inside the lockout
      // Together: the lockout has about 450 ms left, which five round trips one after another
      // (and a late timer) could outlast on a busy machine.
      const refused = await Promise.all(Array.from({ length: 5 }, () => rejection(t.admit(n('lee')))));
      for (const err of refused) expect(err).to.be.instanceOf(TooManyAttempts);
      await until(locked + 1_100);
      expect(await t.admit(n('lee'))).to.equal(1);
    });

    it('forgets failures and ends the lockout when the window has passed', async function () {
      const t = throttle({ maxFailCount: 2, windowSeconds: 1 });
      await fail(t, n('erin'));
      await fail(t, n('erin'));
      const err = await rejection(t.admit(n('erin')));
      expect((err as TooManyAttempts).retryAfterSeconds).to.equal(1);
      await new Promise((r) => setTimeout(r, 1100));
      await fail(t, n('erin'));
      expect(await t.admit(n('erin'))).to.equal(2);
    });

    it('with a window of 0 locks after 10 consecutive failures, for good', async function () {
      const t = throttle({ windowSeconds: 0, maxFailCount: 10 });
      for (let i = 0; i < 9; i++) await fail(t, n('frank'));
      await fail(t, n('frank'));
      const err = await rejection(t.admit(n('frank')));
      expect(err).to.be.instanceOf(LockedUntilCleared);
      expect((err as Error).message).to.equal('too many consecutive failed logins; logins for this name are locked until an operator clears them');
      const key = `login-locked:${n('frank')}`;
      expect(await backend().ttlMs(key)).to.equal(null);
    });

    it('counts concurrent failures exactly (no lost update)', async function () {
      const t = throttle({ maxFailCount: 20 });
      await Promise.all(Array.from({ length: 19 }, () => fail(t, n('gina'))));
      expect(await backend().get(`login-failures:${n('gina')}`)).to.equal('19');
      await fail(t, n('gina'));
      expect(await rejection(t.admit(n('gina')))).to.be.instanceOf(TooManyAttempts);
    });

    it('shares counts between throttles on the same backend (replicas)', async function () {
      const a = throttle({ maxFailCount: 4 });
      const b = throttle({ maxFailCount: 4 });
      await fail(a, n('hank'));
      await fail(b, n('hank'));
      await fail(a, n('hank'));
      await fail(b, n('hank'));
      expect(await rejection(a.admit(n('hank')))).to.be.instanceOf(TooManyAttempts);
      expect(await rejection(b.admit(n('hank')))).to.be.instanceOf(TooManyAttempts);
    });

    it('when the name cache is full, evicts the entry with the fewest failures, never admin nor the current name', async function () {
      const state = backend();
      await state.delete('login-failures-index');
      await state.delete('login-failures:admin');
      const t = throttle({ maxFailCount: 3, maxCacheSize: 3 });
      await fail(t, 'admin');
      await fail(t, n('x'));
      await fail(t, n('x'));
      await fail(t, n('y'));
      await fail(t, n('z')); // full: y has the fewest failures (admin's one does not count)
      expect(Object.keys(await state.hashGetAll('login-failures-index')).sort()).to.deep.equal(['admin', n('x'), n('z')].sort());
      expect(await t.admit(n('x'))).to.equal(3); // x kept its two failures
      await t.recordSuccess(n('x'));
      await fail(t, 'admin');
      await fail(t, 'admin'); // admin kept its first failure: the third locks
      expect(await rejection(t.admit('admin'))).to.be.instanceOf(TooManyAttempts);
      await state.delete('login-failures-index');
      await state.delete('login-failures:admin');
      await state.delete('login-locked:admin');
    });

    it('a stream of junk names cannot flush a guessed name\'s count, not even one guess', async function () {
      const state = backend();
      await state.delete('login-failures-index');
      let clock = Date.now();
      const t = throttle({ maxFailCount: 5, maxCacheSize: 4 }, { now: () => (clock += 2) }); // each failure in its own millisecond, as real ones are
      await fail(t, n('victim')); // one guess
      await fail(t, n('guessed'));
      await fail(t, n('guessed')); // two guesses
      for (let i = 0; i < 30; i++) await fail(t, n(`junk${i}`));
      const listed = Object.keys(await state.hashGetAll('login-failures-index'));
      expect(listed).to.include.members([n('victim'), n('guessed')]);
      expect(listed).to.have.length(4);
      expect(await t.admit(n('victim'))).to.equal(2);
      expect(await t.admit(n('guessed'))).to.equal(3);
      await state.delete('login-failures-index');
    });

    it('never evicts a locked name: flooding other names does not lift a lockout', async function () {
      const state = backend();
      await state.delete('login-failures-index');
      const t = throttle({ maxFailCount: 2, maxCacheSize: 2, windowSeconds: 0 });
      await fail(t, n('locked'));
      await fail(t, n('locked'));
      for (let i = 0; i < 5; i++) await fail(t, n(`junk${i}`));
      expect(Object.keys(await state.hashGetAll('login-failures-index')).sort()).to.deep.equal([n('junk4'), n('locked')].sort());
      const err = await rejection(t.admit(n('locked')));
      expect(err).to.be.instanceOf(LockedUntilCleared);
      expect(await state.get(`login-locked:${n('locked')}`)).to.not.equal(null);
      await state.delete('login-failures-index');
    });
  });
}

/**
 * Login throttling (DESIGN §3, SPEC.md "Limits"). Failures are counted per username exactly as
 * typed (unknown names too, so a lockout reveals nothing), in the state backend so that every
 * replica sees the same count; throttle-fallback.ts keeps it working in memory when Redis is
 * away.
 *
 * Keys (the backend adds `svc:`):
 *   login-failures:<name>   counter, TTL = the window from the first failure
 *   login-locked:<name>     set when the count reaches the threshold, TTL = the window: a
 *                           lockout lasts a whole window from the failure that caused it
 *   login-failures-index    hash name -> first failure (ms): the bounded "cache" of names
 * With a window of 0 nothing expires: 10 consecutive failures lock the name until the state is
 * cleared (a restart for memory, deleting the key in Redis).
 *
 * While locked the password is not checked and nothing is counted; a success deletes the count.
 * Each counter update is one atomic INCR, so concurrent failures on several replicas are never
 * lost (a read-modify-write hash field would lose them).
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { ADMIN } from '../accounts/config.js';
import { TooManyAttempts } from '../errors.js';
import type { StateBackend, TtlOptions } from '../state/state.js';
import type { LoginLimits } from './limits.js';
import { createFallbackRunner } from './throttle-fallback.js';

export const COUNT_PREFIX = 'login-failures:';
export const LOCK_PREFIX = 'login-locked:';
export const INDEX_KEY = 'login-failures-index';
/** Retry-After for a lockout that never expires (window 0): a day, re-announced on each try. */
export const PERMANENT_RETRY_AFTER_SECONDS = 86_400;

export interface LoginThrottle {
  /**
   * Throws TooManyAttempts while the name is locked; otherwise tells whether the name has
   * failures counted, so that a success only costs a round trip when there is something to reset.
   */
  check(username: string): Promise<boolean>;
  recordFailure(username: string): Promise<void>;
  recordSuccess(username: string): Promise<void>;
  /** True while counts live in this replica's memory because the backend is unreachable. */
  readonly degraded: boolean;
  close(): Promise<void>;
}

export interface ThrottleDeps {
  readonly state: StateBackend;
  readonly limits: LoginLimits;
  readonly log: Pick<Logger, 'warn' | 'info'>;
  readonly registry: Registry;
  readonly now: () => number;
}

/** The lockout without an end (window 0) says so instead of naming a time. */
export class LockedUntilCleared extends TooManyAttempts {
  constructor() {
    super(PERMANENT_RETRY_AFTER_SECONDS);
    this.message = 'too many consecutive failed logins; logins for this name are locked until an operator clears them';
  }
}

export function createLoginThrottle(deps: ThrottleDeps): LoginThrottle {
  const { limits, log, now } = deps;
  const runner = createFallbackRunner(deps);
  const windowMs = limits.windowSeconds * 1000;
  const ttl: TtlOptions = windowMs > 0 ? { ttlMs: windowMs } : {};

  /** Both reads go out together: one round trip for a login that is not locked. */
  async function lookUp(state: StateBackend, username: string): Promise<TooManyAttempts | boolean> {
    const [lock, count] = await Promise.all([state.get(LOCK_PREFIX + username), state.get(COUNT_PREFIX + username)]);
    if (lock === null) return count !== null;
    if (windowMs === 0) return new LockedUntilCleared();
    const left = await state.ttlMs(LOCK_PREFIX + username);
    return new TooManyAttempts(Math.max(1, Math.ceil((left ?? windowMs) / 1000)));
  }

  async function track(state: StateBackend, username: string): Promise<void> {
    if ((await state.hashLength(INDEX_KEY)) >= limits.maxCacheSize) await evictOne(state, username);
    await state.hashSet(INDEX_KEY, username, String(now()));
  }

  /**
   * Makes room for `current`: first forgets names whose count has expired, then, if still full,
   * the oldest entry that is neither admin nor `current` (so flooding unknown names cannot reset
   * admin's count). When only those two are left, nothing is evicted and the cache grows by one.
   */
  async function evictOne(state: StateBackend, current: string): Promise<void> {
    const entries = Object.entries(await state.hashGetAll(INDEX_KEY)).map(([name, at]) => ({ name, at: Number(at) }));
    const stale = windowMs > 0 ? entries.filter((e) => !(now() - e.at < windowMs)) : [];
    if (stale.length > 0) await state.hashDelete(INDEX_KEY, ...stale.map((e) => e.name));
    if (entries.length - stale.length < limits.maxCacheSize) return;
    const victim = entries
      .filter((e) => e.name !== ADMIN && e.name !== current && !stale.includes(e))
      .sort((a, b) => a.at - b.at)[0];
    if (victim === undefined) return;
    await state.delete(COUNT_PREFIX + victim.name);
    await state.delete(LOCK_PREFIX + victim.name);
    await state.hashDelete(INDEX_KEY, victim.name);
  }

  async function failure(state: StateBackend, username: string): Promise<number> {
    const count = await state.incr(COUNT_PREFIX + username, ttl);
    if (count === 1) await track(state, username);
    if (count >= limits.maxFailCount) await state.setIfAbsent(LOCK_PREFIX + username, String(now()), ttl);
    return count;
  }

  return {
    async check(username) {
      const found = await runner.run((state) => lookUp(state, username));
      if (found instanceof TooManyAttempts) throw found;
      return found;
    },

    async recordFailure(username) {
      const count = await runner.run((state) => failure(state, username));
      if (count === limits.maxFailCount) log.warn({ username, failures: count }, 'login locked after too many failures');
    },

    async recordSuccess(username) {
      // Both deletes go out together: one round trip, pipelined on the one connection.
      await runner.run((state) => Promise.all([state.delete(COUNT_PREFIX + username), state.hashDelete(INDEX_KEY, username)]));
    },

    get degraded() {
      return runner.degraded;
    },

    close: () => runner.close(),
  };
}

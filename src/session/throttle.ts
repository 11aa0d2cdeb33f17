/**
 * Login throttling (DESIGN §3, SPEC.md "Limits"). Attempts are counted per username exactly as
 * typed (unknown names too, so a lockout reveals nothing), in the state backend so that every
 * replica sees the same count; throttle-fallback.ts keeps it working in memory when Redis is
 * away.
 *
 * An attempt is counted BEFORE its password is checked (admit), with one atomic INCR: an
 * attempt whose number is past the limit is refused without a bcrypt, so N parallel guesses
 * check at most `maxFailCount` passwords, on one replica or many. (Rejected: check, then
 * bcrypt, then count the failure — parallel guesses all pass the check before any is counted.)
 * A success clears the count, so only failures and attempts still in flight add up. An attempt
 * past the limit while the name is not locked hands its reservation back (decrement) and waits
 * its turn, polling, for up to `maxWaitMs`: the attempts in flight may all succeed (a CI system
 * logging in from ten jobs at once) and then clear the count. So 429 comes only when recorded
 * failures lock the name, or after the bounded wait (Retry-After 1 s); the bound on passwords
 * checked at once (at most the remaining allowance) is unchanged.
 *
 * Keys (the backend adds `svc:`):
 *   login-failures:<name>   attempts not cleared by a success, TTL = the window from the first
 *   login-locked:<name>     set when an attempt numbered `maxFailCount` or later fails, TTL = the
 *                           window: a lockout lasts a whole window from the failure that caused it
 *   login-failures-index    hash name -> `<first failure (ms)>:<failures>`: the bounded
 *                           "cache" of names, failure-index.ts
 * With a window of 0 nothing expires: 10 consecutive failures lock the name until the state is
 * cleared (a restart for memory, deleting the keys in Redis).
 *
 * While locked the password is not checked. The lock is read together with the INCR (one round
 * trip on Redis, not two), so attempts refused while locked are counted too; but setting the
 * lock also resets the count's TTL to the window, so count and lock expire together and a
 * lockout neither extends itself nor leaves a count behind.
 */
import type { AuditTrail } from '../audit/trail.js';
import { randomInt } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { TooManyAttempts } from '../errors.js';
import type { StateBackend, TtlOptions } from '../state/state.js';
import type { LoginLimits } from './limits.js';
import { createFailureIndex } from './failure-index.js';
import { createFallbackRunner } from './throttle-fallback.js';
import { createHeldCounts } from './throttle-held.js';
import { COUNT_PREFIX, INDEX_KEY, LOCK_PREFIX } from './throttle-keys.js';

/** Retry-After for a lockout that never expires (window 0): a day, re-announced on each try. */
export const PERMANENT_RETRY_AFTER_SECONDS = 86_400;
/** Retry-After for an attempt refused because the attempts in flight already reach the limit. */
export const IN_FLIGHT_RETRY_AFTER_SECONDS = 1;
/** How long an attempt waits for the attempts in flight before it (not locked) is refused. */
export const DEFAULT_ADMIT_WAIT_MS = 10_000;
/** Polling while waiting: from the first to the last interval, doubling, with jitter. */
const FIRST_POLL_MS = 20;
const LAST_POLL_MS = 250;

export interface LoginThrottle {
  /**
   * Counts one attempt for the name before its password is checked, waiting (up to maxWaitMs)
   * while the attempts in flight take the whole remaining allowance. Throws TooManyAttempts
   * while the name is locked, or when the wait ends; else resolves with the attempt's number,
   * to hand to recordFailure or release.
   */
  admit(username: string): Promise<number>;
  /** An admitted attempt whose password was never checked (no slot to check it): uncount it. */
  release(username: string): Promise<void>;
  /** The admitted attempt failed: an attempt numbered at the limit or later locks the name. */
  recordFailure(username: string, attempt: number): Promise<void>;
  /** A success clears the count, and a lock that attempts in flight beside it may have set. */
  recordSuccess(username: string): Promise<void>;
  /** True while counts live in this replica's memory because the backend is unreachable. */
  readonly degraded: boolean;
  close(): Promise<void>;
}

export interface ThrottleDeps {
  readonly state: StateBackend;
  /** lockout-started (docs/audit.md). */
  readonly audit?: AuditTrail;
  readonly limits: LoginLimits;
  readonly log: Pick<Logger, 'warn' | 'info'>;
  readonly registry: Registry;
  readonly now: () => number;
  /** The metrics' names (throttle-fallback.ts); the default is the local logins'. */
  readonly metricPrefix?: string;
  /** DEFAULT_ADMIT_WAIT_MS; tests shorten it. */
  readonly maxWaitMs?: number;
  /** Injected so tests can count polls; the default sleeps. */
  readonly sleep?: (ms: number) => Promise<void>;
  /** How often counts no replica acknowledged are written back (throttle-held.ts RETRY_MS); tests shorten it. */
  readonly heldRetryMs?: number;
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
  const runner = createFallbackRunner({ ...deps, carryOver });
  /** Which throttle a log line or audit event is about: its metrics' prefix. */
  const throttleName = deps.metricPrefix ?? 'svc_login_throttle';
  const windowMs = limits.windowSeconds * 1000;
  const ttl: TtlOptions = windowMs > 0 ? { ttlMs: windowMs } : {};
  const index = createFailureIndex({ limits, now });
  // Failures no replica has acknowledged yet, held and written back (throttle-held.ts).
  const held = createHeldCounts({ state: deps.state, ttl, maxFailCount: limits.maxFailCount, maxNames: limits.maxCacheSize, log, registry: deps.registry, now, metricPrefix: throttleName, ...(deps.heldRetryMs !== undefined ? { retryMs: deps.heldRetryMs } : {}) });

  async function lockedError(state: StateBackend, username: string): Promise<TooManyAttempts> {
    if (windowMs === 0) return new LockedUntilCleared();
    const left = await state.ttlMs(LOCK_PREFIX + username);
    return new TooManyAttempts(Math.max(1, Math.ceil((left ?? windowMs) / 1000)));
  }

  /** The attempt's number, the lock's error, or 'wait' (the reservation handed back). */
  async function admit(state: StateBackend, username: string): Promise<TooManyAttempts | number | 'wait'> {
    const [lock, counted] = await Promise.all([state.get(LOCK_PREFIX + username), state.incr(COUNT_PREFIX + username, ttl)]);
    // A failure this worker holds unacknowledged counts even where a failover lost it: the
    // attempt is numbered after it, and a held number at the limit is a lockout.
    const floor = held.floor(username);
    if (lock !== null || floor >= limits.maxFailCount) return lockedError(state, username);
    const attempt = Math.max(counted, floor + 1);
    if (attempt <= limits.maxFailCount) return attempt;
    // Past the limit but not locked (yet): the attempts in flight take the allowance. Hand the
    // reservation back so that waiting attempts are not counted as failures, and wait. The
    // decrement skips a count a success deleted meanwhile; one that lands after a success
    // cleared the count and a new attempt recreated it undercounts by one. Only a success with
    // the right password opens that gap, and a success forgets the count anyway.
    await state.decrement(COUNT_PREFIX + username);
    return 'wait';
  }

  const maxWaitMs = deps.maxWaitMs ?? DEFAULT_ADMIT_WAIT_MS;
  const pause = deps.sleep ?? sleep;

  async function admitInTurn(username: string): Promise<number> {
    const started = now();
    for (let poll = FIRST_POLL_MS; ; poll = Math.min(LAST_POLL_MS, poll * 2)) {
      const admitted = await runner.run((state) => admit(state, username));
      if (admitted instanceof TooManyAttempts) throw admitted;
      if (admitted !== 'wait') return admitted;
      if (now() - started >= maxWaitMs) throw new TooManyAttempts(IN_FLIGHT_RETRY_AFTER_SECONDS);
      await pause(poll / 2 + randomInt(Math.max(1, poll / 2)));
    }
  }

  async function failure(state: StateBackend, username: string, attempt: number): Promise<boolean> {
    const lockedNow = attempt >= limits.maxFailCount && (await state.setIfAbsent(LOCK_PREFIX + username, String(now()), ttl));
    // The count now ends with the lock (see the header). Increments lost to this write were
    // past the limit anyway: the value stays >= the limit, so every later attempt is refused.
    if (lockedNow && windowMs > 0) await state.set(COUNT_PREFIX + username, String(attempt), ttl);
    await index.track(state, username, attempt);
    return lockedNow;
  }

  function lockoutStarted(username: string, failures: number): void {
    log.warn({ username, failures }, 'login locked after too many failures');
    deps.audit?.record({ category: 'iam', type: 'change', action: 'lockout-started', outcome: 'success', reason: `${failures} failed logins`, user: { name: username }, svc: { failures, throttle: throttleName } });
  }

  /**
   * What this replica counted in memory while the backend was away, added to the backend's counts
   * (throttle-fallback.ts): a name locked in memory, or whose failures in memory and in the
   * backend together reach the limit, is locked there too, as one replica's failure would have
   * locked it. Names with failures are the failure index's; a name is forgotten in memory once
   * it is carried. Attempts since forgiven by a success in memory are not there to carry.
   */
  async function carryOver(memory: StateBackend, backend: StateBackend): Promise<void> {
    // What this worker held when Redis went away goes back at once too, in the background.
    held.retryNow();
    const names = Object.keys(await memory.hashGetAll(INDEX_KEY));
    for (const username of names) {
      const [counted, lock] = await Promise.all([memory.get(COUNT_PREFIX + username), memory.get(LOCK_PREFIX + username)]);
      // Bounded: memory admits no attempt past the limit while the name is not locked.
      const attempts = Math.min(Number(counted ?? 0) || 0, limits.maxFailCount);
      const totals = await Promise.all(Array.from({ length: attempts }, () => backend.incr(COUNT_PREFIX + username, ttl)));
      const total = Math.max(0, ...totals);
      // A lock made in memory was announced then; one that memory's and the backend's failures make together is new.
      if (lock !== null) await failure(backend, username, Math.max(total, limits.maxFailCount));
      else if (total >= limits.maxFailCount) {
        if (await failure(backend, username, total)) lockoutStarted(username, total);
      } else if (total > 0) await index.track(backend, username, total);
      // Carried counts are held too, until a replica has them.
      if (total > 0) held.hold(username, total);
      await Promise.all([memory.delete(COUNT_PREFIX + username), memory.delete(LOCK_PREFIX + username), index.forget(memory, username)]);
    }
    if (names.length > 0) log.info({ throttle: throttleName, names: names.length }, 'login throttle: failed logins counted in memory during the outage carried to the state backend');
  }

  return {
    admit: admitInTurn,

    async release(username) {
      await runner.run((state) => state.decrement(COUNT_PREFIX + username));
    },

    async recordFailure(username, attempt) {
      const locked = await runner.run(async (state) => {
        const lockedNow = await failure(state, username, attempt);
        // Counted on the backend: written back until a replica has it. Memory's counts are carried instead.
        if (state === deps.state) held.hold(username, attempt);
        return lockedNow;
      });
      if (locked) lockoutStarted(username, attempt);
    },

    async recordSuccess(username) {
      held.forget(username);
      // The three deletes go out together: one round trip, pipelined on the one connection.
      await runner.run((state) =>
        Promise.all([state.delete(COUNT_PREFIX + username), state.delete(LOCK_PREFIX + username), index.forget(state, username)]),
      );
    },

    get degraded() {
      return runner.degraded;
    },

    async close() {
      await held.close();
      await runner.close();
    },
  };
}

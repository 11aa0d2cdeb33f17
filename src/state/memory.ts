/**
 * The in-process state backend: the default without Redis, and the fallback that login
 * throttling uses while Redis is unreachable. Expiry is checked on every read (so a TTL is
 * exact) and a periodic unref'd sweep frees keys nobody reads again. Pub/sub stays inside
 * the process (a subscription is live from the start and never lost). Time comes from the
 * injected `now` so tests can pin the clock.
 */
import {
  checkTtl,
  checkPositiveInteger,
  checkTtlMs,
  type StateBackend,
  type StateLog,
  type TtlOptions,
} from './state.js';
import { createMemoryBudgets } from './memory-budget.js';
import { checkLease, checkRate, leaseTokens, ONE_TOKEN, refillMs, type LeaseAnswer, type TokenLease, type TokenRate } from './token-bucket.js';

/** How often expired keys that nobody reads are dropped. */
export const MEMORY_SWEEP_INTERVAL_MS = 30_000;

export interface MemoryStateOptions {
  readonly now?: () => number;
  /** Where a throwing subscriber is reported; without it the error is rethrown async. */
  readonly log?: StateLog;
  readonly sweepIntervalMs?: number;
}

type Entry =
  | { readonly kind: 'string'; value: string; expiresAt: number | null }
  | { readonly kind: 'hash'; readonly fields: Map<string, string>; expiresAt: number | null };

type Handler = (message: string) => void;

export function createMemoryState(options: MemoryStateOptions = {}): StateBackend {
  const now = options.now ?? Date.now;
  const entries = new Map<string, Entry>();
  const channels = new Map<string, Set<Handler>>();
  const budgets = createMemoryBudgets();
  let closed = false;

  const sweep = setInterval(function sweepExpired() {
    const t = now();
    for (const [key, entry] of entries) {
      if (entry.expiresAt !== null && entry.expiresAt <= t) entries.delete(key);
    }
  }, options.sweepIntervalMs ?? MEMORY_SWEEP_INTERVAL_MS);
  sweep.unref();

  function open(): void {
    if (closed) throw new Error('state backend is closed');
  }

  /** The token buckets, kept as the Redis backend keeps them (a hash, gone once full again), so both read alike. */
  function lease(key: string, rate: TokenRate, tokens: TokenLease, nowMs: number): LeaseAnswer {
    checkRate(rate);
    checkLease(tokens);
    const entry = hashEntry(key);
    const saved = entry === undefined ? undefined : { tokens: Number(entry.fields.get('n')), atMs: Number(entry.fields.get('t')) };
    const { bucket, answer } = leaseTokens(saved, rate, nowMs, tokens);
    entries.set(key, { kind: 'hash', fields: new Map([['n', String(bucket.tokens)], ['t', String(bucket.atMs)]]), expiresAt: now() + Math.max(1, refillMs(bucket, rate)) });
    return answer;
  }

  function live(key: string): Entry | undefined {
    open();
    const entry = entries.get(key);
    if (entry?.expiresAt != null && entry.expiresAt <= now()) {
      entries.delete(key);
      return undefined;
    }
    return entry;
  }

  function stringEntry(key: string) {
    const entry = live(key);
    if (entry !== undefined && entry.kind !== 'string') throw wrongType();
    return entry;
  }

  function hashEntry(key: string) {
    const entry = live(key);
    if (entry !== undefined && entry.kind !== 'hash') throw wrongType();
    return entry;
  }

  function expiry(opts: TtlOptions | undefined): number | null {
    const ttl = checkTtl(opts);
    return ttl === undefined ? null : now() + ttl;
  }

  function deliver(handler: Handler, message: string): void {
    try {
      handler(message);
    } catch (err: unknown) {
      if (options.log === undefined) throw err;
      options.log.warn({ err }, 'state subscriber failed');
    }
  }

  return {
    kind: 'memory',

    async get(key) {
      return stringEntry(key)?.value ?? null;
    },

    async set(key, value, opts) {
      const expiresAt = expiry(opts);
      live(key);
      entries.set(key, { kind: 'string', value, expiresAt });
    },

    async setIfAbsent(key, value, opts) {
      const expiresAt = expiry(opts);
      if (live(key) !== undefined) return false;
      entries.set(key, { kind: 'string', value, expiresAt });
      return true;
    },

    async setIfAbsentFor(key, value, owner, opts) {
      const source = live(owner);
      if (source === undefined) return 'no-owner';
      if (live(key) !== undefined) return 'exists';
      entries.set(key, { kind: 'string', value, expiresAt: source.expiresAt });
      const former = opts?.formerKey;
      if (former === undefined) return 'set';
      if (live(former) !== undefined) return 'exists';
      entries.set(former, { kind: 'string', value, expiresAt: source.expiresAt });
      return 'set';
    },

    async take(key) {
      const entry = stringEntry(key);
      if (entry === undefined) return null;
      entries.delete(key);
      return entry.value;
    },

    async expire(key, ttlMs) {
      const expiresAt = now() + checkTtlMs(ttlMs, 'ttlMs');
      const entry = live(key);
      if (entry === undefined) return false;
      entry.expiresAt = expiresAt;
      return true;
    },

    async delete(key) {
      live(key);
      entries.delete(key);
    },

    async incr(key, opts) {
      const expiresAt = expiry(opts);
      const entry = stringEntry(key);
      if (entry === undefined) {
        entries.set(key, { kind: 'string', value: '1', expiresAt });
        return 1;
      }
      if (!/^-?\d+$/.test(entry.value) || !Number.isSafeInteger(Number(entry.value))) {
        throw new Error('ERR value is not an integer or out of range');
      }
      const next = Number(entry.value) + 1;
      entry.value = String(next);
      return next;
    },

    async decrement(key) {
      const entry = stringEntry(key);
      if (entry === undefined) return null;
      if (!/^-?\d+$/.test(entry.value) || !Number.isSafeInteger(Number(entry.value))) {
        throw new Error('ERR value is not an integer or out of range');
      }
      const value = Number(entry.value);
      if (value <= 0) return value;
      entry.value = String(value - 1);
      return value - 1;
    },

    async raiseTo(key, atLeast, opts) {
      checkPositiveInteger(atLeast, 'atLeast');
      const expiresAt = expiry(opts);
      const entry = stringEntry(key);
      if (entry === undefined) {
        entries.set(key, { kind: 'string', value: String(atLeast), expiresAt });
        return atLeast;
      }
      if (!/^-?\d+$/.test(entry.value) || !Number.isSafeInteger(Number(entry.value))) {
        throw new Error('ERR value is not an integer or out of range');
      }
      const value = Math.max(Number(entry.value), atLeast);
      entry.value = String(value);
      return value;
    },

    async charge(budget, charge, limits, nowMs) {
      open();
      return budgets.charge(budget, charge, limits, nowMs);
    },

    async release(budget, member) {
      open();
      budgets.release(budget, member);
    },

    async takeToken(key, rate, nowMs) {
      const answer = lease(key, rate, ONE_TOKEN, nowMs);
      return { allowed: answer.granted > 0, retryAfterMs: answer.retryAfterMs };
    },

    async leaseTokens(key, rate, tokens, nowMs) {
      return lease(key, rate, tokens, nowMs);
    },

    async ttlMs(key) {
      const entry = live(key);
      if (entry?.expiresAt == null) return null;
      return entry.expiresAt - now();
    },

    async hashGet(key, field) {
      return hashEntry(key)?.fields.get(field) ?? null;
    },

    async hashSet(key, field, value, opts) {
      const extend = opts?.extendTtlMs;
      const until = extend === undefined ? null : now() + checkTtlMs(extend, 'extendTtlMs');
      const max = opts?.maxFields === undefined ? undefined : checkPositiveInteger(opts.maxFields, 'maxFields');
      const entry = hashEntry(key);
      if (entry === undefined) {
        entries.set(key, { kind: 'hash', fields: new Map([[field, value]]), expiresAt: until });
        return true;
      }
      if (max !== undefined && entry.fields.size >= max && !entry.fields.has(field)) return false;
      entry.fields.set(field, value);
      // Raise a TTL, never lower one, and leave a hash without TTL without (as redis.ts does).
      if (until !== null && entry.expiresAt !== null && entry.expiresAt < until) entry.expiresAt = until;
      return true;
    },

    async hashSetIfAbsent(key, field, value) {
      const entry = hashEntry(key);
      if (entry === undefined) {
        entries.set(key, { kind: 'hash', fields: new Map([[field, value]]), expiresAt: null });
        return true;
      }
      if (entry.fields.has(field)) return false;
      entry.fields.set(field, value);
      return true;
    },

    async time() {
      return now();
    },

    async hashDelete(key, ...fields) {
      const entry = hashEntry(key);
      if (entry === undefined) return;
      for (const field of fields) entry.fields.delete(field);
      if (entry.fields.size === 0) entries.delete(key);
    },

    async hashGetAll(key) {
      return Object.fromEntries(hashEntry(key)?.fields ?? []);
    },

    async hashLength(key) {
      return hashEntry(key)?.fields.size ?? 0;
    },

    async publish(channel, message) {
      open();
      // Snapshot now, deliver later: like Redis, handlers never run inside publish().
      const handlers = [...(channels.get(channel) ?? [])];
      if (handlers.length === 0) return;
      setImmediate(function deliverAll() {
        // Redis delivers nothing after UNSUBSCRIBE or QUIT: neither do we.
        const live = channels.get(channel);
        for (const handler of handlers) if (!closed && live?.has(handler) === true) deliver(handler, message);
      });
    },

    async subscribe(channel, handler, watch) {
      open();
      // Wrap so that the same function subscribed twice is two subscriptions.
      const own: Handler = (message) => handler(message);
      let handlers = channels.get(channel);
      if (handlers === undefined) channels.set(channel, (handlers = new Set()));
      handlers.add(own);
      // One process: nothing can be missed, so live at once and never lost.
      if (watch !== undefined) deliver(() => watch.onLive(), '');
      return async function unsubscribe() {
        const current = channels.get(channel);
        current?.delete(own);
        if (current?.size === 0) channels.delete(channel);
      };
    },

    async ping() {
      open();
    },

    connection: () => ({ connected: !closed, revived: 0 }),

    async close() {
      closed = true;
      clearInterval(sweep);
      entries.clear();
      channels.clear();
      budgets.clear();
    },
  };
}

function wrongType(): Error {
  return new Error('WRONGTYPE Operation against a key holding the wrong kind of value');
}

/**
 * The state backend contract: the small key/value, hash and pub/sub surface that replicas
 * share (login-failure counters, token revocation, cache invalidation, IdP sessions).
 * Two implementations: ./memory.ts (one process) and ./redis.ts (shared by replicas).
 * docs/state.md records the decisions (key prefix, fail fast, fallback contract).
 *
 * Keys and channels are given WITHOUT the `svc:` prefix; the Redis backend adds it.
 * A string key and a hash key are different kinds: using a string operation on a hash key
 * (or the reverse) is a programming error and rejects with a plain Error (Redis WRONGTYPE).
 * Every method rejects with StateUnavailable when the backend cannot be reached; callers
 * that must keep working (login throttling) catch it and fall back to memory.
 */
import type { Logger } from 'pino';
import type { LeaseAnswer, TokenAnswer, TokenLease, TokenRate } from './token-bucket.js';

/** Every Redis key and pub/sub channel starts with this. */
export const KEY_PREFIX = 'svc:';

/**
 * The key of a mark kept beside `owner` (setIfAbsentFor's `key`): `<name>{svc:<owner>}`. A Redis
 * Cluster puts a key in the slot of its hash tag, the text between its first `{` and the next
 * `}`. The tag here is the owner's whole key as Redis stores it (prefix included) and the owner
 * has no brace, so its slot is that of the same text: mark and owner share a slot, and
 * setIfAbsentFor's one script reads both on every topology. An owner with a brace would take its
 * slot from a tag of its own: refused. The owner keeps its name; only marks carry the tag.
 */
export function markKeyFor(owner: string, name: string): string {
  if (/[{}]/.test(owner) || /[{}]/.test(name)) throw new RangeError(`a mark's owner and name hold no brace: ${JSON.stringify(owner)}`);
  return `${name}{${KEY_PREFIX}${owner}}`;
}

export interface MarkOptions {
  /**
   * The same mark's key under an earlier name, for the replicas and records of an earlier
   * release: present, it counts as the mark ('exists'); absent, this call wins only if it also
   * stores it (SET NX, with the mark's TTL) after the mark, so of this call and a replica that
   * marks only `formerKey`, exactly one wins. A failure between the two steps leaves the mark
   * stored and rejects: taken, never twice.
   */
  readonly formerKey?: string;
}

export interface TtlOptions {
  /** Time to live in milliseconds; must be a positive integer. Absent means no expiry. */
  readonly ttlMs?: number;
}

export interface HashSetOptions {
  /** Positive integer: the hash lives at least this long from now (see hashSet). */
  readonly extendTtlMs?: number;
  /** Positive integer: a hash with this many fields takes no new one (see hashSet). */
  readonly maxFields?: number;
}

/**
 * A write that must survive a failover. On Redis Sentinel and Cluster the call resolves only
 * once a replica has the write (WAIT 1), and rejects with StateUnavailable when none
 * acknowledged it in time (the write may still be on the primary: the caller must not report
 * success). Memory and one Redis have no failover to lose it in: a plain write.
 */
export interface WriteOptions {
  readonly replicated?: boolean;
}

/**
 * One charge against a byte budget (StateBackend.charge): `member` (what is kept, e.g. a
 * record's key) costs `bytes` to `source` (who made it) until `untilMs` (epoch ms, the
 * record's expiry), when the share comes back by itself if nobody released it before.
 */
export interface BudgetCharge {
  readonly member: string;
  readonly source: string;
  readonly bytes: number;
  readonly untilMs: number;
}

export interface BudgetLimits {
  /** Bytes one source may hold at once. */
  readonly perSourceBytes: number;
  /** Bytes every source together may hold at once. */
  readonly totalBytes: number;
}

/**
 * `admitted`: charged ('new'), or already charged and now following its new size and expiry
 * ('renewed': a record saved again is not bounded a second time). Refused: which bound, and the
 * bytes held under it before this charge (nothing was charged).
 */
export type BudgetAnswer =
  | { readonly admitted: true; readonly as: 'new' | 'renewed' }
  | { readonly admitted: false; readonly bound: 'source' | 'total'; readonly heldBytes: number };

export type StateKind = 'memory' | 'redis';

export interface StateConnection {
  /** The main connection is ready for commands now (memory: always). */
  readonly connected: boolean;
  /** How often a client that the Redis library had given up on was connected again (memory: 0). */
  readonly revived: number;
}

/** The logger the backends need: pino's, or anything with the same two methods. */
export type StateLog = Pick<Logger, 'info' | 'warn'>;

export interface StateBackend {
  readonly kind: StateKind;

  /** The string value, or null when the key is absent or expired. */
  get(key: string): Promise<string | null>;

  /** Stores the value, replacing any value and any TTL (no ttlMs: the key never expires). */
  set(key: string, value: string, opts?: TtlOptions & WriteOptions): Promise<void>;

  /** Stores the value only if the key is absent; true when this call stored it (SET NX). */
  setIfAbsent(key: string, value: string, opts?: TtlOptions): Promise<boolean>;

  /**
   * Stores the value only if the key is absent and `owner` exists, to expire when `owner`
   * expires (never, when `owner` has no TTL), in one atomic step: a mark that lives exactly as
   * long as what it marks (a code's "consumed"), in one round trip. 'set' when this call stored
   * it, 'exists' when the key was there (left as it is), 'no-owner' when `owner` is absent
   * (nothing stored). `key` must share `owner`'s Redis Cluster slot: name it with markKeyFor.
   */
  setIfAbsentFor(key: string, value: string, owner: string, opts?: MarkOptions): Promise<'set' | 'exists' | 'no-owner'>;

  /**
   * Reads and removes a string key in one atomic step (GETDEL): of any number of concurrent
   * calls, from any replica, exactly one gets the value and the others null. For single-use
   * values (authorization transactions, one-time codes). Null when absent or expired.
   */
  take(key: string, opts?: WriteOptions): Promise<string | null>;

  /**
   * Sets the TTL of an existing key of either kind, replacing any earlier TTL (PEXPIRE).
   * True when the key exists; an absent key is left absent (false).
   */
  expire(key: string, ttlMs: number): Promise<boolean>;

  /** Removes a key of either kind; removing an absent key is not an error. */
  delete(key: string, opts?: WriteOptions): Promise<void>;

  /**
   * Adds 1 atomically and returns the new value (an absent key counts as 0). The TTL is set
   * only when this call creates the key, so later increments do not extend the window.
   * Rejects with a plain Error when the value is not an integer.
   */
  incr(key: string, opts?: TtlOptions): Promise<number>;

  /**
   * Subtracts 1 atomically from a key holding an integer above 0 and returns the new value,
   * keeping its TTL. An absent key stays absent (null), and 0 or less is left as it is: a
   * count deleted meanwhile must not come back negative and without a TTL. Rejects with a
   * plain Error when the value is not an integer.
   */
  decrement(key: string): Promise<number | null>;

  /**
   * Makes the integer at `key` at least `atLeast` (a positive integer) atomically and returns
   * the value after: an absent key is created with the TTL of `opts` (none without ttlMs), a
   * smaller value is replaced keeping its TTL, a larger one is left alone. A count written
   * back after a failover may have lost it (session/throttle-held.ts): raising, unlike SET, never
   * lowers what other writers counted meanwhile. `replicated`: see WriteOptions. Rejects with
   * a plain Error when the value is not an integer.
   */
  raiseTo(key: string, atLeast: number, opts?: TtlOptions & WriteOptions): Promise<number>;

  /**
   * Charges `charge` to its source under the byte budget named `budget` (no brace), in one
   * atomic step and one round trip: first every charge whose `untilMs` is at or before `nowMs`
   * is given back (a bounded number per call), then a member already charged is renewed
   * (its bytes and expiry replaced, its source kept, no bound checked), and a new one is
   * charged only if its source stays within `perSourceBytes` and everyone within `totalBytes`.
   * Shared by every replica on Redis; the budget's keys share one Cluster slot.
   */
  charge(budget: string, charge: BudgetCharge, limits: BudgetLimits, nowMs: number): Promise<BudgetAnswer>;

  /** Gives a member's charge back at once (its record was used up or removed); absent: nothing. */
  release(budget: string, member: string): Promise<void>;

  /**
   * Takes one token from the bucket `key` (token-bucket.ts: a missing bucket is full) at
   * `nowMs`, in one atomic step and one round trip: of replicas taking at once, no two get the
   * same token. The bucket is forgotten once it would be full again. One key: any Cluster slot.
   */
  takeToken(key: string, rate: TokenRate, nowMs: number): Promise<TokenAnswer>;

  /**
   * takeToken for several tokens at once: `lease.share` of what the bucket holds (at least one,
   * at most `lease.most`) in the same atomic step and round trip, for a replica to spend one
   * per request without asking again (extensions/rate-limit.ts). `granted` 0: refused.
   */
  leaseTokens(key: string, rate: TokenRate, lease: TokenLease, nowMs: number): Promise<LeaseAnswer>;

  /** Milliseconds left before the key expires; null when absent OR when it has no TTL. */
  ttlMs(key: string): Promise<number | null>;

  /** One field of a hash, or null when the field or the hash is absent. */
  hashGet(key: string, field: string): Promise<string | null>;

  /**
   * Sets one field, creating the hash if needed, in one atomic step with its TTL rule:
   * without `extendTtlMs` the hash keeps the TTL it has (a new hash gets none); with it the
   * hash expires no sooner than that many ms from now (a shorter TTL is raised, a longer one
   * kept; a hash that already existed without a TTL keeps none). An index whose members each
   * live a while stays as long as its longest-lived member, and never lives forever.
   * With `maxFields`, a hash that already has that many fields and not this one is left as it
   * is and the answer is false (checked in the same atomic step); otherwise true.
   */
  hashSet(key: string, field: string, value: string, opts?: HashSetOptions & WriteOptions): Promise<boolean>;

  /**
   * Sets one field only if the hash lacks it (HSETNX), creating the hash if needed and leaving
   * its TTL as it is; true when this call stored it. Of replicas setting it at once, one wins.
   */
  hashSetIfAbsent(key: string, field: string, value: string): Promise<boolean>;

  /** Removes fields; removing the last field removes the hash. Absent fields are ignored. */
  hashDelete(key: string, ...fields: readonly string[]): Promise<void>;

  /** Every field of a hash; {} when the hash is absent. */
  hashGetAll(key: string): Promise<Record<string, string>>;

  /** The number of fields; 0 when the hash is absent. */
  hashLength(key: string): Promise<number>;

  /**
   * Sends a message to every subscriber of the channel, in this process and (Redis) in every
   * replica, including this instance's own subscribers. At most once: subscribers that are
   * disconnected at the time miss it, so caches invalidated this way also need a TTL.
   */
  publish(channel: string, message: string): Promise<void>;

  /**
   * Calls handler for every message on the channel, in order, always asynchronously (never
   * synchronously from publish(); it may run before or after publish() resolves).
   * Resolves once the subscription is active; the result unsubscribes this handler
   * (idempotent). The Redis backend resubscribes by itself after a reconnect.
   * A handler that throws is logged and does not affect other handlers.
   * `watch`, when given, is told when messages may be missed and when they are not any more
   * (see SubscriptionWatch): callers that keep a copy of shared state up to date by messages
   * use it to know whether that copy is complete.
   */
  subscribe(
    channel: string,
    handler: (message: string) => void,
    watch?: SubscriptionWatch,
  ): Promise<() => Promise<void>>;

  /**
   * The backend's clock in ms since the epoch (Redis TIME): one clock for every replica, so a
   * time written for all of them is not the writing replica's own. Memory: this process's.
   */
  time(): Promise<number>;

  /** Resolves when the backend answers; StateUnavailable otherwise. */
  ping(): Promise<void>;

  /** What /metrics shows of the connection, without asking the backend (no round trip). */
  connection(): StateConnection;

  /** Releases connections and timers; idempotent. Every later call rejects. */
  close(): Promise<void>;
}

/**
 * Whether a subscription receives every message published on its channel. Calls alternate,
 * starting with onLive; none after the subscription is released or the backend closed; a
 * callback that throws is logged. Memory: onLive before subscribe() resolves, never onLost.
 * Redis: onLive before subscribe() resolves when the connection is up then (otherwise as soon
 * as it is), onLost synchronously from the subscriber connection's 'close' event (Redis gone,
 * connection dropped, reconnecting), onLive again once the connection is back AND the channel
 * is subscribed again: ioredis sends the SUBSCRIBE before it reports 'ready', and a PING sent
 * after 'ready' on the same connection answers after that SUBSCRIBE was acknowledged.
 */
export interface SubscriptionWatch {
  /** Every message published from now on is delivered (until onLost). */
  onLive(): void;
  /** Messages published from now on may be missed (until onLive). */
  onLost(): void;
}

/**
 * The backend could not be reached or did not answer in time (connection refused, lost,
 * timed out, or closed). The message never contains a key, a value or a credential.
 */
export class StateUnavailable extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'StateUnavailable';
  }
}

/** The same check of a charge on both backends: a programming error, not a refusal. */
export function checkCharge(budget: string, charge: BudgetCharge, limits: BudgetLimits): void {
  if (budget === '' || /[{}]/.test(budget)) throw new RangeError(`a budget's name is not empty and holds no brace: ${JSON.stringify(budget)}`);
  if (charge.member === '' || charge.source === '' || charge.source.includes('\t')) throw new RangeError('a charge needs a member and a source without a tab');
  checkPositiveInteger(charge.bytes, 'bytes');
  checkPositiveInteger(charge.untilMs, 'untilMs');
  checkPositiveInteger(limits.perSourceBytes, 'perSourceBytes');
  checkPositiveInteger(limits.totalBytes, 'totalBytes');
}

/**
 * The primary answered and took the write, but no replica acknowledged it within the wait of a
 * `replicated` write (WAIT): a failover now could lose it. Not "unreachable": Redis answers.
 */
export class NotReplicated extends StateUnavailable {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'NotReplicated';
  }
}

/** Rejects a TTL that Redis would reject too, so both backends behave the same. */
export function checkTtl(opts: TtlOptions | undefined): number | undefined {
  const ttl = opts?.ttlMs;
  return ttl === undefined ? undefined : checkTtlMs(ttl, 'ttlMs');
}

/** The same rule for a TTL given on its own (expire) or under another name (extendTtlMs). */
export function checkTtlMs(ttl: number, name: string): number {
  return checkPositiveInteger(ttl, name);
}

export function checkPositiveInteger(value: number, name: string): number {
  if (!Number.isSafeInteger(value) || value <= 0) {
    throw new RangeError(`${name} must be a positive integer, got ${String(value)}`);
  }
  return value;
}

/**
 * The token bucket both state backends and the extension proxy's local buckets share: `burst`
 * tokens at most, `perSecond` coming back continuously, one taken per request (or a lease of
 * several, spent by one replica one per request). Pure: the
 * caller keeps the bucket and gives the time. The Redis backend runs the same arithmetic in
 * Lua (redis-token-bucket.ts); test/state/token-bucket-suite.ts holds both to it.
 */

export interface TokenRate {
  /** Tokens that come back per second (may be below 1: 0.5 is one request every 2 s). */
  readonly perSecond: number;
  /** Tokens a full bucket holds: requests allowed at once after a quiet spell. */
  readonly burst: number;
}

export interface TokenAnswer {
  readonly allowed: boolean;
  /** Refused: in how many ms one token is back (0 when allowed). */
  readonly retryAfterMs: number;
}

/** A bucket's state: the tokens it held at `atMs`. */
export interface Bucket {
  tokens: number;
  atMs: number;
}

/**
 * How many tokens one take may lease at once, for a replica to spend them without asking again
 * (extensions/rate-limit.ts): `share` of what the bucket holds, rounded down, at least 1 and at
 * most `most`. A bucket near empty so leases one token, exactly as a plain take.
 */
export interface TokenLease {
  /** 0 to 1: the part of the bucket's tokens one lease may take. */
  readonly share: number;
  /** A positive integer: the most tokens one lease takes. */
  readonly most: number;
}

export interface LeaseAnswer {
  /** Tokens taken from the bucket (0: refused). */
  readonly granted: number;
  /** Refused: in how many ms one token is back (0 when granted). */
  readonly retryAfterMs: number;
}

/** A plain take: one token. */
export const ONE_TOKEN: TokenLease = { share: 0, most: 1 };

/** Refills `bucket` (undefined: a full one) to `nowMs`, takes a token when one is there; returns the new state. */
export function takeToken(bucket: Bucket | undefined, rate: TokenRate, nowMs: number): { readonly bucket: Bucket; readonly answer: TokenAnswer } {
  const { bucket: next, answer } = leaseTokens(bucket, rate, nowMs, ONE_TOKEN);
  return { bucket: next, answer: { allowed: answer.granted > 0, retryAfterMs: answer.retryAfterMs } };
}

/** takeToken for a lease: refills, then takes `lease` of the tokens (at least one) when one is there. */
export function leaseTokens(bucket: Bucket | undefined, rate: TokenRate, nowMs: number, lease: TokenLease): { readonly bucket: Bucket; readonly answer: LeaseAnswer } {
  const perMs = rate.perSecond / 1000;
  // A clock behind the last call (another replica's) refills nothing rather than draining.
  const elapsed = bucket === undefined ? 0 : Math.max(0, nowMs - bucket.atMs);
  const tokens = bucket === undefined ? rate.burst : Math.min(rate.burst, bucket.tokens + elapsed * perMs);
  const atMs = bucket === undefined ? nowMs : Math.max(nowMs, bucket.atMs);
  if (tokens >= 1) {
    const granted = Math.min(lease.most, Math.max(1, Math.floor(tokens * lease.share)));
    return { bucket: { tokens: tokens - granted, atMs }, answer: { granted, retryAfterMs: 0 } };
  }
  return { bucket: { tokens, atMs }, answer: { granted: 0, retryAfterMs: Math.ceil((1 - tokens) / perMs) } };
}

/** How long until an untouched bucket is full again: its state may be forgotten after that. */
export function refillMs(bucket: Bucket, rate: TokenRate): number {
  return Math.ceil((rate.burst - bucket.tokens) / (rate.perSecond / 1000));
}

/** The same check of a lease on both backends: a programming error, not a refusal. */
export function checkLease(lease: TokenLease): void {
  if (!(lease.share >= 0 && lease.share <= 1)) throw new RangeError(`share must be between 0 and 1, got ${String(lease.share)}`);
  if (!Number.isSafeInteger(lease.most) || lease.most < 1) throw new RangeError(`most must be a positive integer, got ${String(lease.most)}`);
}

/** The same check of a rate on both backends: a programming error, not a refusal. */
export function checkRate(rate: TokenRate): void {
  if (!(rate.perSecond > 0) || !Number.isFinite(rate.perSecond)) throw new RangeError(`perSecond must be a positive number, got ${String(rate.perSecond)}`);
  if (!Number.isSafeInteger(rate.burst) || rate.burst < 1) throw new RangeError(`burst must be a positive integer, got ${String(rate.burst)}`);
}

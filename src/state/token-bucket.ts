/**
 * The token bucket both state backends and the extension proxy's local buckets share: `burst`
 * tokens at most, `perSecond` coming back continuously, one taken per request. Pure: the
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

/** Refills `bucket` (undefined: a full one) to `nowMs`, takes a token when one is there; returns the new state. */
export function takeToken(bucket: Bucket | undefined, rate: TokenRate, nowMs: number): { readonly bucket: Bucket; readonly answer: TokenAnswer } {
  const perMs = rate.perSecond / 1000;
  // A clock behind the last call (another replica's) refills nothing rather than draining.
  const elapsed = bucket === undefined ? 0 : Math.max(0, nowMs - bucket.atMs);
  const tokens = bucket === undefined ? rate.burst : Math.min(rate.burst, bucket.tokens + elapsed * perMs);
  const atMs = bucket === undefined ? nowMs : Math.max(nowMs, bucket.atMs);
  if (tokens >= 1) return { bucket: { tokens: tokens - 1, atMs }, answer: { allowed: true, retryAfterMs: 0 } };
  return { bucket: { tokens, atMs }, answer: { allowed: false, retryAfterMs: Math.ceil((1 - tokens) / perMs) } };
}

/** How long until an untouched bucket is full again: its state may be forgotten after that. */
export function refillMs(bucket: Bucket, rate: TokenRate): number {
  return Math.ceil((rate.burst - bucket.tokens) / (rate.perSecond / 1000));
}

/** The same check of a rate on both backends: a programming error, not a refusal. */
export function checkRate(rate: TokenRate): void {
  if (!(rate.perSecond > 0) || !Number.isFinite(rate.perSecond)) throw new RangeError(`perSecond must be a positive number, got ${String(rate.perSecond)}`);
  if (!Number.isSafeInteger(rate.burst) || rate.burst < 1) throw new RangeError(`burst must be a positive integer, got ${String(rate.burst)}`);
}

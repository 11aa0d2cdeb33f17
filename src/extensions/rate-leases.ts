/**
 * Tokens this replica took from a shared bucket (Redis) ahead of need, spent one per request
 * without a round trip (rate-limit.ts). A caller far from its limit thus costs one round trip per
 * lease instead of one per request; a caller near it leases one token at a time, which is
 * exactly the shared bucket's answer per request.
 *
 * How much a lease takes (leaseFor): a tenth of what the bucket holds (LEASE_SHARE), and at most
 * what the limit refills in LEASE_MS; a lease unspent after LEASE_MS is dropped. Both bound what a
 * lease can add to a strict shared bucket: tokens are taken from the shared bucket before they
 * are spent, so the replicas together never spend more than it gave, but a lease that lay unspent
 * while the bucket refilled to full is spent on top of that full bucket. That excess is at most
 * one lease per replica and caller: a tenth of the burst, and no more than a second of the rate.
 * Rejected: giving unspent tokens back (a second round trip, and a replica that dies never
 * gives back), and a lease without expiry (the excess would be a tenth of the burst at any
 * later time, not only within a second).
 *
 * A lease is kept with the limit it was taken under: a changed limit drops it. The leases are
 * bounded like the local buckets (the one idle longest dropped first); a dropped lease only
 * costs the tokens it held, never grants more.
 */
import type { TokenLease } from '../state/token-bucket.js';
import type { RateLimit } from './config.js';

/** The part of a shared bucket's tokens one lease takes. */
export const LEASE_SHARE = 0.1;
/** How long a lease may be spent; also the most a lease takes, in the limit's refill time. */
export const LEASE_MS = 1_000;

/** What to ask the shared bucket for under `limit`. */
export function leaseFor(limit: RateLimit): TokenLease {
  return { share: LEASE_SHARE, most: Math.max(1, Math.floor((limit.requestsPerSecond * LEASE_MS) / 1000)) };
}

interface Lease {
  tokens: number;
  readonly untilMs: number;
  readonly limit: RateLimit;
}

export class RateLeases {
  private readonly leases = new Map<string, Lease>();

  constructor(private readonly max: number) {}

  /** Spends one leased token for `key` under `limit`; false when none is left, it expired, or the limit changed. */
  spend(key: string, limit: RateLimit, nowMs: number): boolean {
    const lease = this.leases.get(key);
    if (lease === undefined) return false;
    if (lease.tokens < 1 || nowMs >= lease.untilMs || !sameLimit(lease.limit, limit)) {
      this.leases.delete(key);
      return false;
    }
    lease.tokens--;
    if (lease.tokens < 1) this.leases.delete(key);
    else {
      // Kept as the most recently used (a Map keeps insertion order).
      this.leases.delete(key);
      this.leases.set(key, lease);
    }
    return true;
  }

  /** Keeps `tokens` taken from the shared bucket for `key`, to spend until LEASE_MS from now. */
  add(key: string, limit: RateLimit, tokens: number, nowMs: number): void {
    if (tokens < 1) return;
    // Anything still held is dropped, not extended: a token lives LEASE_MS from when it was taken.
    this.leases.delete(key);
    this.leases.set(key, { tokens, untilMs: nowMs + LEASE_MS, limit });
    if (this.leases.size > this.max) {
      const oldest = this.leases.keys().next().value;
      if (oldest !== undefined) this.leases.delete(oldest);
    }
  }

  get size(): number {
    return this.leases.size;
  }
}

function sameLimit(a: RateLimit, b: RateLimit): boolean {
  return a === b || (a.requestsPerSecond === b.requestsPerSecond && a.burst === b.burst);
}

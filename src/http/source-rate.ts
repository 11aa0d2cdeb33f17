/**
 * A request rate per source address (client-address.ts's sourceOf), kept in this replica's
 * memory: for unauthenticated endpoints that cost something to answer (a signature check, a
 * key fetch). Each source has its own bucket, so one source spending its own cannot refuse
 * anyone else; at most `MAX_SOURCES` buckets are kept (bounded-cache.ts), so distinct sources
 * cannot grow memory either.
 */
import { BoundedCache } from '../lib/bounded-cache.js';
import { takeToken, type Bucket, type TokenRate } from '../state/token-bucket.js';

const MAX_SOURCES = 10_000;

export interface SourceRate {
  /** Takes one request from the source's bucket: 0 when allowed, else the ms until one is back. */
  take(source: string): number;
}

export function createSourceRate(rate: TokenRate, now: () => number): SourceRate {
  const buckets = new BoundedCache<string, Bucket>(MAX_SOURCES);
  return {
    take(source) {
      const { bucket, answer } = takeToken(buckets.get(source), rate, now());
      buckets.set(source, bucket);
      return answer.retryAfterMs;
    },
  };
}

/**
 * Bounds the records anonymous requests make the provider keep (interactions of authorization
 * requests, device codes of device authorization requests): at most `perClient` new ones per
 * client and `total` in all within `windowMs` (the records' lifetime), so they can never hold
 * more than that many at once, on memory or on Redis, whichever replica made them.
 *
 * Counted in the state backend in BUCKETS buckets per window (`idp:pending:<kind>:<bucket>`,
 * and `...:<bucket>:<client>`), each with the window as TTL: a window's count is the sum of its
 * buckets. A record is counted before it is written (INCR, then the sums), and a refused one
 * hands its count back: parallel requests on several replicas cannot pass the bound together.
 * Client ids are the provider's registered clients (it refuses others before storing anything),
 * so the per-client keys are bounded too.
 */
import type { StateBackend } from '../../state/state.js';

export const BUCKETS = 5;

export interface PendingLimits {
  readonly windowMs: number;
  readonly perClient: number;
  readonly total: number;
}

export interface PendingBound {
  /** Counts one new record of the client; false (uncounted) past a bound. */
  admit(clientId: string): Promise<boolean>;
}

export function createPendingBound(state: StateBackend, kind: string, limits: PendingLimits, now: () => number): PendingBound {
  const bucketMs = Math.ceil(limits.windowMs / BUCKETS);
  const ttl = { ttlMs: limits.windowMs + bucketMs };
  const totalKey = (bucket: number): string => `idp:pending:${kind}:${bucket}`;
  const clientKey = (bucket: number, clientId: string): string => `idp:pending:${kind}:${bucket}:${clientId}`;

  async function sum(keyOf: (bucket: number) => string, current: number, counted: number): Promise<number> {
    const earlier = await Promise.all(Array.from({ length: BUCKETS }, (_, i) => state.get(keyOf(current - 1 - i))));
    return counted + earlier.reduce((n, v) => n + (Number(v ?? 0) || 0), 0);
  }

  return {
    async admit(clientId) {
      const bucket = Math.floor(now() / bucketMs);
      const [total, client] = await Promise.all([state.incr(totalKey(bucket), ttl), state.incr(clientKey(bucket, clientId), ttl)]);
      const [inWindow, ofClient] = await Promise.all([sum(totalKey, bucket, total), sum((b) => clientKey(b, clientId), bucket, client)]);
      if (inWindow <= limits.total && ofClient <= limits.perClient) return true;
      await Promise.all([state.decrement(totalKey(bucket)), state.decrement(clientKey(bucket, clientId))]);
      return false;
    },
  };
}

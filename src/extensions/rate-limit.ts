/**
 * `backend.rateLimit`: a token bucket per caller and extension (../state/token-bucket.ts). The
 * caller is its person (../person.ts: the issuer that vouches and the subject there), so every
 * token of one person (a session, an API token, another login) spends one bucket, and an SSO
 * user whose `sub` is `alice` never spends the local account alice's (issue 51); a request without a valid caller counts
 * against its source address (client-address.ts), taken before the rights are asked, so
 * anonymous floods are bounded per address and never spend a signed-in caller's tokens.
 *
 * With a shared state backend (Redis) the buckets are there, so replicas share one limit; a
 * replica takes a lease of a caller's tokens in one Lua call and spends it without asking again
 * (rate-leases.ts), so a caller far from its limit costs about one round trip a second and a
 * caller near it one per request, as a plain take. Requests of one caller arriving while its
 * lease is being asked for wait for that answer rather than each asking. While Redis is away, this replica's own buckets answer (the limit
 * then holds per replica), Redis is left alone for REDIS_RETRY_MS after a failure, and the
 * switch is logged once per outage and shown in /metrics. Rejected: failing closed (every
 * request of a limited extension refused while Redis is down) and failing wide open (no limit
 * at all): the first turns a state outage into an extension outage, the second lets a client
 * past the limit exactly when it hurts.
 *
 * The local buckets are bounded (MAX_CALLER_BUCKETS): the one idle longest is dropped first,
 * and a dropped bucket comes back full, which only ever grants a burst again, never more.
 */
import { createHash } from 'node:crypto';
import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';
import { RateLimited } from '../errors.js';
import { LocalCounter } from '../lib/local-metrics.js';
import { personKey, personOf } from '../person.js';
import type { Principal } from '../principal.js';
import { StateUnavailable, type StateBackend } from '../state/state.js';
import { takeToken, type Bucket, type LeaseAnswer, type TokenAnswer } from '../state/token-bucket.js';
import type { ExtensionConfig, RateLimit } from './config.js';
import { leaseFor, RateLeases } from './rate-leases.js';

export const MAX_CALLER_BUCKETS = 100_000;
/** After a failed Redis call, how long this replica's buckets answer before Redis is asked again. */
export const REDIS_RETRY_MS = 1_000;

export interface RateLimiterDeps {
  readonly state: Pick<StateBackend, 'kind' | 'leaseTokens'>;
  readonly now: () => number;
  readonly log: Pick<Logger, 'warn' | 'info'>;
  readonly registry: Registry;
  readonly maxBuckets?: number;
}

export interface RateLimiter {
  /**
   * Takes a token for this caller from the extension's bucket. Undefined when the request may
   * go on now (no limit, or a local bucket said yes); a promise when the shared bucket is asked.
   * Throws (or rejects with) RateLimited when the bucket is empty.
   */
  take(extension: ExtensionConfig, caller: Principal | undefined, address: () => string): Promise<void> | undefined;
  /** How many buckets this replica keeps (at most maxBuckets). */
  localBuckets(): number;
  /** How many leases of shared buckets this replica holds (at most maxBuckets). */
  leases(): number;
}

export function createRateLimiter(deps: RateLimiterDeps): RateLimiter {
  const max = deps.maxBuckets ?? MAX_CALLER_BUCKETS;
  const local = new LocalBuckets(max);
  const leases = new RateLeases(max);
  /** The lease being asked for, per bucket: later requests of the caller wait for it. */
  const asking = new Map<string, Promise<LeaseAnswer>>();
  const refused = new LocalCounter({
    name: 'svc_extension_rate_limited_total',
    help: 'Extension requests refused with 429 because the caller reached the extension\'s rate limit',
    labelNames: ['extension'],
    registers: [deps.registry],
  });
  const fallback = new Gauge({
    name: 'svc_extension_rate_limit_fallback',
    help: '1 while extension rate limits are counted in this replica\'s memory because the state backend is unreachable',
    registers: [deps.registry],
  });
  fallback.set(0);
  const shared = deps.state.kind === 'redis' ? deps.state : undefined;
  let downUntil = 0;
  let degraded = false;

  function refuse(extension: ExtensionConfig, retryAfterMs: number): never {
    refused.labels(extension.name).inc();
    const limit = extension.rateLimit ?? { requestsPerSecond: 0, burst: 0 };
    throw new RateLimited(extension.name, Math.max(1, Math.ceil(retryAfterMs / 1000)), limit);
  }

  function takeLocally(extension: ExtensionConfig, key: string): void {
    const found: TokenAnswer = local.take(key, extension.rateLimit!, deps.now());
    if (!found.allowed) refuse(extension, found.retryAfterMs);
  }

  function fellBack(err: unknown): void {
    downUntil = deps.now() + REDIS_RETRY_MS;
    if (degraded) return;
    degraded = true;
    fallback.set(1);
    deps.log.warn({ err }, 'extension rate limits: state backend unreachable; each replica counts in its own memory until it is back');
  }

  function recovered(): void {
    if (!degraded) return;
    degraded = false;
    fallback.set(0);
    deps.log.info('extension rate limits: state backend reachable again; buckets are shared again');
  }

  /** One lease request per bucket at a time; what it grants goes to the leases. */
  function askShared(state: NonNullable<typeof shared>, key: string, limit: RateLimit): Promise<LeaseAnswer> {
    let answer = asking.get(key);
    if (answer === undefined) {
      answer = state.leaseTokens(key, { perSecond: limit.requestsPerSecond, burst: limit.burst }, leaseFor(limit), deps.now()).then((found) => {
        recovered();
        leases.add(key, limit, found.granted, deps.now());
        return found;
      });
      asking.set(key, answer);
      const asked = answer;
      void asked.then(() => asking.delete(key), () => asking.delete(key));
    }
    return answer;
  }

  /** From the lease, or (none left) from the shared bucket; refused when the bucket is empty. */
  function takeShared(state: NonNullable<typeof shared>, extension: ExtensionConfig, limit: RateLimit, key: string): Promise<void> | undefined {
    if (leases.spend(key, limit, deps.now())) return undefined;
    return askShared(state, key, limit).then(
      (found) => {
        if (found.granted === 0) refuse(extension, found.retryAfterMs);
        // The lease may have gone to requests that waited with this one: then ask again.
        if (!leases.spend(key, limit, deps.now())) return takeShared(state, extension, limit, key);
        return undefined;
      },
      (err: unknown) => {
        if (!(err instanceof StateUnavailable)) throw err;
        fellBack(err);
        takeLocally(extension, key);
      },
    );
  }

  return {
    take(extension, caller, address) {
      const limit = extension.rateLimit;
      if (limit === undefined) return undefined;
      const key = bucketKey(extension.name, caller === undefined ? `addr:${address()}` : `person:${personKey(personOf(caller))}`);
      if (shared === undefined || deps.now() < downUntil) {
        takeLocally(extension, key);
        return undefined;
      }
      return takeShared(shared, extension, limit, key);
    },
    localBuckets: () => local.size,
    leases: () => leases.size,
  };
}

/**
 * `ratelimit:<extension>:<hash of the caller>`, the caller `person:<person key>` or
 * `addr:<address>` (the two never meet: a person key holds no bare `:` in its parts): bounded length whatever an SSO `sub` holds, and
 * no brace (a Redis Cluster hash tag) from a caller's name.
 */
function bucketKey(extension: string, caller: string): string {
  return `ratelimit:${extension}:${createHash('sha256').update(caller).digest('base64url')}`;
}

/** This replica's buckets, the one idle longest dropped first past the bound (a Map keeps insertion order). */
class LocalBuckets {
  private readonly buckets = new Map<string, Bucket>();

  constructor(private readonly max: number) {}

  take(key: string, rate: { readonly requestsPerSecond: number; readonly burst: number }, nowMs: number): TokenAnswer {
    const saved = this.buckets.get(key);
    if (saved !== undefined) this.buckets.delete(key);
    const { bucket, answer } = takeToken(saved, { perSecond: rate.requestsPerSecond, burst: rate.burst }, nowMs);
    this.buckets.set(key, bucket);
    if (this.buckets.size > this.max) {
      const oldest = this.buckets.keys().next().value;
      if (oldest !== undefined) this.buckets.delete(oldest);
    }
    return answer;
  }

  get size(): number {
    return this.buckets.size;
  }
}

/**
 * How long a cache keyed by tokens keeps one nobody presents any more (a session ended, a token
 * expired): a token presented again after that costs one signature check.
 */
export const UNUSED_TOKEN_MS = 10 * 60_000;

export interface CacheBounds<K> {
  readonly weight?: WeightBound<K>;
  readonly idle?: IdleBound;
}

export interface WeightBound<K> {
  /** The most the entries may weigh together (for instance bytes). */
  readonly maxWeight: number;
  /** The weight of one entry, from its key. */
  readonly weigh: (key: K) => number;
}

export interface IdleBound {
  /** How long an entry may go unread and unwritten before the cache may drop it. */
  readonly maxIdleMs: number;
  readonly now: () => number;
}

/**
 * A Map with a size bound that keeps what is used: two generations, as quick-lru does. Reads
 * hit the young generation with one Map look-up (the token and decision caches are read on every
 * proxied request, and an exact LRU's delete + set per hit was 2 % of the proxy's CPU); an entry
 * found in the old generation moves to the young one. When the young generation is full it
 * becomes the old one and the previous old one is dropped, so at most 2 x half the bound is held
 * and an entry used since the last turn-over always survives it. Used for compiled globs,
 * decisions and verified tokens: all must stay bounded whatever the policy or the request mix,
 * so that a client sending distinct values cannot grow memory without limit.
 *
 * A count of entries alone does not bound memory when a client chooses the keys' length (the
 * decision cache once held 325 MB in 20,000 entries of 16 KB keys): `maxWeight` with `weigh`
 * also turns the young generation over once its entries weigh half the bound, so at most
 * `maxWeight` (plus one entry) is held, whatever the mix of long and short keys.
 *
 * A bound of entries is reached only when enough distinct keys arrive, and until then an entry
 * nobody reads again (a token whose session ended) is held as long as the process lives. With
 * `idle`, the young generation also turns over once it is `maxIdleMs / 2` old: an entry is
 * dropped at the second turn-over after its last use, so while entries keep being added a cache
 * keyed by tokens holds about what was used in the last `maxIdleMs`, not its whole bound.
 */
export class BoundedCache<K, V> {
  private young = new Map<K, V>();
  private old = new Map<K, V>();
  private youngWeight = 0;
  private oldWeight = 0;
  /** When the young generation began, for the idle bound. */
  private youngSince: number;
  private readonly generationSize: number;
  private readonly generationWeight: number;
  private readonly generationAge: number;
  /** A bound of 1 holds one generation of one entry. */
  private readonly keepsOld: boolean;

  constructor(
    readonly maxEntries: number,
    private readonly bounds: CacheBounds<K> = {},
  ) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) {
      throw new RangeError(`maxEntries must be a positive integer, got ${maxEntries}`);
    }
    const { weight, idle } = bounds;
    if (weight !== undefined && !(weight.maxWeight > 0)) throw new RangeError(`maxWeight must be positive, got ${weight.maxWeight}`);
    if (idle !== undefined && !(idle.maxIdleMs > 0)) throw new RangeError(`maxIdleMs must be positive, got ${idle.maxIdleMs}`);
    this.generationSize = Math.max(1, Math.floor(maxEntries / 2));
    this.generationWeight = weight === undefined ? Infinity : weight.maxWeight / 2;
    this.generationAge = idle === undefined ? Infinity : idle.maxIdleMs / 2;
    this.youngSince = idle?.now() ?? 0;
    this.keepsOld = maxEntries >= 2;
  }

  get(key: K): V | undefined {
    const value = this.young.get(key);
    if (value !== undefined) return value;
    const aged = this.old.get(key);
    if (aged === undefined) return undefined;
    this.old.delete(key);
    this.admit(key, aged);
    return aged;
  }

  set(key: K, value: V): void {
    if (this.young.has(key)) {
      this.young.set(key, value);
      return;
    }
    this.old.delete(key);
    this.admit(key, value);
  }

  get size(): number {
    return this.young.size + this.old.size;
  }

  /** What the entries weigh together (an upper bound: an entry moved up from the old generation counts twice). */
  get weight(): number {
    return this.youngWeight + this.oldWeight;
  }

  private admit(key: K, value: V): void {
    const weight = this.bounds.weight?.weigh(key) ?? 0;
    const now = this.bounds.idle?.now() ?? 0;
    const full = this.young.size >= this.generationSize || (this.young.size > 0 && this.youngWeight + weight > this.generationWeight);
    if (full || now - this.youngSince >= this.generationAge) this.turnOver(now);
    this.young.set(key, value);
    this.youngWeight += weight;
  }

  /**
   * The young generation becomes the old one and the old one is dropped. Never the young one:
   * it may hold an entry read a moment ago, since a read there leaves no trace.
   */
  private turnOver(now: number): void {
    this.old = this.keepsOld ? this.young : new Map();
    this.oldWeight = this.keepsOld ? this.youngWeight : 0;
    this.young = new Map();
    this.youngWeight = 0;
    this.youngSince = now;
  }
}

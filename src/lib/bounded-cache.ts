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
 */
export interface WeightBound<K> {
  /** The most the entries may weigh together (for instance bytes). */
  readonly maxWeight: number;
  /** The weight of one entry, from its key. */
  readonly weigh: (key: K) => number;
}

export class BoundedCache<K, V> {
  private young = new Map<K, V>();
  private old = new Map<K, V>();
  private youngWeight = 0;
  private oldWeight = 0;
  private readonly generationSize: number;
  private readonly generationWeight: number;
  /** A bound of 1 holds one generation of one entry. */
  private readonly keepsOld: boolean;

  constructor(
    readonly maxEntries: number,
    private readonly bound?: WeightBound<K>,
  ) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) {
      throw new RangeError(`maxEntries must be a positive integer, got ${maxEntries}`);
    }
    if (bound !== undefined && !(bound.maxWeight > 0)) throw new RangeError(`maxWeight must be positive, got ${bound.maxWeight}`);
    this.generationSize = Math.max(1, Math.floor(maxEntries / 2));
    this.generationWeight = bound === undefined ? Infinity : bound.maxWeight / 2;
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
    const weight = this.bound?.weigh(key) ?? 0;
    if (this.young.size >= this.generationSize || (this.young.size > 0 && this.youngWeight + weight > this.generationWeight)) {
      this.old = this.keepsOld ? this.young : new Map();
      this.oldWeight = this.keepsOld ? this.youngWeight : 0;
      this.young = new Map();
      this.youngWeight = 0;
    }
    this.young.set(key, value);
    this.youngWeight += weight;
  }
}

/**
 * A Map with a size bound that keeps what is used: two generations, as quick-lru does. Reads
 * hit the young generation with one Map look-up (the token and decision caches are read on every
 * proxied request, and an exact LRU's delete + set per hit was 2 % of the proxy's CPU); an entry
 * found in the old generation moves to the young one. When the young generation is full it
 * becomes the old one and the previous old one is dropped, so at most 2 x half the bound is held
 * and an entry used since the last turn-over always survives it. Used for compiled globs,
 * decisions and verified tokens: all must stay bounded whatever the policy or the request mix,
 * so that a client sending distinct values cannot grow memory without limit.
 */
export class BoundedCache<K, V> {
  private young = new Map<K, V>();
  private old = new Map<K, V>();
  private readonly generationSize: number;
  /** A bound of 1 holds one generation of one entry. */
  private readonly keepsOld: boolean;

  constructor(readonly maxEntries: number) {
    if (!Number.isInteger(maxEntries) || maxEntries < 1) {
      throw new RangeError(`maxEntries must be a positive integer, got ${maxEntries}`);
    }
    this.generationSize = Math.max(1, Math.floor(maxEntries / 2));
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

  private admit(key: K, value: V): void {
    if (this.young.size >= this.generationSize) {
      this.old = this.keepsOld ? this.young : new Map();
      this.young = new Map();
    }
    this.young.set(key, value);
  }
}

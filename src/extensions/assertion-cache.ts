/**
 * Signed assertions kept for reuse (identity-assertion.ts), bounded in memory: by count and by
 * bytes (an assertion carries its caller's groups, so sizes vary), the oldest entry dropped
 * first. Only callers that passed authentication and the rights check reach it; one caller with
 * many tokens can push others out, which costs them a signature, never a wrong identity: a
 * miss only signs again.
 */

/** Sizes as JavaScript holds them: two bytes a UTF-16 unit, plus a fixed cost per entry. */
const ENTRY_OVERHEAD_BYTES = 96;

export const DEFAULT_ASSERTION_CACHE_ENTRIES = 20_000;
export const DEFAULT_ASSERTION_CACHE_BYTES = 16 * 1024 * 1024;

export interface CachedAssertion {
  readonly token: string;
  /** When svc stops reusing it (epoch ms): before its expiry, so a backend always gets some life left. */
  readonly reuseUntil: number;
  /** The key and issuer it was signed for: a rotation or a changed url signs again. */
  readonly kid: string;
  readonly issuer: string;
}

export interface AssertionCacheLimits {
  readonly maxEntries: number;
  readonly maxBytes: number;
}

export class AssertionCache {
  private readonly entries = new Map<string, { readonly value: CachedAssertion; readonly bytes: number }>();
  private total = 0;

  constructor(private readonly limits: AssertionCacheLimits = { maxEntries: DEFAULT_ASSERTION_CACHE_ENTRIES, maxBytes: DEFAULT_ASSERTION_CACHE_BYTES }) {
    if (!(limits.maxEntries >= 1) || !(limits.maxBytes >= 1)) throw new RangeError(`assertion cache: maxEntries (${String(limits.maxEntries)}) and maxBytes (${String(limits.maxBytes)}) must be at least 1`);
  }

  get size(): number {
    return this.entries.size;
  }

  get bytes(): number {
    return this.total;
  }

  get(key: string): CachedAssertion | undefined {
    return this.entries.get(key)?.value;
  }

  /** Stores `value`, then drops the oldest entries until both bounds hold (a value larger than maxBytes is not kept). */
  set(key: string, value: CachedAssertion): void {
    this.delete(key);
    const bytes = 2 * (key.length + value.token.length + value.kid.length + value.issuer.length) + ENTRY_OVERHEAD_BYTES;
    if (bytes > this.limits.maxBytes) return;
    this.entries.set(key, { value, bytes });
    this.total += bytes;
    for (const oldest of this.entries.keys()) {
      if (this.entries.size <= this.limits.maxEntries && this.total <= this.limits.maxBytes) break;
      this.delete(oldest);
    }
  }

  delete(key: string): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    this.total -= entry.bytes;
  }
}

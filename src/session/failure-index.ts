/**
 * The bounded "cache" of names with counted failures (SVC_SESSION_MAX_CACHE_SIZE): a hash
 * `login-failures-index`, name -> `<first failure (ms)>:<failures>` (entries written before
 * the count was kept hold the time alone and count as 1 failure). It bounds how many names an
 * attacker can make the backend hold counts for. When it is full, making room evicts a name's
 * count, so which name goes is a security choice: never admin, never the name being counted,
 * never a locked name (flooding junk names must neither reset admin's count nor lift a
 * lockout), and otherwise the one with the FEWEST failures, the newest among ties. Evicting the
 * oldest, as before, let a stream of junk names (one failure each) flush a guessed name's count
 * every SVC_SESSION_MAX_CACHE_SIZE requests: about 4 free guesses per 1,000 requests, forever.
 * Among ties the newest goes, not the oldest: junk names then evict each other, while a name
 * guessed once keeps its count until its window ends (oldest-first would flush it after one
 * cache's worth of junk). Evicting a name with k failures now takes a cache full of names with
 * at least k failures each, made within one window.
 */
import { ADMIN } from '../accounts/config.js';
import type { StateBackend } from '../state/state.js';
import type { LoginLimits } from './limits.js';
import { COUNT_PREFIX, INDEX_KEY, LOCK_PREFIX } from './throttle-keys.js';

/** Eviction reads the locks of this many candidates at a time (one pipelined round trip). */
const EVICTION_BATCH = 16;

export interface FailureIndex {
  /**
   * Lists the name with the time of its first failure and its failures so far (`attempt`, the
   * number of the failed attempt), making room if full.
   */
  track(state: StateBackend, username: string, attempt: number): Promise<void>;
  forget(state: StateBackend, username: string): Promise<void>;
}

export interface FailureIndexDeps {
  readonly limits: Pick<LoginLimits, 'maxCacheSize' | 'windowSeconds'>;
  readonly now: () => number;
}

export function createFailureIndex({ limits, now }: FailureIndexDeps): FailureIndex {
  const windowMs = limits.windowSeconds * 1000;

  /**
   * Makes room for `current`: first forgets names whose count has expired, then, if still full,
   * the oldest entry that is neither admin, nor `current`, nor locked. When no entry qualifies,
   * nothing is evicted and the cache grows by one rather than not counting.
   */
  async function evictOne(state: StateBackend, current: string): Promise<void> {
    const entries = Object.entries(await state.hashGetAll(INDEX_KEY)).map(([name, value]) => ({ name, ...readEntry(value) }));
    const stale = windowMs > 0 ? entries.filter((e) => !(now() - e.at < windowMs)) : [];
    if (stale.length > 0) await state.hashDelete(INDEX_KEY, ...stale.map((e) => e.name));
    if (entries.length - stale.length < limits.maxCacheSize) return;
    const candidates = entries
      .filter((e) => e.name !== ADMIN && e.name !== current && !stale.includes(e))
      .sort((a, b) => a.failures - b.failures || b.at - a.at)
      .map((e) => e.name);
    const victim = await firstUnlocked(state, candidates);
    if (victim === undefined) return;
    // The count only, never the lock: a name locked since the look-up keeps its lockout.
    await Promise.all([state.delete(COUNT_PREFIX + victim), state.hashDelete(INDEX_KEY, victim)]);
  }

  return {
    async track(state, username, attempt) {
      const listed = await state.hashGet(INDEX_KEY, username);
      if (listed !== null) {
        const entry = readEntry(listed);
        // Not atomic across replicas: a lost update only understates a count by one, for eviction.
        if (attempt > entry.failures) await state.hashSet(INDEX_KEY, username, `${entry.at}:${attempt}`);
        return;
      }
      if ((await state.hashLength(INDEX_KEY)) >= limits.maxCacheSize) await evictOne(state, username);
      await state.hashSet(INDEX_KEY, username, `${now()}:${attempt}`);
    },
    forget: (state, username) => state.hashDelete(INDEX_KEY, username),
  };
}

/** `<ms>:<failures>`, or `<ms>` alone as written by earlier versions (1 failure). */
function readEntry(value: string): { at: number; failures: number } {
  const [at = '', failures = '1'] = value.split(':');
  return { at: Number(at), failures: Number(failures) || 1 };
}

/** The first of `names` (in eviction order) that is not locked. */
async function firstUnlocked(state: StateBackend, names: readonly string[]): Promise<string | undefined> {
  for (let i = 0; i < names.length; i += EVICTION_BATCH) {
    const batch = names.slice(i, i + EVICTION_BATCH);
    const locks = await Promise.all(batch.map((name) => state.get(LOCK_PREFIX + name)));
    const free = batch.find((_, j) => locks[j] === null);
    if (free !== undefined) return free;
  }
  return undefined;
}

/**
 * Failed-login counts that no Redis replica has acknowledged yet (issue 56). Redis replicates
 * asynchronously, so a count the primary took is lost when that primary dies or is demoted
 * before a replica has it. After `SENTINEL FAILOVER` with one replica, the new primary has no
 * replica for seconds (docs/state.md, "Sentinel"); a `kill -9` of it then lost every failure it
 * had counted, and the lockout came that many tries late (bench/lockout-failover.ts).
 *
 * So every failed attempt's number is written back as a floor of the name's count (`raiseTo`,
 * `replicated`: WAIT 1 for a replica), in the background, so that no answer waits for it. Until
 * a replica acknowledges, this worker holds the number (fail closed):
 *   - it counts the name's next attempts from it (`floor`), and refuses the name as locked once
 *     the held number reaches the limit, whatever a primary that lost the count says;
 *   - it writes it back every RETRY_MS, to whichever primary serves then: a count a failover
 *     lost is raised again (`raiseTo` never lowers what others counted meanwhile), and the lock
 *     with it once the number reaches the limit.
 * A held number lasts as a count would: one failure window (`ttl`) from the name's last failure
 * held, after which it is dropped (and nothing written back re-creates a lock or a count beyond
 * it: each write carries the time left). A success on this worker forgets the name.
 * While no replica acknowledges, new failures are not written one by one, and each retry sends
 * one name first: WAIT blocks its connection for its whole timeout, so writes sent faster than
 * Redis can time them out would queue without bound. What this costs: one more command (and a
 * replica's acknowledgement, off the answer's path) per failed login.
 *
 * Rejected: waiting for the replica before answering a wrong password (500 ms per guess while
 * the primary has no replica, with the bcrypt slot held: right-password logins would then wait
 * for slots); WAIT on every admitted attempt (right-password logins too); falling back to memory
 * when no replica acknowledges (every worker would count apart for the seconds a new primary
 * has no replica, a wider window than the one closed).
 */
import type { Logger } from 'pino';
import { Gauge, type Registry } from 'prom-client';
import { StateUnavailable, type StateBackend, type TtlOptions } from '../state/state.js';
import { COUNT_PREFIX, LOCK_PREFIX } from './throttle-keys.js';

/** How often held counts are written back while no replica acknowledges them. */
export const RETRY_MS = 1_000;
/** Names written back together at a retry. */
const RETRY_BATCH = 64;

export interface HeldCounts {
  /** The highest failed attempt of the name this worker holds unacknowledged; 0 when none. */
  floor(username: string): number;
  /** The attempt failed on the backend: write its number back, held until a replica has it. */
  hold(username: string, attempt: number): void;
  /** A success cleared the count: nothing to hold. */
  forget(username: string): void;
  /**
   * The backend was just found back after an outage: write back now, in the background, not at
   * the next retry (other workers count without this worker's held numbers until they are back).
   */
  retryNow(): void;
  /** Waits for the writes under way; no retry after. */
  close(): Promise<void>;
}

export interface HeldCountsDeps {
  readonly state: StateBackend;
  readonly ttl: TtlOptions;
  readonly maxFailCount: number;
  /** At most this many names held (SVC_SESSION_MAX_CACHE_SIZE): past it the smallest count goes. */
  readonly maxNames: number;
  readonly log: Pick<Logger, 'warn' | 'info'>;
  readonly registry: Registry;
  readonly now: () => number;
  readonly metricPrefix: string;
  /** RETRY_MS; tests shorten it. */
  readonly retryMs?: number;
}

/** Memory has no replica to wait for: nothing is ever held. */
const NOTHING_HELD: HeldCounts = { floor: () => 0, hold: () => undefined, forget: () => undefined, retryNow: () => undefined, close: async () => undefined };

export function createHeldCounts(deps: HeldCountsDeps): HeldCounts {
  if (deps.state.kind === 'memory') return NOTHING_HELD;
  const { state, log, metricPrefix } = deps;
  /** Each name's highest failed attempt held, and until when it counts (a window after the last). */
  const held = new Map<string, { value: number; until: number }>();
  const windowMs = deps.ttl.ttlMs;
  const writing = new Set<Promise<void>>();
  const gauge = new Gauge({
    name: `${metricPrefix}_unconfirmed`,
    help: 'Names whose failed-login count this worker holds because no Redis replica has acknowledged it yet (written back every second)',
    registers: [deps.registry],
  });
  gauge.set(0);
  let timer: NodeJS.Timeout | undefined;
  let warned = false;
  let closed = false;

  function changed(): void {
    gauge.set(held.size);
    if (held.size > 0 || timer === undefined) return;
    clearInterval(timer);
    timer = undefined;
    if (warned) log.info({ throttle: metricPrefix }, 'login throttle: this worker holds no unacknowledged failed-login count any more (each written back to a replica, expired with its window, or cleared by a success)');
    warned = false;
  }

  function unacknowledged(username: string, err: unknown): void {
    if (!(err instanceof StateUnavailable)) {
      // Not Redis being away (a count that is not an integer): retrying would not help.
      held.delete(username);
      changed();
      log.warn({ err, throttle: metricPrefix, username }, 'login throttle: a failed login\'s count could not be written back; not held');
      return;
    }
    if (!warned) {
      warned = true;
      log.warn({ err, throttle: metricPrefix, username }, `login throttle: a failed login's count is on no Redis replica (a failover could lose it); this worker holds it, counts the name's next attempts from it, refuses the name once it reaches the limit, and writes it back every ${deps.retryMs ?? RETRY_MS} ms until a replica acknowledges`);
    }
    timer ??= setInterval(() => void retryAll(), deps.retryMs ?? RETRY_MS).unref();
  }

  /** The name's held entry while its window lasts; an expired one is dropped. */
  function current(username: string): { value: number; until: number } | undefined {
    const entry = held.get(username);
    if (entry === undefined || entry.until > deps.now()) return entry;
    held.delete(username);
    changed();
    return undefined;
  }

  /** One name's number, as a floor of its count (and its lock at the limit), waiting for a replica. */
  async function writeBack(username: string, again: boolean): Promise<void> {
    const entry = current(username);
    if (entry === undefined) return;
    const { value } = entry;
    // What is left of the window, so a write-back never outlasts the failures it stands for.
    const left: TtlOptions = windowMs === undefined ? {} : { ttlMs: Math.max(1, entry.until - deps.now()) };
    try {
      // The lock first, on the same primary as the count on Sentinel: the replica's
      // acknowledgement of the count then covers it too (one replication stream).
      if (again && value >= deps.maxFailCount) await state.setIfAbsent(LOCK_PREFIX + username, String(deps.now()), left);
      await state.raiseTo(COUNT_PREFIX + username, value, { ...left, replicated: true });
      if (held.get(username) === entry) held.delete(username);
      changed();
    } catch (err: unknown) {
      unacknowledged(username, err);
    }
  }

  function track(write: Promise<void>): void {
    writing.add(write);
    void write.finally(() => writing.delete(write));
  }

  let retrying = false;
  async function retryAll(): Promise<void> {
    if (retrying || closed) return;
    retrying = true;
    try {
      // One name first: while no replica acknowledges, that is all a retry sends. Then a batch at
      // a time, together: each write waits up to 500 ms for a replica, and one at a time a dozen
      // held names took six seconds to reach a new primary (the stress driver).
      const [first, ...names] = [...held.keys()];
      if (first === undefined) return;
      const probe = writeBack(first, true);
      track(probe);
      await probe;
      if (held.has(first)) return;
      for (let i = 0; i < names.length; i += RETRY_BATCH) {
        const writes = names.slice(i, i + RETRY_BATCH).map((username) => writeBack(username, true));
        writes.forEach(track);
        await Promise.all(writes);
      }
    } finally {
      retrying = false;
    }
  }

  function makeRoom(username: string): void {
    if (held.size < deps.maxNames || held.has(username)) return;
    let smallest: [string, number] | undefined;
    for (const [name, entry] of held) if (smallest === undefined || entry.value < smallest[1]) smallest = [name, entry.value];
    if (smallest !== undefined) held.delete(smallest[0]);
  }

  return {
    floor: (username) => current(username)?.value ?? 0,
    hold(username, attempt) {
      if (closed) return;
      makeRoom(username);
      const value = Math.max(current(username)?.value ?? 0, attempt);
      held.set(username, { value, until: windowMs === undefined ? Number.POSITIVE_INFINITY : deps.now() + windowMs });
      gauge.set(held.size);
      // While no replica acknowledges (the retry timer runs), the retries write it back.
      if (timer === undefined) track(writeBack(username, false));
    },
    forget(username) {
      if (!held.delete(username)) return;
      changed();
    },
    retryNow() {
      if (held.size > 0) void retryAll();
    },
    async close() {
      closed = true;
      if (timer !== undefined) clearInterval(timer);
      await Promise.allSettled([...writing]);
    },
  };
}

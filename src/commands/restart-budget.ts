/**
 * How often the cluster primary restarts a worker that died after it was ready: per worker slot
 * (the first worker started as slot 0 and every replacement of it), the delay doubling from
 * FIRST_RESTART_DELAY_MS up to MAX_RESTART_DELAY_MS with each death of that slot within
 * RESTART_WINDOW_MS, and no restart past MAX_RESTARTS of them.
 *
 * One budget shared by every worker let one crash-looping worker spend it: the next worker to
 * die once, for an unrelated reason (a kill, an out-of-memory), was then refused its restart
 * and the whole server stopped. Per slot, only the slot that keeps dying runs out.
 */

export const MAX_RESTARTS = 5;
export const RESTART_WINDOW_MS = 60_000;
export const FIRST_RESTART_DELAY_MS = 100;
export const MAX_RESTART_DELAY_MS = 5_000;

export interface RestartBudgets {
  /** The delay before restarting `slot`, which just died at `now`; undefined when the slot used up its budget. */
  next(slot: number, now: number): number | undefined;
}

export function createRestartBudgets(): RestartBudgets {
  const deaths = new Map<number, number[]>();
  return {
    next(slot, now) {
      const times = deaths.get(slot) ?? [];
      deaths.set(slot, times);
      while (times.length > 0 && (times[0] ?? now) <= now - RESTART_WINDOW_MS) times.shift();
      if (times.length >= MAX_RESTARTS) return undefined;
      const delay = Math.min(MAX_RESTART_DELAY_MS, FIRST_RESTART_DELAY_MS * 2 ** times.length);
      times.push(now);
      return delay;
    },
  };
}

/**
 * Picks the state backend: Redis when a URL is given (replicas share it), memory otherwise.
 * An unreachable Redis at start is logged, not fatal: the client keeps reconnecting and
 * callers fall back as docs/state.md describes, so the server still starts.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createMemoryState } from './memory.js';
import { createRedisState, redactUrl } from './redis.js';
import type { StateBackend, StateLog } from './state.js';

export { StateUnavailable, KEY_PREFIX } from './state.js';
export type { HashSetOptions, StateBackend, StateKind, StateLog, TtlOptions, WriteOptions } from './state.js';
export { createMemoryState } from './memory.js';
export { createRedisState } from './redis.js';

/** How long the start waits for a slow Redis (TLS, DNS) before going on without it. */
export const STARTUP_WAIT_MS = 2_000;
const STARTUP_RETRY_MS = 100;

export interface OpenStateOptions {
  /** From `--redis` / `SVC_REDIS_URL`; absent or empty means memory. */
  readonly redisUrl?: string | undefined;
  readonly log: StateLog;
  readonly now?: () => number;
  /** Defaults to STARTUP_WAIT_MS. */
  readonly startupWaitMs?: number;
}

export async function openState(options: OpenStateOptions): Promise<StateBackend> {
  const { redisUrl, log, now, startupWaitMs = STARTUP_WAIT_MS } = options;
  if (redisUrl === undefined || redisUrl === '') {
    log.info('state: in memory (not shared between replicas)');
    return createMemoryState(now === undefined ? { log } : { log, now });
  }
  const state = createRedisState({ url: redisUrl, log });
  const deadline = Date.now() + startupWaitMs;
  for (;;) {
    try {
      await state.ping();
      log.info({ redis: redactUrl(redisUrl) }, 'state: redis');
      return state;
    } catch (err: unknown) {
      if (Date.now() >= deadline) {
        log.warn({ err, redis: redactUrl(redisUrl) }, 'state: redis unreachable at start; retrying in the background');
        return state;
      }
      await sleep(STARTUP_RETRY_MS);
    }
  }
}

/**
 * Picks the state backend: Redis when a topology is given (replicas share it), memory otherwise.
 * One Redis unreachable at start is logged, not fatal: the client keeps reconnecting and
 * callers fall back as docs/state.md describes, so the server still starts. A refused
 * password, and a Sentinel or Cluster that does not answer as configured (no such master,
 * cluster down), stop the start with StateStartError: that is a configuration to fix, and
 * starting on it would only look like an outage.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { createMemoryState } from './memory.js';
import { createRedisState } from './redis.js';
import { redisStartProblem } from './redis-preflight.js';
import { describeTopology, type RedisTopology } from './redis-topology.js';
import type { StateBackend, StateLog } from './state.js';

export { StateUnavailable, KEY_PREFIX } from './state.js';
export type { HashSetOptions, StateBackend, StateKind, StateLog, TtlOptions, WriteOptions } from './state.js';
export { createMemoryState } from './memory.js';
export { createRedisState } from './redis.js';
export type { RedisTopology } from './redis-topology.js';

/** The state backend cannot be used as configured; the message is one line for the operator. */
export class StateStartError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'StateStartError';
  }
}

/** How long the start waits for a slow Redis (TLS, DNS) before going on without it. */
export const STARTUP_WAIT_MS = 2_000;
/** Sentinel and Cluster: how long the start waits for the primary or the slot map. */
export const TOPOLOGY_STARTUP_WAIT_MS = 5_000;
const STARTUP_RETRY_MS = 100;

export interface OpenStateOptions {
  /** From `--redis` / `SVC_REDIS_URL`; absent or empty means memory (unless `redis` is given). */
  readonly redisUrl?: string | undefined;
  /** Sentinel, Cluster or one Redis, parsed from the options (wins over redisUrl). */
  readonly redis?: RedisTopology | undefined;
  readonly log: StateLog;
  readonly now?: () => number;
  /** Defaults to STARTUP_WAIT_MS. */
  readonly startupWaitMs?: number;
}

export async function openState(options: OpenStateOptions): Promise<StateBackend> {
  const { redisUrl, log, now } = options;
  const topology: RedisTopology | undefined = options.redis ?? (redisUrl === undefined || redisUrl === '' ? undefined : { kind: 'standalone', url: redisUrl });
  if (topology === undefined) {
    log.info('state: in memory (not shared between replicas)');
    return createMemoryState(now === undefined ? { log } : { log, now });
  }
  const startupWaitMs = options.startupWaitMs ?? (topology.kind === 'standalone' ? STARTUP_WAIT_MS : TOPOLOGY_STARTUP_WAIT_MS);
  const state = createRedisState({ topology, log });
  const deadline = Date.now() + startupWaitMs;
  for (;;) {
    try {
      log.info({ topology: topology.kind }, `state: ${await state.inspect()}`);
      return state;
    } catch (err: unknown) {
      const cause = (err as { cause?: unknown } | undefined)?.cause ?? err;
      if (Date.now() >= deadline || isAuthError(err) || isAuthError(cause)) {
        const problem = await redisStartProblem(topology, cause);
        // One Redis that does not answer is an outage: start and reconnect. A refused password is not.
        if (topology.kind === 'standalone' && problem === undefined) {
          log.warn({ err, redis: describeTopology(topology) }, 'state: redis unreachable at start; retrying in the background');
          return state;
        }
        await state.close();
        throw new StateStartError(`state: ${describeTopology(topology)} cannot be used: ${problem ?? (err instanceof Error ? err.message : String(err))}`);
      }
      await sleep(STARTUP_RETRY_MS);
    }
  }
}

const isAuthError = (err: unknown): boolean => err instanceof Error && /WRONGPASS|NOAUTH|invalid password|invalid username-password/i.test(err.message);

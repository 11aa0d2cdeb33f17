/** `svc-server login unlock <name>`: the break-glass of session/throttle-clear.ts, on Redis. */
import type { Writable } from 'node:stream';
import { clearLoginThrottle } from '../session/throttle-clear.js';
import { createRedisState } from '../state/redis.js';
import type { RedisTopology } from '../state/redis-topology.js';
import { StateUnavailable } from '../state/state.js';

const quiet = { info: () => undefined, warn: () => undefined };

/** Exit code 0 when cleared; 1 without Redis, or when Redis cannot be reached. */
export async function runLoginUnlock(redis: string | RedisTopology | undefined, username: string, out: Writable, err: Writable): Promise<number> {
  if (redis === undefined) {
    err.write("svc-server: login unlock needs --redis, --redis-sentinel or --redis-cluster (or SVC_REDIS_URL, SVC_REDIS_SENTINELS, SVC_REDIS_CLUSTER): without Redis the failed logins are counted in the server's memory, and restarting the server clears them\n");
    return 1;
  }
  const state = createRedisState(typeof redis === 'string' ? { url: redis, log: quiet } : { topology: redis, log: quiet });
  try {
    const { wasLocked, attempts } = await clearLoginThrottle(state, username);
    out.write(`${JSON.stringify(username)}: ${wasLocked ? 'lockout lifted' : 'was not locked'}; ${attempts} counted attempt(s) forgotten\n`);
    return 0;
  } catch (e: unknown) {
    if (!(e instanceof StateUnavailable)) throw e;
    err.write(`svc-server: login unlock: ${e.message}\n`);
    return 1;
  } finally {
    await state.close();
  }
}

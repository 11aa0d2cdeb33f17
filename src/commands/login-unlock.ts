/** `svc-server login unlock <name>`: the break-glass of session/throttle-clear.ts, on Redis. */
import type { Writable } from 'node:stream';
import { clearLoginThrottle } from '../session/throttle-clear.js';
import { createRedisState } from '../state/redis.js';
import { StateUnavailable } from '../state/state.js';

const quiet = { info: () => undefined, warn: () => undefined };

/** Exit code 0 when cleared; 1 without Redis, or when Redis cannot be reached. */
export async function runLoginUnlock(redisUrl: string | undefined, username: string, out: Writable, err: Writable): Promise<number> {
  if (redisUrl === undefined) {
    err.write("svc-server: login unlock needs --redis (or SVC_REDIS_URL): without Redis the failed logins are counted in the server's memory, and restarting the server clears them\n");
    return 1;
  }
  const state = createRedisState({ url: redisUrl, log: quiet });
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

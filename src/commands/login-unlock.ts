/**
 * `svc-server login unlock <name>`: the break-glass of session/throttle-clear.ts, on Redis.
 * It waits for Redis as the server's start does (openState), up to UNLOCK_WAIT_MS: finding a
 * Sentinel's primary or a Cluster's slot map takes longer than one call may wait, above all on
 * a loaded machine, and an operator locked out should not have to retry by hand.
 */
import type { Writable } from 'node:stream';
import { clearLoginThrottle } from '../session/throttle-clear.js';
import { openState, StateStartError } from '../state/index.js';
import type { RedisTopology } from '../state/redis-topology.js';
import { StateUnavailable } from '../state/state.js';
import { offlineEvent } from '../audit/offline.js';
import { NO_AUDIT, type AuditTrail } from '../audit/trail.js';

const quiet = { info: () => undefined, warn: () => undefined };

/** How long the command waits for Redis to answer before it gives up. */
export const UNLOCK_WAIT_MS = 5_000;

/** Exit code 0 when cleared; 1 without Redis, or when Redis cannot be reached. */
export async function runLoginUnlock(redis: string | RedisTopology | undefined, username: string, out: Writable, err: Writable, audit: AuditTrail = NO_AUDIT): Promise<number> {
  const unlock = (outcome: 'success' | 'failure', reason?: string, svc: Record<string, number | boolean> = {}) =>
    audit.record(offlineEvent('login unlock', { category: 'iam', type: 'change', action: 'lockout-lifted', outcome, ...(reason !== undefined ? { reason } : {}), user: { name: username }, svc }));
  if (redis === undefined || redis === '') {
    unlock('failure', 'no Redis given');
    err.write("svc-server: login unlock needs --redis, --redis-sentinel or --redis-cluster (or SVC_REDIS_URL, SVC_REDIS_SENTINELS, SVC_REDIS_CLUSTER): without Redis the failed logins are counted in the server's memory, and restarting the server clears them\n");
    return 1;
  }
  let state;
  try {
    state = await openState({ redis: typeof redis === 'string' ? { kind: 'standalone', url: redis } : redis, log: quiet, startupWaitMs: UNLOCK_WAIT_MS });
  } catch (e: unknown) {
    if (!(e instanceof StateStartError)) throw e;
    unlock('failure', e.message);
    err.write(`svc-server: login unlock: ${e.message}\n`);
    return 1;
  }
  try {
    const { wasLocked, attempts } = await clearLoginThrottle(state, username);
    unlock('success', undefined, { wasLocked, attempts });
    out.write(`${JSON.stringify(username)}: ${wasLocked ? 'lockout lifted' : 'was not locked'}; ${attempts} counted attempt(s) forgotten\n`);
    return 0;
  } catch (e: unknown) {
    if (!(e instanceof StateUnavailable)) throw e;
    unlock('failure', e.message);
    err.write(`svc-server: login unlock: ${e.message}\n`);
    return 1;
  } finally {
    await state.close();
  }
}

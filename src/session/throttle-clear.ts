/**
 * The break-glass for a locked login (`svc-server login unlock <name>`): forgets a name's failed
 * logins and lifts its lockout in the shared state backend. Anyone can lock `admin` with
 * SVC_SESSION_FAILURE_MAX_FAIL_COUNT wrong passwords (counts are per name, so that a lockout
 * reveals nothing and guesses from many addresses still add up); this is how an operator who
 * can reach Redis logs in anyway, without a restart and without waiting out the window. The
 * memory backend lives inside the server process: there a restart is the clear.
 */
import type { StateBackend } from '../state/state.js';
import { COUNT_PREFIX, INDEX_KEY, LOCK_PREFIX } from './throttle-keys.js';

export interface ClearedThrottle {
  /** Whether the name was locked. */
  readonly wasLocked: boolean;
  /** The attempts counted for the name (failures and attempts in flight), 0 when none. */
  readonly attempts: number;
}

export async function clearLoginThrottle(state: StateBackend, username: string): Promise<ClearedThrottle> {
  const [lock, count] = await Promise.all([state.get(LOCK_PREFIX + username), state.get(COUNT_PREFIX + username)]);
  await Promise.all([state.delete(LOCK_PREFIX + username), state.delete(COUNT_PREFIX + username), state.hashDelete(INDEX_KEY, username)]);
  return { wasLocked: lock !== null, attempts: Number(count ?? 0) || 0 };
}

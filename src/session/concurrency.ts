/**
 * Caps the password checks in flight on this replica (SVC_MAX_CONCURRENT_LOGIN_REQUESTS_COUNT,
 * 0 = no cap): bcrypt is the expensive part of a login, and a flood of logins must not starve
 * the rest of the server. Over the cap a login fails at once with 503 rather than queueing.
 * The slot covers the bcrypt work only, not the random delay after a failure, so slow failed
 * logins cannot fill the cap and lock everyone out (as they can in Argo CD).
 */
import { TooManyRequests } from '../errors.js';

export type Release = () => void;

export interface LoginConcurrency {
  /** A slot, or TooManyRequests when all are taken. Call the release exactly once. */
  acquire(): Release;
  readonly inFlight: number;
}

export function createLoginConcurrency(max: number): LoginConcurrency {
  let inFlight = 0;
  return {
    acquire() {
      if (max > 0 && inFlight >= max) {
        throw new TooManyRequests(`too many login requests in progress (limit ${max}); try again shortly`);
      }
      inFlight++;
      let released = false;
      return function release() {
        if (released) return;
        released = true;
        inFlight--;
      };
    },
    get inFlight() {
      return inFlight;
    },
  };
}

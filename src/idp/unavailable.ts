/**
 * oidc-provider's `temporarily_unavailable` answered with 503 instead of the library's 400: the
 * request was fine, a part behind it (the state backend, a connector's directory, the bound on
 * pending logins) cannot serve it now. The status tells the client to come back, and an
 * operator's 5xx alerts that svc is degraded; nothing is granted either way.
 */
import { errors } from 'oidc-provider';

export function temporarilyUnavailable(description: string, cause?: unknown): Error {
  const err = new errors.TemporarilyUnavailable(description);
  Object.assign(err, { status: 503, statusCode: 503 }, cause === undefined ? {} : { cause });
  return err;
}

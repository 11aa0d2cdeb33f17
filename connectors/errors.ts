/**
 * Errors a connector throws when its upstream cannot answer a login. The message is what a
 * person sees on the login page, so it never names a host, a DN or a secret; the reason goes to
 * the connector's log. Wrong credentials are not an error: `login` answers null.
 */
import { SvcError } from '../src/errors.js';

/** The upstream cannot be reached or refused svc itself (service account, TLS, timeout). */
export class UpstreamUnavailable extends SvcError {
  readonly code = 'unavailable';
  constructor(message = 'the identity source is unreachable; try again later', options?: ErrorOptions) {
    super(message, options);
  }
}

/** The upstream answered but not in a way svc can sign anyone in with (a misconfiguration). */
export class UpstreamMisconfigured extends SvcError {
  readonly code = 'unavailable';
  constructor(message = 'the identity source could not complete the login; the server log says why', options?: ErrorOptions) {
    super(message, options);
  }
}

/**
 * The upstream signed the person in, but this login does not let them in (outside the allowed
 * orgs, teams or groups), or they cancelled at the upstream. The message says so, in words a
 * person can act on; it names no host.
 */
export class LoginRefused extends SvcError {
  readonly code = 'permission_denied';
}

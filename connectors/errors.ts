/**
 * Errors a connector throws when its upstream cannot answer a login. The message is what a
 * person sees on the login page, so it never names a host, a DN or a secret; the reason goes to
 * the connector's log. Wrong credentials are not an error: `login` answers null.
 */
import { SvcError } from '../src/errors.js';

export interface UpstreamErrorOptions extends ErrorOptions {
  /**
   * Why, for the operator's log line of the attempt (it may name a host or a DN, never a
   * secret): the caller that logs the attempt logs it, so one failure is one line.
   */
  readonly reason?: string;
}

/**
 * The operator's reason a connector gave with its error, if any. By shape, not instanceof: a
 * connector loaded lazily (import()) may hold another instance of this module than its caller.
 */
export function upstreamReason(err: unknown): string | undefined {
  const reason = err instanceof Error ? (err as { reason?: unknown }).reason : undefined;
  return typeof reason === 'string' && reason !== '' ? reason : undefined;
}

/**
 * Whether a connector's error refuses the person (LoginRefused, PermissionDenied: no longer in
 * the allowed orgs, teams or groups) rather than telling that the upstream could not answer.
 * By shape, as upstreamReason: a refresh that throws this is a refusal of the user.
 */
export function refusesUser(err: unknown): boolean {
  return err instanceof Error && (err as { code?: unknown }).code === 'permission_denied';
}

/** The upstream cannot be reached or refused svc itself (service account, TLS, timeout). */
export class UpstreamUnavailable extends SvcError {
  readonly code = 'unavailable';
  readonly reason: string | undefined;
  constructor(message = 'the identity source is unreachable; try again later', options?: UpstreamErrorOptions) {
    super(message, options);
    this.reason = options?.reason;
  }
}

/** The upstream answered but not in a way svc can sign anyone in with (a misconfiguration). */
export class UpstreamMisconfigured extends SvcError {
  readonly code = 'unavailable';
  readonly reason: string | undefined;
  constructor(message = 'the identity source could not complete the login; the server log says why', options?: UpstreamErrorOptions) {
    super(message, options);
    this.reason = options?.reason;
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

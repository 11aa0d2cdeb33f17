/**
 * Every error a client may see. A domain error carries a stable `code` and a sentence for a
 * person; src/http/errors.ts is the only place a code becomes an HTTP status. Messages never
 * contain a token, a password or a secret value.
 */
import type { Principal } from './principal.js';

export type ErrorCode =
  | 'invalid_request'
  | 'invalid_credentials'
  | 'unauthenticated'
  | 'permission_denied'
  | 'not_found'
  | 'account_not_found'
  | 'application_not_found'
  | 'extension_not_found'
  | 'no_backend'
  | 'conflict'
  | 'backend_idle'
  | 'too_many_attempts'
  | 'too_many_requests'
  | 'rate_limited'
  | 'backend_unreachable'
  | 'backend_tls'
  | 'backend_timeout'
  | 'unavailable'
  | 'second_factor_required'
  | 'second_factor_enrolment_required';

export abstract class SvcError extends Error {
  abstract readonly code: ErrorCode;
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = new.target.name;
  }
}

export class InvalidRequest extends SvcError {
  readonly code = 'invalid_request';
}

export class InvalidCredentials extends SvcError {
  readonly code = 'invalid_credentials';
  constructor(message = 'invalid username or password') {
    super(message);
  }
}

export class Unauthenticated extends SvcError {
  readonly code = 'unauthenticated';
  constructor(message = 'no valid token: log in or send a bearer token') {
    super(message);
  }
}

/** What a rights refusal was about, for the audit trail: never shown to the client beyond the message. */
export interface RightsDecision {
  readonly principal: Principal;
  /** The caller's subjects as the rules saw them (user first, then groups). */
  readonly subjects: readonly string[];
  readonly resource: string;
  readonly action: string;
  readonly object: string;
  /** The deny line, or the default, that decided (src/rbac/explain.ts). */
  readonly rule: string;
}

export class PermissionDenied extends SvcError {
  readonly code = 'permission_denied';
  /** Set when the rights policy refused (not for other refusals, such as a foreign origin). */
  readonly decision: RightsDecision | undefined;
  constructor(message: string, options?: ErrorOptions & { readonly decision?: RightsDecision }) {
    super(message, options);
    this.decision = options?.decision;
  }
}

export class NotFound extends SvcError {
  readonly code = 'not_found';
}

export class AccountNotFound extends SvcError {
  readonly code = 'account_not_found';
  constructor(readonly account: string) {
    super(`account '${account}' does not exist`);
  }
}

export class ApplicationNotFound extends SvcError {
  readonly code = 'application_not_found';
}

export class ExtensionNotFound extends SvcError {
  readonly code = 'extension_not_found';
}

export class NoBackend extends SvcError {
  readonly code = 'no_backend';
}

export class Conflict extends SvcError {
  readonly code = 'conflict';
}

export class BackendIdle extends SvcError {
  readonly code = 'backend_idle';
}

export class TooManyAttempts extends SvcError {
  readonly code = 'too_many_attempts';
  constructor(readonly retryAfterSeconds: number) {
    super(`too many failed logins; try again in ${retryAfterSeconds}s`);
  }
}

/** An extension's rate limit (backend.rateLimit) reached for this caller. */
export class RateLimited extends SvcError {
  readonly code = 'rate_limited';
  constructor(
    readonly extension: string,
    readonly retryAfterSeconds: number,
    limit: { readonly requestsPerSecond: number; readonly burst: number },
  ) {
    super(`extension '${extension}' allows ${limit.requestsPerSecond} requests per second per caller (burst ${limit.burst}); try again in ${retryAfterSeconds}s`);
  }
}

export class TooManyRequests extends SvcError {
  readonly code = 'too_many_requests';
}

export class BackendUnreachable extends SvcError {
  readonly code = 'backend_unreachable';
}

export class BackendTls extends SvcError {
  readonly code = 'backend_tls';
}

export class BackendTimeout extends SvcError {
  readonly code = 'backend_timeout';
}

export class Unavailable extends SvcError {
  readonly code = 'unavailable';
}

/**
 * The password was right and the account has a second factor: the login goes on with
 * `{challenge, code}` or `{challenge, webauthn}`. Carries the single-use challenge and the
 * factors the account can use; the challenge is safe to show (it is worth nothing without a code).
 */
export class SecondFactorRequired extends SvcError {
  readonly code = 'second_factor_required';
  constructor(
    readonly challenge: string,
    readonly factors: readonly SecondFactorKind[],
  ) {
    super('this account has a second factor: send the challenge with a code from the authenticator app, a recovery code or a passkey');
  }
}

export type SecondFactorKind = 'totp' | 'webauthn' | 'recovery';

/** users.mfa.required is on and this account has no second factor yet: its session may only enrol one. */
export class SecondFactorEnrolmentRequired extends SvcError {
  readonly code = 'second_factor_enrolment_required';
  constructor() {
    super('a second factor is required (users.mfa.required): enrol one at /account or with `svc account second-factor enable-totp` before anything else');
  }
}

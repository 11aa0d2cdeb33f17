/**
 * The provider checks a confidential client's secret wherever a client authenticates: the token
 * endpoint, revocation, introspection, device authorization. Each check is
 * throttled as the login is (session/throttle.ts): counted before the secret is compared, in the
 * state backend so that every replica sees one count; SVC_SESSION_FAILURE_MAX_FAIL_COUNT failures
 * within SVC_SESSION_FAILURE_WINDOW_SECONDS lock the client for a window, and each failure waits
 * the login's random delay before its answer. The throttle's name is `idp-client:<client id>`,
 * which neither a local account (no `:`) nor the password form (`idp:<connector>:<name>`) uses.
 *
 * The hook is the client model's `compareClientSecret`, which oidc-provider calls for exactly
 * the secret checks, with the client it found whatever carried the credentials (Basic header or
 * form body): a guard in front of the endpoints would have to re-parse both, and a mismatch of
 * the two parsers would let a guess through uncounted. While the client is locked the secret is
 * not compared: the request is answered `invalid_client` with status 429, a Retry-After, and no
 * secret checked.
 *
 * svc's own web client is not throttled: its secret is derived from server.secretkey (256 bits,
 * never typed by a person), and a lockout of it would let anyone stop every SSO login to svc.
 */
import type Provider from 'oidc-provider';
import { errors, type KoaContextWithOIDC } from 'oidc-provider';
import type { Logger } from 'pino';
import { TooManyAttempts } from '../errors.js';
import { IN_FLIGHT_RETRY_AFTER_SECONDS, LockedUntilCleared, type LoginThrottle } from '../session/throttle.js';

/** The endpoints' error events; each carries the request and the error that answered it. */
const ERROR_EVENTS = ['grant.error', 'introspection.error', 'revocation.error', 'device_authorization.error', 'pushed_authorization_request.error'] as const;

export const clientThrottleName = (clientId: string): string => `idp-client:${clientId}`;

/** The answer to a locked client: RFC 6749's error name, the status of a rate limit. */
export class ClientLocked extends errors.OIDCProviderError {
  constructor(readonly retryAfterSeconds: number, permanent: boolean) {
    super(429, 'invalid_client');
    if (permanent) this.error_description = 'too many failed client authentications; this client is locked until an operator clears it';
    else if (retryAfterSeconds <= IN_FLIGHT_RETRY_AFTER_SECONDS) this.error_description = 'too many client authentications in progress or failed; try again in 1 second';
    else this.error_description = `too many failed client authentications; try again in ${retryAfterSeconds} seconds`;
  }
}

export interface ClientSecretGuardDeps {
  readonly throttle: LoginThrottle;
  readonly log: Pick<Logger, 'info'>;
  /** The wait after a failed secret (session/login.ts randomFailureDelay). */
  readonly failureDelay: () => Promise<void>;
  /** Clients whose secret is not throttled (svc's own web client). */
  readonly exempt: readonly string[];
}

export interface ClientSecretGuard {
  /** Puts the throttle in front of `provider`'s secret checks, and logs its failed client authentications. */
  install(provider: Provider): void;
  /**
   * Counts a secret a public client presented in a Basic header (./public-client-basic.ts) as a
   * failed check: it has no secret, so every one is wrong. A lock changes nothing for it (a
   * public client's requests compare no secret), so an admission refused is not waited for.
   */
  countPresentedSecret(clientId: string): Promise<void>;
}

type Compare = (this: { clientId: string }, actual: string) => boolean | Promise<boolean>;

export function createClientSecretGuard(deps: ClientSecretGuardDeps): ClientSecretGuard {
  const { throttle } = deps;

  async function admit(name: string): Promise<number> {
    try {
      return await throttle.admit(name);
    } catch (err: unknown) {
      if (err instanceof TooManyAttempts) throw new ClientLocked(err.retryAfterSeconds, err instanceof LockedUntilCleared);
      throw err;
    }
  }

  async function guarded(clientId: string, compare: () => boolean | Promise<boolean>): Promise<boolean> {
    const name = clientThrottleName(clientId);
    const attempt = await admit(name);
    let matches: boolean;
    try {
      matches = await compare();
    } catch (err: unknown) {
      await throttle.release(name);
      throw err;
    }
    if (matches) {
      await throttle.recordSuccess(name);
      return true;
    }
    await throttle.recordFailure(name, attempt);
    await deps.failureDelay();
    return false;
  }

  function logFailure(ctx: KoaContextWithOIDC, err: unknown): void {
    if (!(err instanceof errors.OIDCProviderError) || err.error !== 'invalid_client') return;
    if (err instanceof ClientLocked) ctx.set('Retry-After', String(err.retryAfterSeconds));
    const params = ctx.oidc?.params as { client_id?: unknown } | undefined;
    const clientId = ctx.oidc?.client?.clientId ?? (typeof params?.client_id === 'string' ? params.client_id : undefined);
    deps.log.info({ client: clientId, reason: err.error_detail ?? err.error_description ?? err.message, path: ctx.path, requestId: String(ctx.res.getHeader('X-Request-Id') ?? '') },
      'identity provider: client authentication failed');
  }

  return {
    async countPresentedSecret(clientId) {
      const name = clientThrottleName(clientId);
      let attempt: number;
      try {
        attempt = await throttle.admit(name);
      } catch (err: unknown) {
        if (err instanceof TooManyAttempts) return;
        throw err;
      }
      await throttle.recordFailure(name, attempt);
      await deps.failureDelay();
    },
    install(provider) {
      const prototype = provider.Client.prototype as unknown as { compareClientSecret: Compare };
      const compare = prototype.compareClientSecret;
      prototype.compareClientSecret = function throttledCompare(actual) {
        if (deps.exempt.includes(this.clientId)) return compare.call(this, actual);
        return guarded(this.clientId, () => compare.call(this, actual));
      };
      // Each event has its own overload in the types; the listener is the same for all.
      const on = provider.on.bind(provider) as (event: string, listener: (ctx: KoaContextWithOIDC, err: unknown) => void) => void;
      for (const event of ERROR_EVENTS) on(event, logFailure);
    },
  };
}

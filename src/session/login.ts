/**
 * Password login (POST /api/v1/session), as a pipeline: name length -> concurrency slot ->
 * throttle -> one bcrypt check -> token, or count the failure and wait. Every failure looks and
 * takes the same: unknown name, no password set, wrong password, disabled account or no `login`
 * capability all run one bcrypt comparison, answer `invalid_credentials` "invalid username or
 * password", count toward the throttle and wait a random 0.5–1 s (the real reason is logged
 * for operators). Argo CD tells a disabled account apart once the password is right; we don't.
 */
import { randomInt, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { MAX_USERNAME_LENGTH, type AccountSettings } from '../accounts/config.js';
import { verifyPassword } from '../accounts/passwords.js';
import { InvalidCredentials, InvalidRequest } from '../errors.js';
import type { LoginConcurrency } from './concurrency.js';
import type { LoginThrottle } from './throttle.js';
import type { TokenSigner } from './tokens.js';

export const FAILURE_DELAY_MIN_MS = 500;
export const FAILURE_DELAY_MAX_MS = 1000;

/** The default failure delay: uniformly random in [0.5 s, 1 s). */
export function randomFailureDelay(): Promise<void> {
  return sleep(randomInt(FAILURE_DELAY_MIN_MS, FAILURE_DELAY_MAX_MS));
}

export interface LoginDeps {
  readonly accounts: () => ReadonlyMap<string, AccountSettings>;
  readonly throttle: LoginThrottle;
  readonly concurrency: LoginConcurrency;
  readonly signer: TokenSigner;
  /** `users.session.duration`, read per login so a config change applies at once. */
  readonly sessionDurationMs: () => number;
  readonly log: Pick<Logger, 'info'>;
  readonly now: () => number;
  /** Injected so tests run fast; one test proves the default exists. */
  readonly failureDelay?: () => Promise<void>;
}

export interface LoginRequest {
  readonly username: string;
  readonly password: string;
}

export interface LoginResult {
  readonly token: string;
  /** Seconds since the epoch. */
  readonly expiresAt: number;
}

export interface LoginService {
  withPassword(request: LoginRequest): Promise<LoginResult>;
  /**
   * Checks a password the way a login does (length, throttle, counting, timing, the failure
   * delay) without issuing a token or asking for the login capability: for a password change.
   */
  checkPassword(request: LoginRequest): Promise<boolean>;
  /** A new session token for an account that just proved itself (after its password change). */
  issueSession(username: string): Promise<LoginResult>;
}

export function createLoginService(deps: LoginDeps): LoginService {
  const delay = deps.failureDelay ?? randomFailureDelay;

  /** Undefined on success, else the reason for the log. Holds a concurrency slot for the bcrypt only. */
  async function verify({ username, password }: LoginRequest, forLogin: boolean): Promise<string | undefined> {
    if (username.length > MAX_USERNAME_LENGTH) {
      // No account can have such a name; not counted, so junk cannot fill the failure cache.
      throw new InvalidRequest(`username is longer than ${MAX_USERNAME_LENGTH} characters`);
    }
    const release = deps.concurrency.acquire();
    try {
      const hadFailures = await deps.throttle.check(username);
      const account = deps.accounts().get(username);
      const matches = await verifyPassword(password, account?.passwordHash);
      const reason = refusal(account, matches, forLogin);
      // A success resets the count; without counted failures there is nothing to reset.
      if (reason === undefined && hadFailures) await deps.throttle.recordSuccess(username);
      if (reason !== undefined) await deps.throttle.recordFailure(username);
      return reason;
    } finally {
      release();
    }
  }

  async function passes(request: LoginRequest, forLogin: boolean): Promise<boolean> {
    const reason = await verify(request, forLogin);
    if (reason === undefined) return true;
    deps.log.info({ username: request.username, reason }, forLogin ? 'login failed' : 'password check failed');
    await delay();
    return false;
  }

  async function issueSession(username: string): Promise<LoginResult> {
    const iat = Math.floor(deps.now() / 1000);
    const expiresAt = iat + Math.max(1, Math.round(deps.sessionDurationMs() / 1000));
    const token = await deps.signer.sign({ username, kind: 'login', jti: randomUUID(), iat, exp: expiresAt });
    return { token, expiresAt };
  }

  return {
    checkPassword: (request) => passes(request, false),
    issueSession,
    async withPassword(request) {
      if (!(await passes(request, true))) throw new InvalidCredentials();
      return issueSession(request.username);
    },
  };
}

function refusal(account: AccountSettings | undefined, matches: boolean, forLogin: boolean): string | undefined {
  if (account === undefined) return 'no such account';
  if (!matches) return account.passwordHash === undefined ? 'account has no password' : 'wrong password';
  if (!account.enabled) return 'account is disabled';
  if (forLogin && !account.capabilities.includes('login')) return 'account does not have the login capability';
  return undefined;
}

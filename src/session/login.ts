/**
 * Password login (POST /api/v1/session), as a pipeline: name length -> concurrency slot ->
 * throttle (counts the attempt, or refuses it) -> one bcrypt check -> clear the count and sign
 * a token bound to the hash just checked, or lock when due and wait. Every failure looks and
 * takes the same: unknown name, no password set, wrong password, disabled account or no `login`
 * capability all run one bcrypt comparison, answer `invalid_credentials` "invalid username or
 * password", count toward the throttle and wait a random 0.5–1 s (the real reason is logged
 * for operators). Argo CD tells a disabled account apart once the password is right; we don't.
 *
 * An account with a second factor gets no token from the password alone: the right password
 * answers SecondFactorRequired with a single-use challenge (second-factor/second-step.ts), and
 * clears nothing: only the second step's success clears the count, so guessing codes behind a
 * known password fills the same failure window as guessing passwords.
 */
import { NO_LOGIN_OUTCOMES, type LoginOutcomes, type LoginReason } from './login-outcomes.js';
import { randomInt, randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { ADMIN, MAX_USERNAME_LENGTH, type AccountSettings } from '../accounts/config.js';
import { verifyPassword } from '../accounts/passwords.js';
import { InvalidCredentials, InvalidRequest, TooManyAttempts, TooManyRequests, type SecondFactorRequired } from '../errors.js';
import type { LoginConcurrency, Release } from './concurrency.js';
import type { LoginThrottle } from './throttle.js';
import type { TokenSigner } from './tokens.js';
import type { AuditSource } from '../audit/trail.js';
import { inSpan } from '../tracing/spans.js';

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
  /** Counts each login's outcome (svc_login_outcomes_total, method local); not password checks. */
  readonly outcomes?: LoginOutcomes;
  /** Accounts with a second factor; absent: a password alone logs in. */
  readonly secondStep?: SecondStepGate;
}

/** How a login learns that an account needs a second step, and starts it. */
export interface SecondStepGate {
  required(account: AccountSettings): boolean;
  /** The SecondFactorRequired answer with a fresh challenge bound to the account and `pwh`. */
  begin(account: AccountSettings, pwh: string): Promise<SecondFactorRequired>;
}

export interface LoginRequest {
  readonly username: string;
  readonly password: string;
  /** For the log line of a failure: the request's id and the client's address. */
  readonly requestId?: string;
  readonly client?: string;
  /** The request's side of the audit event (source address through trusted proxies, user agent, request id). */
  readonly source?: AuditSource;
}

export interface LoginResult {
  readonly token: string;
  /** The token's jti: the session's id in the registry (registry.ts). */
  readonly tokenId: string;
  /** Seconds since the epoch. */
  readonly expiresAt: number;
}

export interface CheckOptions {
  /**
   * A right password hands its attempt back instead of clearing the failures: for a check
   * followed by a second-factor code (removing a factor), whose own success clears them.
   */
  readonly keepFailures?: boolean;
}

export interface LoginService {
  withPassword(request: LoginRequest): Promise<LoginResult>;
  /**
   * Checks a password the way a login does (length, throttle, counting, timing, the failure
   * delay) without issuing a token or asking for the login capability: for a password change.
   */
  checkPassword(request: LoginRequest, options?: CheckOptions): Promise<boolean>;
  /**
   * A new session token for an account that just proved itself against `passwordHash` (after
   * its password change: the new hash). The token is bound to that hash (`pwh`, tokens.ts).
   */
  issueSession(username: string, passwordHash: string): Promise<LoginResult>;
}

export function createLoginService(deps: LoginDeps): LoginService {
  const delay = deps.failureDelay ?? randomFailureDelay;
  const outcomes = deps.outcomes ?? NO_LOGIN_OUTCOMES;

  /**
   * The hash the password matched on success, else the reason for the log. Holds a concurrency
   * slot for the bcrypt only. The attempt is counted before bcrypt runs (throttle.ts).
   */
  async function verify({ username, password }: LoginRequest, forLogin: boolean, keepFailures = false): Promise<Verdict> {
    if (username.length > MAX_USERNAME_LENGTH) {
      // No account can have such a name; not counted, so junk cannot fill the failure cache.
      throw new InvalidRequest(`username is longer than ${MAX_USERNAME_LENGTH} characters`);
    }
    // Admitted first: an attempt waiting its turn (throttle.ts) must not hold a bcrypt slot.
    const attempt = await deps.throttle.admit(username);
    const release = await bcryptSlot(username);
    try {
      // Read once: the token is bound to exactly the hash this bcrypt checks.
      const account = deps.accounts().get(username);
      const matches = await inSpan('svc.login.password', {}, () => verifyPassword(password, account?.passwordHash));
      const verdict = judge(username, account, matches, forLogin);
      // A login that goes on to a second step is not a success yet: its attempt is handed back
      // and earlier failures stay counted until the second step succeeds, so every wrong code
      // counts as a wrong password does and a right password never wipes the count.
      if (!('passwordHash' in verdict)) await deps.throttle.recordFailure(username, attempt);
      else if (keepFailures || (forLogin && account !== undefined && deps.secondStep?.required(account) === true)) await deps.throttle.release(username);
      else await deps.throttle.recordSuccess(username);
      return verdict;
    } finally {
      release();
    }
  }

  /** A concurrency slot; without one (503), the admitted attempt is uncounted, as it checks nothing. */
  async function bcryptSlot(username: string): Promise<Release> {
    try {
      return deps.concurrency.acquire();
    } catch (err: unknown) {
      await deps.throttle.release(username);
      throw err;
    }
  }

  /** The hash the password matched, or undefined after logging the reason and waiting. */
  async function passes(request: LoginRequest, forLogin: boolean, keepFailures = false): Promise<string | undefined> {
    const verdict = await verify(request, forLogin, keepFailures);
    if ('passwordHash' in verdict) return verdict.passwordHash;
    deps.log.info({ username: request.username, reason: verdict.reason, ...whereFrom(request) }, forLogin ? 'login failed' : 'password check failed');
    if (forLogin) outcomes.record('local', '', verdict.counted, { user: request.username, source: request.source, detail: verdict.reason });
    await delay();
    return undefined;
  }

  async function issueSession(username: string, passwordHash: string): Promise<LoginResult> {
    const iat = Math.floor(deps.now() / 1000);
    const expiresAt = iat + Math.max(1, Math.round(deps.sessionDurationMs() / 1000));
    const pwh = deps.signer.passwordBinding(passwordHash);
    const jti = randomUUID();
    const token = await deps.signer.sign({ username, kind: 'login', jti, iat, exp: expiresAt, pwh });
    return { token, tokenId: jti, expiresAt };
  }

  return {
    checkPassword: async (request, options) => (await passes(request, false, options?.keepFailures === true)) !== undefined,
    issueSession,
    async withPassword(request) {
      let passwordHash: string | undefined;
      try {
        passwordHash = await passes(request, true);
      } catch (err: unknown) {
        if (err instanceof TooManyAttempts || err instanceof TooManyRequests) {
          const locked = err instanceof TooManyAttempts;
          outcomes.record('local', '', locked ? 'locked' : 'busy', { user: request.username, source: request.source });
          deps.log.info({ username: request.username, reason: locked ? 'locked after too many failures' : 'too many logins in progress', ...whereFrom(request) }, 'login failed');
        }
        throw err;
      }
      if (passwordHash === undefined) throw new InvalidCredentials();
      const account = deps.accounts().get(request.username);
      if (account !== undefined && deps.secondStep?.required(account) === true) {
        outcomes.record('local', '', 'second-step', { user: request.username, userId: request.username, source: request.source });
        throw await deps.secondStep.begin(account, deps.signer.passwordBinding(passwordHash));
      }
      outcomes.record('local', '', 'ok', { user: request.username, userId: request.username, source: request.source });
      return issueSession(request.username, passwordHash);
    },
  };
}

type Verdict = { readonly passwordHash: string } | { readonly reason: string; readonly counted: LoginReason };

/** The request id and client address a failure's log line carries, when the caller gave them. */
function whereFrom(request: LoginRequest): { requestId?: string; client?: string } {
  return { ...(request.requestId !== undefined ? { requestId: request.requestId } : {}), ...(request.client !== undefined ? { client: request.client } : {}) };
}

/**
 * Every verdict but success answers the same (InvalidCredentials) and counts toward the lockout;
 * the reason is for the log and the audit trail. admin switched off is a disabled account, as in
 * Argo CD, not an unknown one: it is built in, so its name tells no one anything (issue 52).
 */
function judge(username: string, account: AccountSettings | undefined, matches: boolean, forLogin: boolean): Verdict {
  if (account === undefined) return username === ADMIN ? { reason: 'account is disabled', counted: 'disabled' } : { reason: 'no such account', counted: 'unknown-user' };
  if (!matches || account.passwordHash === undefined) return { reason: account.passwordHash === undefined ? 'account has no password' : 'wrong password', counted: 'wrong-password' };
  if (!account.enabled) return { reason: 'account is disabled', counted: 'disabled' };
  if (forLogin && !account.capabilities.includes('login')) return { reason: 'account does not have the login capability', counted: 'no-login-capability' };
  return { passwordHash: account.passwordHash };
}

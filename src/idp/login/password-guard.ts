/**
 * The identity provider's password form gets the protection of svc's own login
 * (session/login.ts): the same failure window and lockout (SVC_SESSION_FAILURE_*), counted in
 * the state backend so that every replica sees one count, the same concurrency cap
 * (SVC_MAX_CONCURRENT_LOGIN_REQUESTS_COUNT, a cap of its own: a flood at the form must not
 * take the local login's slots, nor the reverse) and the same random delay after a failure.
 *
 * Counted twice, so that no spelling of a name escapes its budget:
 * - per connector and canonical name (canonical-name.ts: case, spaces and invisible characters
 *   folded as loosely as a directory compares them), `idp:<connector>:<canonical name>`, before
 *   the directory is asked: `Bob`, ` BOB` and `bob` are one count;
 * - per connector and the entry the directory resolved the name to (an LDAP DN, folded to
 *   lower case), `idp-entry:<connector>:<entry>`, after the search and before the password is
 *   tried (LoginContext.admitEntry): a spelling the fold does not know still lands on the
 *   entry's count. While the entry is locked its password is not tried, and the attempt counts
 *   as a failure of the name as well.
 * No local account can be called either (local names hold no `:`), so the two kinds of login
 * never share a count. Each attempt is counted before its password is tried (throttle.ts), so N
 * parallel guesses reach the directory at most SVC_SESSION_FAILURE_MAX_FAIL_COUNT times in a
 * window, on one replica or many, however they spell the name.
 *
 * Besides, one interaction takes at most MAX_ATTEMPTS_PER_INTERACTION posts (any usernames):
 * its page and CSRF token are not a reusable guessing oracle. Each failure is logged once, with
 * the connector, the username, the reason and the request id: at info when the person's attempt
 * failed, at error when the identity source did (a directory down is the operator's problem, and
 * that one line is all its log says above debug).
 */
import type { Logger } from 'pino';
import { TooManyAttempts, TooManyRequests } from '../../errors.js';
import type { LoginConcurrency } from '../../session/concurrency.js';
import { NO_LOGIN_OUTCOMES, type LoginOutcomes, type LoginReason } from '../../session/login-outcomes.js';
import { LockedUntilCleared, type LoginThrottle } from '../../session/throttle.js';
import type { StateBackend } from '../../state/state.js';
import { INTERACTION_TTL_S } from '../lifetimes.js';
import { canonicalUsername } from './canonical-name.js';
import type { PasswordOutcome } from './login-flow.js';

/** Posts one interaction's form takes, whatever the usernames; then the person starts again. */
export const MAX_ATTEMPTS_PER_INTERACTION = 10;
/** No directory name is longer; a longer one is refused without being counted or looked up. */
export const MAX_IDP_USERNAME_LENGTH = 256;

export interface PasswordAttempt {
  readonly uid: string;
  readonly connectorId: string;
  readonly username: string;
  readonly requestId: string;
}

export type GuardedOutcome =
  | PasswordOutcome
  /** The name is locked: `retryAfterS` until it opens, undefined when only an operator can open it. */
  | { readonly kind: 'locked'; readonly retryAfterS: number | undefined }
  /** The cap of checks in flight on this replica is reached, or the attempts in flight took the allowance. */
  | { readonly kind: 'busy' }
  /** This interaction has had its attempts. */
  | { readonly kind: 'exhausted' };

export interface PasswordGuardDeps {
  readonly state: StateBackend;
  readonly throttle: LoginThrottle;
  readonly concurrency: LoginConcurrency;
  readonly log: Pick<Logger, 'info' | 'error'>;
  /** The wait after a failure, outside the concurrency slot (session/login.ts randomFailureDelay). */
  readonly failureDelay: () => Promise<void>;
  /** Counts each attempt's outcome (svc_login_outcomes_total, method idp-password). */
  readonly outcomes?: LoginOutcomes;
}

/**
 * Given to the connector's login (LoginContext.admitEntry): counts the attempt against the entry
 * the name resolved to; false means the entry is locked and its password must not be tried.
 */
export type AdmitEntry = (entry: string) => Promise<boolean>;

export interface PasswordGuard {
  /** Runs `check` (the connector's login) if and when the limits allow. */
  attempt(attempt: PasswordAttempt, check: (admitEntry: AdmitEntry) => Promise<PasswordOutcome>): Promise<GuardedOutcome>;
}

const attemptsKey = (uid: string): string => `idp:form-attempts:${uid}`;
export const throttleName = (connectorId: string, username: string): string => `idp:${connectorId}:${canonicalUsername(username)}`;
/** DNs compare without regard to case (attribute names and `uid` values alike): folded, one entry is one name. */
export const entryThrottleName = (connectorId: string, entry: string): string => `idp-entry:${connectorId}:${entry.toLowerCase()}`;

/** The entry's admission during one attempt. */
type EntryAdmission = { readonly name: string; readonly attempt: number } | { readonly refused: GuardedOutcome };

export function createPasswordGuard(deps: PasswordGuardDeps): PasswordGuard {
  const outcomes = deps.outcomes ?? NO_LOGIN_OUTCOMES;
  function refused(attempt: PasswordAttempt, reason: string, counted: LoginReason): void {
    outcomes.record('idp-password', attempt.connectorId, counted, { user: attempt.username, detail: reason, source: { requestId: attempt.requestId } });
    const line = { connector: attempt.connectorId, username: attempt.username, reason, requestId: attempt.requestId };
    if (counted === 'unavailable') deps.log.error(line, 'identity provider: password login failed');
    else deps.log.info(line, 'identity provider: password login failed');
  }

  async function failed(attempt: PasswordAttempt, reason: string, counted: LoginReason): Promise<void> {
    refused(attempt, reason, counted);
    await deps.failureDelay();
  }

  /** The throttle's admission, or the outcome that refuses the attempt. */
  async function admit(name: string): Promise<number | GuardedOutcome> {
    try {
      return await deps.throttle.admit(name);
    } catch (err: unknown) {
      if (err instanceof LockedUntilCleared) return { kind: 'locked', retryAfterS: undefined };
      if (err instanceof TooManyAttempts) return err.retryAfterSeconds <= 1 ? { kind: 'busy' } : { kind: 'locked', retryAfterS: err.retryAfterSeconds };
      throw err;
    }
  }

  /** The admitEntry of one attempt, and what it admitted. One entry per attempt: a second is refused. */
  function entryGate(connectorId: string): { readonly admitEntry: AdmitEntry; readonly admission: () => EntryAdmission | undefined } {
    let admission: EntryAdmission | undefined;
    return {
      async admitEntry(entry) {
        if (admission !== undefined) return false;
        const name = entryThrottleName(connectorId, entry);
        const admitted = await admit(name);
        admission = typeof admitted === 'number' ? { name, attempt: admitted } : { refused: admitted };
        return typeof admitted === 'number';
      },
      admission: () => admission,
    };
  }

  /**
   * Settles each count the attempt took: a success clears it, a wrong password counts, a
   * directory that did not answer uncounts it (nothing was guessed). An attempt the entry's
   * lock refused counts as a failure of the name: it guessed, or would have.
   */
  async function settle(name: string, admitted: number, entry: EntryAdmission | undefined, outcome: PasswordOutcome): Promise<GuardedOutcome> {
    if (entry !== undefined && 'refused' in entry) {
      if (outcome.kind === 'unavailable') await deps.throttle.release(name);
      else if (entry.refused.kind === 'locked') await deps.throttle.recordFailure(name, admitted);
      else await deps.throttle.release(name);
      // Whatever the connector answered after the refusal, the login does not pass.
      return outcome.kind === 'unavailable' ? outcome : entry.refused;
    }
    const counts = entry === undefined ? [{ name, attempt: admitted }] : [{ name, attempt: admitted }, entry];
    for (const count of counts) {
      if (outcome.kind === 'ok') await deps.throttle.recordSuccess(count.name);
      else if (outcome.kind === 'wrong') await deps.throttle.recordFailure(count.name, count.attempt);
      else await deps.throttle.release(count.name);
    }
    return outcome;
  }

  /** The attempt's one log line (and wait) for what it came to. */
  async function report(attempt: PasswordAttempt, outcome: GuardedOutcome): Promise<void> {
    if (outcome.kind === 'ok') outcomes.record('idp-password', attempt.connectorId, 'ok', { user: attempt.username, source: { requestId: attempt.requestId } });
    else if (outcome.kind === 'wrong') await failed(attempt, outcome.why ?? 'wrong username or password', outcome.why === 'unknown user' ? 'unknown-user' : 'wrong-password');
    else if (outcome.kind === 'unavailable') refused(attempt, outcome.why, 'unavailable');
    else if (outcome.kind === 'refused') refused(attempt, `${outcome.message} (${outcome.why})`, 'refused');
    else if (outcome.kind === 'locked') await failed(attempt, 'the directory entry is locked after too many failures', 'locked');
    else await failed(attempt, 'too many attempts in flight for the directory entry', 'busy');
  }

  return {
    async attempt(attempt, check) {
      const posts = await deps.state.incr(attemptsKey(attempt.uid), { ttlMs: INTERACTION_TTL_S * 1000 });
      if (posts > MAX_ATTEMPTS_PER_INTERACTION) {
        await failed(attempt, 'too many attempts for one login page', 'locked');
        return { kind: 'exhausted' };
      }
      if (attempt.username.length > MAX_IDP_USERNAME_LENGTH) {
        await failed(attempt, `username longer than ${MAX_IDP_USERNAME_LENGTH} characters`, 'unknown-user');
        return { kind: 'wrong' };
      }
      const name = throttleName(attempt.connectorId, attempt.username);
      const admitted = await admit(name);
      if (typeof admitted !== 'number') {
        await failed(attempt, admitted.kind === 'locked' ? 'locked after too many failures' : 'too many attempts in flight', admitted.kind === 'locked' ? 'locked' : 'busy');
        return admitted;
      }
      let release;
      try {
        release = deps.concurrency.acquire();
      } catch (err: unknown) {
        await deps.throttle.release(name);
        if (!(err instanceof TooManyRequests)) throw err;
        refused(attempt, 'too many logins in progress', 'busy');
        return { kind: 'busy' };
      }
      const gate = entryGate(attempt.connectorId);
      let checked: PasswordOutcome;
      try {
        checked = await check(gate.admitEntry);
      } finally {
        release();
      }
      const outcome = await settle(name, admitted, gate.admission(), checked);
      await report(attempt, outcome);
      return outcome;
    },
  };
}

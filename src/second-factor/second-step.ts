/**
 * The second step of a local login: `{challenge, code}` (a TOTP or recovery code) or
 * `{challenge, webauthn}` (a passkey's assertion). As a pipeline: take the challenge (single
 * use, any replica) -> admit the attempt in the account's login throttle (a lockout locks this
 * step too) -> the account still as it was (enabled, login capability, the same password, a
 * factor) -> check the factor -> clear the count and issue the session, or count the failure,
 * wait as a wrong password waits and refuse. Every refusal says the same ("log in again"): the
 * challenge is spent either way, and the reason goes to the log line and the audit trail. One
 * says more: a right TOTP code of a step already accepted (typed right after enrolling) says to
 * wait for the next code, counted all the same.
 */
import type { Logger } from 'pino';
import type { AccountSettings } from '../accounts/account.js';
import { factorOf, hasSecondFactor } from '../accounts/account.js';
import type { AuditSource, AuditTrail } from '../audit/trail.js';
import { InvalidCredentials, SecondFactorRequired, type SecondFactorKind } from '../errors.js';
import type { LoginResult, SecondStepGate } from '../session/login.js';
import type { LoginOutcomes } from '../session/login-outcomes.js';
import type { LoginThrottle } from '../session/throttle.js';
import type { StateBackend } from '../state/state.js';
import { createChallenge, takeChallenge, type ChallengeRecord } from './challenge.js';
import { REUSED_CODE } from './codes.js';
import { inSpan } from '../tracing/spans.js';

export const WRONG_SECOND_FACTOR = 'invalid or already used second-factor code; log in again';
/** A right TOTP code of a step already accepted (codes.ts): the one typed to enrol, right after. */
export const REUSED_SECOND_FACTOR = 'this code was already used; wait for the next one (a new code every 30 seconds) and log in again';

/** What a second step presents: a code, or a passkey's assertion (checked by passkeys.ts). */
export type SecondFactorAnswer = { readonly code: string } | { readonly webauthn: unknown };

/** Checks one answer for an account: the factor that passed, or undefined. */
export type AnswerCheck = (account: AccountSettings, answer: SecondFactorAnswer, challenge: string) => Promise<SecondFactorKind | typeof REUSED_CODE | undefined>;

export interface SecondStepDeps {
  readonly state: StateBackend;
  readonly accounts: () => ReadonlyMap<string, AccountSettings>;
  readonly throttle: Pick<LoginThrottle, 'admit' | 'recordFailure' | 'recordSuccess'>;
  readonly passwordBinding: (hash: string) => string;
  readonly issueSession: (username: string, passwordHash: string) => Promise<LoginResult>;
  readonly check: AnswerCheck;
  readonly audit: AuditTrail;
  readonly log: Pick<Logger, 'info'>;
  readonly failureDelay: () => Promise<void>;
  readonly outcomes: LoginOutcomes;
}

export interface SecondStepRequest {
  readonly challenge: string;
  readonly answer: SecondFactorAnswer;
  readonly source: AuditSource;
}

/** The factors an account can answer with, for the 401's `factors`. */
export function factorsOf(account: AccountSettings): SecondFactorKind[] {
  const factor = factorOf(account);
  return [
    ...(factor.totpSealed !== undefined ? (['totp'] as const) : []),
    ...(factor.passkeys.length > 0 ? (['webauthn'] as const) : []),
    ...(factor.recoveryHashes.length > 0 ? (['recovery'] as const) : []),
  ];
}

/** The login service's side: which accounts need the step, and the challenge that starts it. */
export function secondStepGate(state: StateBackend): SecondStepGate {
  return {
    required: hasSecondFactor,
    async begin(account, pwh) {
      return new SecondFactorRequired(await createChallenge(state, { username: account.name, pwh }), factorsOf(account));
    },
  };
}

export type CompleteSecondStep = (request: SecondStepRequest) => Promise<LoginResult & { readonly username: string }>;

export function createSecondStep(deps: SecondStepDeps): CompleteSecondStep {
  function refuse(username: string, reason: string, source: AuditSource, factor?: string, message = WRONG_SECOND_FACTOR): never {
    deps.log.info({ username, reason, step: 'second-factor', ...(source.requestId !== undefined ? { requestId: source.requestId } : {}) }, 'login failed');
    deps.audit.record({ category: 'authentication', type: 'start', action: 'login', outcome: 'failure', reason, user: { name: username, id: username }, source, svc: { step: 'second-factor', ...(factor !== undefined ? { factor } : {}) } });
    throw new InvalidCredentials(message);
  }

  /** Why the account may not finish this login any more, or undefined. */
  function accountRefusal(record: ChallengeRecord, account: AccountSettings | undefined): string | undefined {
    if (account === undefined) return 'no such account';
    if (!account.enabled) return 'account is disabled';
    if (!account.capabilities.includes('login')) return 'account does not have the login capability';
    if (account.passwordHash === undefined || deps.passwordBinding(account.passwordHash) !== record.pwh) return 'the password changed after the password step';
    if (!hasSecondFactor(account)) return 'the second factor was removed after the password step';
    return undefined;
  }

  return async function completeSecondStep({ challenge, answer, source }) {
    const record = await takeChallenge(deps.state, challenge);
    if (record === undefined) {
      deps.log.info({ reason: 'unknown, used or expired challenge', step: 'second-factor' }, 'login failed');
      throw new InvalidCredentials('the second-factor challenge is unknown, used or expired; log in again');
    }
    const { username } = record;
    const attempt = await deps.throttle.admit(username);
    const account = deps.accounts().get(username);
    const refusal = accountRefusal(record, account);
    if (refusal !== undefined || account?.passwordHash === undefined) {
      await deps.throttle.recordFailure(username, attempt);
      deps.outcomes.record('local', '', 'refused');
      return refuse(username, refusal ?? 'account has no password', source);
    }
    const factor = await inSpan('svc.login.second_factor', { 'svc.factor': 'code' in answer ? 'code' : 'webauthn' }, () => deps.check(account, answer, challenge));
    if (factor === undefined || factor === REUSED_CODE) {
      await deps.throttle.recordFailure(username, attempt);
      deps.outcomes.record('local', '', 'wrong-code');
      await deps.failureDelay();
      if (factor === REUSED_CODE) return refuse(username, 'TOTP code of a time step already used', source, 'code', REUSED_SECOND_FACTOR);
      return refuse(username, 'wrong or reused second-factor answer', source, 'code' in answer ? 'code' : 'webauthn');
    }
    await deps.throttle.recordSuccess(username);
    deps.outcomes.record('local', '', 'ok');
    if (factor === 'recovery') {
      deps.audit.record({ category: 'authentication', type: 'info', action: 'recovery-code-used', outcome: 'success', user: { name: username, id: username }, source, svc: { left: factorOf(account).recoveryHashes.length - 1 } });
    }
    deps.audit.record({ category: 'authentication', type: 'start', action: 'login', outcome: 'success', user: { name: username, id: username }, source, svc: { step: 'second-factor', factor } });
    return { username, ...(await deps.issueSession(username, account.passwordHash)) };
  };
}

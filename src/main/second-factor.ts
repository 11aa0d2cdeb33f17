/**
 * The second factor of local accounts, wired: the factor store on svc-secret, the keys derived
 * from server.secretkey, the login's second step (codes and passkeys), and the enrolment of the
 * caller's own factors.
 */
import type { AccountSettings } from '../accounts/account.js';
import { checkCode, secondFactorKeysFrom } from '../second-factor/codes.js';
import { createEnrolment, type Enrolment } from '../second-factor/enrolment.js';
import { createFactorStore } from '../second-factor/factor-store.js';
import { createPasskeyEnrolment, type PasskeyEnrolment } from '../second-factor/passkey-enrolment.js';
import { createPasskeyLogin, type PasskeyLogin } from '../second-factor/passkey-login.js';
import { createSecondStep, type AnswerCheck, type CompleteSecondStep } from '../second-factor/second-step.js';
import { randomFailureDelay, type LoginService } from '../session/login.js';
import { localPerson } from '../person.js';
import type { EndOtherSessions } from '../second-factor/other-sessions.js';
import type { SessionRegistry } from '../session/registry.js';
import type { LoginThrottle } from '../session/throttle.js';
import type { Services } from './services.js';

export interface SecondFactorFeature {
  readonly complete: CompleteSecondStep;
  readonly passkeyLogin: PasskeyLogin;
  readonly enrolment: Enrolment;
  readonly passkeys: PasskeyEnrolment;
}

export function buildSecondFactor(services: Services, throttle: LoginThrottle, login: Pick<LoginService, 'issueSession' | 'checkPassword'>, passwordBinding: (hash: string) => string, sessions: Pick<SessionRegistry, 'endOthers'>): SecondFactorFeature {
  const { state, settings, store, audit, log, now } = services;
  const accounts = (): ReadonlyMap<string, AccountSettings> => settings.current().accounts;
  const url = () => settings.current().url;
  const factors = createFactorStore(store);
  const keys = secondFactorKeysFrom(() => settings.current().serverSecretKey);
  const passkeyLogin = createPasskeyLogin({ state, accounts, factors, url });
  // The recent proof of a factor change: the login's own password check, throttle and lockout.
  const checkPassword = (request: { username: string; password: string }, options: { readonly keepFailures: boolean }) => login.checkPassword(request, options);
  // Enrolment ends the other sessions of the local account (never an SSO user's of the same name).
  const endOtherSessions: EndOtherSessions = (account, keepId, context) => sessions.endOthers(localPerson(account), keepId, context);
  const check: AnswerCheck = async (account, answer, challenge) => {
    if ('code' in answer) return checkCode({ state, factors, keys, now }, account, answer.code);
    return (await passkeyLogin.check(account, answer.webauthn, challenge)) ? 'webauthn' : undefined;
  };
  return {
    passkeyLogin,
    complete: createSecondStep({
      state,
      accounts,
      throttle,
      passwordBinding,
      issueSession: (username, hash) => login.issueSession(username, hash),
      check,
      audit,
      log,
      failureDelay: randomFailureDelay,
      outcomes: services.loginOutcomes,
    }),
    enrolment: createEnrolment({
      state,
      accounts,
      factors,
      keys,
      checkPassword,
      throttle,
      endOtherSessions,
      log,
      required: () => settings.current().mfaRequired,
      issuer: () => `svc (${new URL(url()).host})`,
      audit,
      now,
    }),
    passkeys: createPasskeyEnrolment({ state, accounts, factors, keys, url, checkPassword, throttle, endOtherSessions, log, audit, now }),
  };
}

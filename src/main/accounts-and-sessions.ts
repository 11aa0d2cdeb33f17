/**
 * The accounts and sessions feature: login throttle and concurrency cap, login service,
 * account queries and writes, and their routers (the JSON API and the login page's form post).
 */
import { createAccounts } from '../accounts/account-queries.js';
import { createApiTokens, type ApiTokens } from '../accounts/api-tokens.js';
import type { AuditTrail } from '../audit/trail.js';
import { auditUserOf } from '../http/audit-caller.js';
import type { DeleteStoredToken } from '../session/logout.js';
import { createPasswordChange } from '../accounts/password-change.js';
import { accountRoutes } from '../http/routes/account.js';
import { loginFormRoutes } from '../http/routes/login-form.js';
import { loginRecorder } from '../http/routes/record-login.js';
import { secondFactorRoutes } from '../http/routes/second-factor.js';
import { sessionRoutes } from '../http/routes/session.js';
import { sessionListRoutes } from '../http/routes/session-list.js';
import { createSessionAccess } from '../session/session-access.js';
import { createLoginConcurrency } from '../session/concurrency.js';
import { createLoginService } from '../session/login.js';
import { createLoginThrottle, type LoginThrottle } from '../session/throttle.js';
import type { Feature } from './feature.js';
import type { Authentication } from './authentication.js';
import { secondStepGate } from '../second-factor/second-step.js';
import { buildSecondFactor } from './second-factor.js';
import type { Services } from './services.js';

/**
 * The one login throttle of the server: password logins and workload token exchanges count in
 * it (an exchange's names, `exchange:<entry>:<hash>` and `exchange-from:<entry>:<address>`,
 * hold a `:`, which no account name does, so neither can touch the other's counts). The
 * accounts feature closes it.
 */
export function buildLoginThrottle(services: Services): LoginThrottle {
  const { state, log, now } = services;
  return createLoginThrottle({ state, limits: services.loginLimits, log, registry: services.metrics.registry, now, audit: services.audit });
}

export function buildAccounts(services: Services, authentication: Authentication, throttle: LoginThrottle): Feature {
  const { settings, log, store, rights, now } = services;
  const accountMap = () => settings.current().accounts;
  const limits = services.loginLimits;
  // The gate (which accounts need a second step, and their challenge) comes first: the second
  // step itself needs the login's session issuing.
  const gate = secondStepGate(services.state);
  const login = createLoginService({
    accounts: accountMap,
    throttle,
    concurrency: createLoginConcurrency(limits.maxConcurrentLogins),
    signer: authentication.signer,
    sessionDurationMs: () => settings.current().sessionDurationMs,
    log,
    now,
    outcomes: services.loginOutcomes,
    secondStep: gate,
  });
  const secondFactor = buildSecondFactor(services, throttle, login, (hash) => authentication.signer.passwordBinding(hash), authentication.sessions);
  const accounts = createAccounts({ accounts: accountMap, rights });
  const configuredUrl = () => settings.current().url;
  const recordLogin = loginRecorder(authentication.sessions, services.trustedProxies, log);
  const apiTokens = createApiTokens({ store, accounts, signer: authentication.signer, now, maxTokens: services.maxApiTokensPerAccount });
  authentication.logout.deleteStoredWith('apiKey', deleteOwnApiToken(apiTokens, services.audit));
  return {
    name: 'accounts',
    routers: [
      sessionRoutes({
        login, logout: authentication.logout, recordLogin, trustedProxies: services.trustedProxies, configuredUrl,
        secondStep: secondFactor.complete, passkeyLogin: secondFactor.passkeyLogin,
      }),
      sessionListRoutes({ access: createSessionAccess({ registry: authentication.sessions, rights }), trustedProxies: services.trustedProxies }),
      loginFormRoutes({ login, recordLogin, configuredUrl, trustedProxies: services.trustedProxies }),
      // Before the account routes: their GET /:name would take 'second-factor' for an account name.
      secondFactorRoutes({ enrolment: secondFactor.enrolment, passkeys: secondFactor.passkeys, trustedProxies: services.trustedProxies }),
      accountRoutes({
        accounts,
        apiTokens,
        changePassword: createPasswordChange({ store, accounts, checkPassword: (r) => login.checkPassword(r), now }),
        login,
        recordLogin,
        configuredUrl,
        audit: services.audit,
        trustedProxies: services.trustedProxies,
      }),
    ],
    close: () => throttle.close(),
  };
}

/** A logout with a local API token deletes its record as `svc account delete-token` does, with the same audit event. */
function deleteOwnApiToken(apiTokens: Pick<ApiTokens, 'remove'>, audit: AuditTrail): DeleteStoredToken {
  return async function deleteOnLogout(principal, source) {
    await apiTokens.remove(principal.username, principal.apiTokenId);
    audit.record({ category: 'iam', type: 'deletion', action: 'token-deleted', outcome: 'success', user: auditUserOf(principal), source, svc: { account: principal.username, tokenId: principal.apiTokenId } });
  };
}

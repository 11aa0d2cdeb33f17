/**
 * The accounts and sessions feature: login throttle and concurrency cap, login service,
 * account queries and writes, and their routers (the JSON API and the login page's form post).
 */
import { createAccounts } from '../accounts/account-queries.js';
import { createApiTokens, DEFAULT_MAX_API_TOKENS, MAX_API_TOKENS_ENV } from '../accounts/api-tokens.js';
import { createPasswordChange } from '../accounts/password-change.js';
import { accountRoutes } from '../http/routes/account.js';
import { loginFormRoutes } from '../http/routes/login-form.js';
import { sessionRoutes } from '../http/routes/session.js';
import { createLoginConcurrency } from '../session/concurrency.js';
import { readInt } from '../session/limits.js';
import { createLoginService } from '../session/login.js';
import { createLoginThrottle, type LoginThrottle } from '../session/throttle.js';
import type { Feature } from './feature.js';
import type { Authentication } from './authentication.js';
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
  const login = createLoginService({
    accounts: accountMap,
    throttle,
    concurrency: createLoginConcurrency(limits.maxConcurrentLogins),
    signer: authentication.signer,
    sessionDurationMs: () => settings.current().sessionDurationMs,
    log,
    now,
    outcomes: services.loginOutcomes,
  });
  const accounts = createAccounts({ accounts: accountMap, rights });
  const configuredUrl = () => settings.current().url;
  return {
    name: 'accounts',
    routers: [
      sessionRoutes({ login, revocation: authentication.revocation, configuredUrl, trustedProxies: services.trustedProxies, audit: services.audit }),
      loginFormRoutes({ login, configuredUrl, trustedProxies: services.trustedProxies }),
      accountRoutes({
        accounts,
        apiTokens: createApiTokens({ store, accounts, signer: authentication.signer, now, maxTokens: readInt(services.env, log, MAX_API_TOKENS_ENV, DEFAULT_MAX_API_TOKENS, 1) }),
        changePassword: createPasswordChange({ store, accounts, checkPassword: (r) => login.checkPassword(r), now }),
        login,
        configuredUrl,
        audit: services.audit,
        trustedProxies: services.trustedProxies,
      }),
    ],
    close: () => throttle.close(),
  };
}

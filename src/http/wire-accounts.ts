/**
 * The accounts and sessions feature wired onto the shared services: token signer, revocation,
 * login throttle and concurrency cap, login service, account queries and writes, and what
 * they give the app (the authenticate middleware and two routers). src/features.ts calls it.
 */
import type Router from '@koa/router';
import type Koa from 'koa';
import { createAccounts } from '../accounts/accounts.js';
import { createApiTokens } from '../accounts/api-tokens.js';
import { createPasswordChange } from '../accounts/password-change.js';
import type { Services } from '../server.js';
import { createAccountCutoffs, followAccounts } from '../session/account-cutoffs.js';
import { createAuthenticator, type Authenticator, type ExternalVerifier } from '../session/authenticate.js';
import { createLoginConcurrency } from '../session/concurrency.js';
import { readLoginLimits } from '../session/limits.js';
import { createLoginService } from '../session/login.js';
import { createRevocation } from '../session/revocation.js';
import { createLoginThrottle } from '../session/throttle.js';
import { createTokenSigner } from '../session/tokens.js';
import { authMiddleware } from './auth.js';
import { accountRoutes } from './routes/account.js';
import { sessionRoutes } from './routes/session.js';
import type { AppState } from './state.js';

export interface AccountsFeature {
  readonly authenticate: Koa.Middleware<AppState>;
  /** The same checks without Koa, for the extension gateway. */
  readonly authenticator: Authenticator;
  readonly routers: readonly Router<AppState>[];
  close(): Promise<void>;
}

export interface AccountsOptions {
  /** Verifiers for SSO tokens (other issuers), added by the SSO feature. */
  readonly external?: readonly ExternalVerifier[];
  readonly now?: () => number;
}

export async function wireAccounts(services: Services, options: AccountsOptions = {}): Promise<AccountsFeature> {
  const { settings, state, log, store, rights } = services;
  const now = options.now ?? Date.now;
  const accountMap = () => settings.current().accounts;
  const signer = createTokenSigner({ secretKey: () => settings.current().serverSecretKey, now });
  const revocation = await createRevocation({ state, log, now });
  const cutoffs = await createAccountCutoffs({ state, log, now });
  const stopFollowing = await followAccounts(cutoffs, settings);
  const limits = readLoginLimits(services.env, log);
  const throttle = createLoginThrottle({ state, limits, log, registry: services.metrics.registry, now });
  const login = createLoginService({
    accounts: accountMap,
    throttle,
    concurrency: createLoginConcurrency(limits.maxConcurrentLogins),
    signer,
    sessionDurationMs: () => settings.current().sessionDurationMs,
    log,
    now,
  });
  const accounts = createAccounts({ accounts: accountMap, rights });
  const configuredUrl = () => settings.current().url;
  const authenticator = createAuthenticator({ signer, accounts: accountMap, revocation, disabledAt: cutoffs.disabledAt, external: options.external ?? [] });
  return {
    authenticate: authMiddleware(authenticator.authenticate, configuredUrl),
    authenticator,
    routers: [
      sessionRoutes({ login, revocation, configuredUrl }),
      accountRoutes({
        accounts,
        apiTokens: createApiTokens({ store, accounts, signer, now }),
        changePassword: createPasswordChange({ store, accounts, checkPassword: (r) => login.checkPassword(r), now }),
        login,
        configuredUrl,
      }),
    ],
    async close() {
      stopFollowing();
      await cutoffs.close();
      await revocation.close();
      await throttle.close();
    },
  };
}

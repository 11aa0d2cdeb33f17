/**
 * Personal API tokens of SSO users (src/ssotokens/): their verifier joins the authentication
 * stage, their routes join the app. Users of the bundled provider only: their connector can be
 * asked about them again; without it, making a token is refused with the reason.
 */
import type { AuditSource } from '../audit/trail.js';
import { ssoTokenRoutes } from '../http/routes/sso-tokens.js';
import { Unavailable } from '../errors.js';
import { createSealer, type Sealer } from '../lib/sealed.js';
import type { DeleteStoredToken } from '../session/logout.js';
import type { TokenVerifier } from '../session/token-verifier.js';
import { createPersonalTokens } from '../ssotokens/personal-tokens.js';
import { createRecheck, type IdentitySource } from '../ssotokens/recheck.js';
import { createSsoTokenFormat } from '../ssotokens/token-format.js';
import { createSsoTokenStore } from '../ssotokens/token-store.js';
import { createSsoTokenVerifier, TOKENS_ACTION, TOKENS_OBJECT, TOKENS_RESOURCE } from '../ssotokens/verifier.js';
import type { Principal } from '../principal.js';
import type { Feature } from './feature.js';
import type { Services } from './services.js';

export interface SsoTokensStage {
  readonly verifier: TokenVerifier;
  readonly feature: Feature;
  /** Deletes an SSO user's own personal token; a logout with one does (session/logout.ts). */
  readonly deleteOwn: DeleteStoredToken;
}

/** `provider`: the bundled provider's users and issuer, when it is the SSO provider in force. */
export function prepareSsoTokens(services: Services, provider: { readonly identities: IdentitySource; readonly issuer: string } | undefined): SsoTokensStage {
  const { settings, state, store, log, now, rights } = services;
  let sealedWith: string | undefined;
  let sealer: Sealer | undefined;
  // Read per use, so a rotated server.secretkey takes effect (identities sealed under the old one no longer open).
  const currentSealer = (): Sealer => {
    const key = settings.current().serverSecretKey;
    if (key === undefined) throw new Unavailable('personal API tokens need server.secretkey in svc-secret');
    if (key !== sealedWith || sealer === undefined) {
      sealer = createSealer(key, 'sso-token-identity');
      sealedWith = key;
    }
    return sealer;
  };
  const format = createSsoTokenFormat({ secretKey: () => settings.current().serverSecretKey, now });
  const tokenStore = createSsoTokenStore(store);
  const users = () => settings.current().ssoTokens;
  const allowed = (principal: Principal) => rights.allows(principal, TOKENS_RESOURCE, TOKENS_ACTION, TOKENS_OBJECT);
  const tokensLog = log.child({ feature: 'sso-tokens' });
  const noSource: IdentitySource = {
    find: () => Promise.resolve(undefined),
    refresh: () => Promise.reject(new Unavailable('the bundled identity provider is not in force')),
  };
  const recheck = createRecheck({
    source: provider?.identities ?? noSource, state, sealer: currentSealer, log: tokensLog, now,
    everyMs: () => settings.current().ssoTokenLimits.groupsRecheckMs,
    async onRefused(user, reason) {
      await tokenStore.dropUser(user.sub);
      services.audit.record({
        category: 'iam', type: 'deletion', action: 'sso-identity-refused', outcome: 'success', reason,
        user: { id: user.sub, name: user.name }, source: {} satisfies AuditSource, svc: { tokenKind: 'sso', connector: user.connectorId },
      });
    },
  });
  const verifier = createSsoTokenVerifier({ format, users, recheck, providerIssuer: provider?.issuer ?? '', allowed });
  const tokens = createPersonalTokens({
    identities: provider?.identities, providerIssuer: provider?.issuer, format, store: tokenStore, recheck, users, sealer: currentSealer, allowed,
    maxLifetimeMs: () => settings.current().ssoTokenLimits.maxLifetimeMs,
    maxTokens: services.maxApiTokensPerAccount,
    audit: services.audit, now,
  });
  return { verifier, deleteOwn: (principal, source) => tokens.remove(principal, principal.apiTokenId, source), feature: { name: 'sso-tokens', routers: [ssoTokenRoutes({ tokens, trustedProxies: services.trustedProxies })] } };
}

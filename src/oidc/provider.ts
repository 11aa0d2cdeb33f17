/**
 * The provider the SSO client talks to, as one small value: built from `oidc.config` today and
 * from the bundled provider later (issuer `<url>/api/idp`, client `svc`), so login, callback,
 * logout and token verification never read either configuration themselves.
 */
import type { ClaimRules } from '../claims/rules-config.js';
import { parseDuration } from '../lib/duration.js';
import type { OidcConfig } from './config.js';

export interface SsoProvider {
  readonly issuer: string;
  readonly clientID: string;
  /** undefined for a public client (PKCE without a secret). */
  readonly clientSecret: string | undefined;
  /** Audiences a token may carry; any one of them is enough. */
  readonly audiences: readonly string[];
  readonly skipAudienceCheckWhenTokenHasNoAudience: boolean;
  readonly scopes: readonly string[];
  /** The `claims` request parameter's `id_token` member; undefined when none were asked for. */
  readonly idTokenClaims: Readonly<Record<string, unknown>> | undefined;
  /** Where the provider sends the browser back: `<url>/auth/callback` or `<url>/pkce/verify`. */
  readonly redirectPath: '/auth/callback' | '/pkce/verify';
  readonly logoutURL: string | undefined;
  readonly userInfo: { readonly path: string; readonly cacheMs: number | undefined } | undefined;
  readonly tls: { readonly rootCA: string | undefined; readonly insecureSkipVerify: boolean };
  /** oidc.config's claim rules (docs/claims.md), applied to every ID token taken; absent for the bundled provider, whose connectors apply their own. */
  readonly claimRules?: ClaimRules;
}

export function ssoProviderFromOidc(config: OidcConfig, insecureSkipVerify: boolean): SsoProvider {
  const claims = Object.keys(config.requestedIDTokenClaims).length > 0 ? config.requestedIDTokenClaims : undefined;
  const userInfo = config.enableUserInfoGroups && config.userInfoPath !== undefined
    ? { path: config.userInfoPath, cacheMs: config.userInfoCacheExpiration === undefined ? undefined : parseDuration(config.userInfoCacheExpiration) }
    : undefined;
  return {
    issuer: config.issuer,
    clientID: config.clientID,
    clientSecret: config.clientSecret,
    audiences: config.audiences,
    skipAudienceCheckWhenTokenHasNoAudience: config.skipAudienceCheckWhenTokenHasNoAudience,
    scopes: config.requestedScopes,
    idTokenClaims: claims,
    redirectPath: config.enablePKCEAuthentication ? '/pkce/verify' : '/auth/callback',
    logoutURL: config.logoutURL,
    userInfo,
    tls: { rootCA: config.rootCA, insecureSkipVerify },
    claimRules: config.claimRules,
  };
}

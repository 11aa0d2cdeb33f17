/**
 * `svc logout` after an SSO login: the refresh token is revoked at the provider (RFC 7009), so
 * a copy of the config file cannot renew the login. Best effort, as the local removal must
 * happen even when the provider is unreachable.
 */
import * as oidc from 'openid-client';
import { ApiClient, type FetchLike } from '../api-client.js';
import { discoverProvider, ssoProvider } from './discovery.js';

export interface RevokeTarget {
  readonly server: string;
  readonly insecure: boolean;
  readonly refreshToken: string;
}

/** Best effort: tells the provider the refresh token is no longer wanted; failures are ignored. */
export async function revokeRefreshToken(login: RevokeTarget, deps: { readonly fetch?: FetchLike }): Promise<boolean> {
  try {
    const fetchOption = deps.fetch !== undefined ? { fetch: deps.fetch } : {};
    const provider = await ssoProvider(new ApiClient({ server: login.server, insecure: login.insecure, ...fetchOption }));
    const config = await discoverProvider(provider, { insecure: login.insecure, ...fetchOption });
    if (config.serverMetadata().revocation_endpoint === undefined) return false;
    await oidc.tokenRevocation(config, login.refreshToken, { token_type_hint: 'refresh_token' });
    return true;
  } catch {
    // The token is removed locally all the same; an unreachable provider must not block logout.
    return false;
  }
}

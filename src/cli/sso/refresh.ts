/**
 * Keeps an SSO login alive: before a command, an ID token that has expired or expires within
 * REFRESH_MARGIN_S is renewed with the stored refresh token (refresh_token grant, the same
 * public client as the login) and both tokens are replaced in the config file.
 *
 * The refresh runs under the config file's lock and re-reads the file first: the provider
 * rotates refresh tokens on use, so two commands started together must not both spend the
 * same one; the second finds the first one's fresh token and uses it. The lock is held across
 * one round trip to the provider; a provider slower than the lock's stale time (10 s) lets a
 * second command in, which may then spend an already used refresh token and be told to log in
 * again.
 */
import { decodeJwt } from 'jose';
import * as oidc from 'openid-client';
import { ApiClient, type FetchLike } from '../api-client.js';
import { loginFor, updateConfig, withTokens } from '../config-file.js';
import { CliError } from '../errors.js';
import { discoverProvider, providerReason, ssoProvider } from './discovery.js';

/** Renew this long before expiry, so a token does not run out on its way to the server. */
export const REFRESH_MARGIN_S = 60;

export interface StoredLogin {
  readonly server: string;
  readonly insecure: boolean;
  readonly token: string;
  readonly refreshToken?: string;
}

export interface RefreshDeps {
  readonly configFile: string;
  /** Milliseconds since the epoch (injected: tests move the clock instead of waiting). */
  readonly now: () => number;
  readonly fetch?: FetchLike;
}

/** True when `token` is a JWT whose `exp` is past or within the margin; other tokens never. */
export function needsRefresh(token: string, nowMs: number): boolean {
  let exp: unknown;
  try {
    exp = decodeJwt(token).exp;
  } catch {
    return false;
  }
  return typeof exp === 'number' && exp - nowMs / 1000 < REFRESH_MARGIN_S;
}

/** The token to send: the stored one, or a renewed one when it was due and renewable. */
export async function freshToken(login: StoredLogin, deps: RefreshDeps): Promise<string> {
  if (login.refreshToken === undefined || !needsRefresh(login.token, deps.now())) return login.token;
  let renewed = login.token;
  await updateConfig(deps.configFile, async (config) => {
    const current = loginFor(config, login.server);
    if (current.token !== undefined && current.token !== login.token && !needsRefresh(current.token, deps.now())) {
      renewed = current.token;
      return config;
    }
    const tokens = await refresh({ ...login, refreshToken: current.refreshToken ?? (login.refreshToken as string) }, deps);
    renewed = tokens.idToken;
    return withTokens(config, login.server, tokens.idToken, tokens.refreshToken);
  });
  return renewed;
}

async function refresh(login: StoredLogin & { refreshToken: string }, deps: RefreshDeps): Promise<{ idToken: string; refreshToken: string }> {
  const fetchOption = deps.fetch !== undefined ? { fetch: deps.fetch } : {};
  const api = new ApiClient({ server: login.server, insecure: login.insecure, ...fetchOption });
  const provider = await ssoProvider(api);
  const config = await discoverProvider(provider, { insecure: login.insecure, ...fetchOption });
  let tokens: oidc.TokenEndpointResponse;
  try {
    tokens = await oidc.refreshTokenGrant(config, login.refreshToken);
  } catch (err: unknown) {
    throw refreshFailure(err, login.server, provider.issuer);
  }
  if (tokens.id_token === undefined) {
    throw new CliError(`the identity provider renewed the login without an ID token; log in again: svc login ${login.server} --sso`);
  }
  return { idToken: tokens.id_token, refreshToken: tokens.refresh_token ?? login.refreshToken };
}

/**
 * Only `invalid_grant` ends the login (the refresh token used, revoked or expired, the user
 * refused upstream); any other answer (`temporarily_unavailable`, a 5xx, the network) is a
 * failure to try again later, with the stored login kept.
 */
export function refreshFailure(err: unknown, server: string, issuer: string): CliError {
  if (err instanceof oidc.ResponseBodyError && err.error === 'invalid_grant') {
    return new CliError(`the SSO session has ended (${err.error}); log in again: svc login ${server} --sso`, { cause: err });
  }
  return new CliError(`cannot renew the SSO login at ${issuer} now: ${providerReason(err)}; try again later`, { cause: err });
}

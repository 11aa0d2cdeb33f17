/**
 * The start of a browser login: state, nonce and PKCE verifier are made here and travel in
 * one sealed cookie (AES-GCM under a key derived from server.secretkey) valid five minutes, so
 * any replica can finish the login and nobody can read or forge the values.
 */
import * as client from 'openid-client';
import { Unauthenticated } from '../errors.js';
import type { ProviderClient } from './client.js';
import { safeReturnUrl } from './return-url.js';
import type { Sealer } from '../lib/sealed.js';

export const LOGIN_STATE_COOKIE = 'svc.oauthstate';
export const LOGIN_STATE_TTL_MS = 5 * 60_000;

export interface LoginState {
  readonly state: string;
  readonly nonce: string;
  readonly verifier: string;
  readonly returnUrl: string;
  /** Milliseconds since the epoch. */
  readonly expiresAt: number;
}

export interface LoginStart {
  readonly authorizationUrl: string;
  readonly cookie: string;
}

export interface LoginStartDeps {
  readonly client: ProviderClient;
  readonly sealer: () => Sealer;
  /** svc's `url`: the redirect URI is built on it, and return URLs must stay on it. */
  readonly serverUrl: () => string;
  readonly now: () => number;
}

export function redirectUri(serverUrl: string, path: string): string {
  return `${serverUrl.replace(/\/+$/, '')}${path}`;
}

/**
 * `connectorId`: the login page's choice among the bundled provider's connectors, passed on as
 * Dex's `connector_id` parameter (the provider ignores an unknown one and shows its chooser).
 */
export async function startLogin(deps: LoginStartDeps, rawReturnUrl: string | undefined, connectorId?: string): Promise<LoginStart> {
  const { provider } = deps.client;
  const configuration = await deps.client.configuration();
  const login: LoginState = {
    state: client.randomState(),
    nonce: client.randomNonce(),
    verifier: client.randomPKCECodeVerifier(),
    returnUrl: safeReturnUrl(rawReturnUrl, deps.serverUrl()),
    expiresAt: deps.now() + LOGIN_STATE_TTL_MS,
  };
  const url = client.buildAuthorizationUrl(configuration, {
    redirect_uri: redirectUri(deps.serverUrl(), provider.redirectPath),
    scope: provider.scopes.join(' '),
    state: login.state,
    nonce: login.nonce,
    code_challenge: await client.calculatePKCECodeChallenge(login.verifier),
    code_challenge_method: 'S256',
    ...(provider.idTokenClaims !== undefined ? { claims: JSON.stringify({ id_token: provider.idTokenClaims }) } : {}),
    ...(connectorId !== undefined ? { connector_id: connectorId } : {}),
  });
  return { authorizationUrl: url.href, cookie: deps.sealer().seal(JSON.stringify(login)) };
}

/** The login this browser started, or Unauthenticated when the cookie is missing, forged or stale. */
export function openLoginState(deps: Pick<LoginStartDeps, 'sealer' | 'now'>, cookie: string | undefined): LoginState {
  const opened = cookie === undefined || cookie === '' ? undefined : deps.sealer().open(cookie);
  if (opened === undefined) throw new Unauthenticated('no login in progress in this browser (or it was started with another key): start again at /auth/login');
  const login = JSON.parse(opened) as LoginState;
  if (login.expiresAt <= deps.now()) throw new Unauthenticated('the login took longer than 5 minutes: start again at /auth/login');
  return login;
}

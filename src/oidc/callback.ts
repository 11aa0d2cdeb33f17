/**
 * The end of a browser login: the code is exchanged (with the PKCE verifier and, for a
 * confidential client, the secret), the ID token is checked by openid-client (signature, issuer,
 * audience, nonce, expiry) and then by svc's own verifier (SPEC.md's audience rule, the
 * principal). A `sub` that is reserved (a role prefix, a local account's name: src/principal.ts)
 * is refused before anything is kept, so it never holds a session. A refresh token, when the
 * provider gives one, is kept server-side, sealed.
 */
import * as client from 'openid-client';
import { printable } from '../lib/printable.js';
import { Unauthenticated } from '../errors.js';
import { reservedExternalName, type LocalAccountNames } from '../principal.js';
import type { ProviderClient } from './client.js';
import { describeFailure } from '../lib/tls-fetch.js';
import type { LoginState } from './login-start.js';
import type { SessionRefresh } from './refresh.js';
import type { UserInfoGroups } from './userinfo-groups.js';
import type { SsoVerifier } from './sso-verifier.js';

export interface CallbackDeps {
  readonly client: ProviderClient;
  readonly verifier: SsoVerifier;
  readonly refresh: Pick<SessionRefresh, 'keep'>;
  readonly userInfo: UserInfoGroups | undefined;
  /** The local accounts now: a `sub` equal to one of their names is refused. */
  readonly localAccountNames: () => LocalAccountNames;
}

/** The login of an SSO user whose `sub` is reserved: the login page says so (docs/rbac.md). */
export class ReservedSubject extends Unauthenticated {
  constructor(readonly sub: string, readonly issuer: string, readonly reason: string) {
    super(`single sign-on user '${printable(sub)}' from ${issuer} cannot log in: ${reason}; svc never takes a name from the identity provider for a local account or a role. Give the user another subject at the provider, or rename the local account`);
  }
}

export interface FinishedLogin {
  readonly idToken: string;
  /** The name (oidc.config's mapped username, else the `sub`), for the log line of the login. */
  readonly username: string;
  /** The `sub`: the person's id, which the session is recorded under whatever the mapping (issue 54). */
  readonly subject: string;
  readonly displayName?: string;
  /** The ID token's id: the session's in the registry. */
  readonly tokenId: string;
  /** The provider's session id (`sid`), when the ID token has one: back-channel logout names it. */
  readonly sid?: string;
  readonly issuer: string;
  /** Seconds since the epoch. */
  readonly expiresAt: number;
  readonly returnUrl: string;
}

/** `callbackUrl`: the URL the provider redirected to, query included. */
export async function finishLogin(deps: CallbackDeps, login: LoginState, callbackUrl: URL): Promise<FinishedLogin> {
  const error = callbackUrl.searchParams.get('error');
  if (error !== null) {
    const description = callbackUrl.searchParams.get('error_description');
    throw new Unauthenticated(`the provider refused the login: ${printable(error)}${description === null ? '' : ` (${printable(description)})`}`);
  }
  const configuration = await deps.client.configuration();
  let tokens: Awaited<ReturnType<typeof client.authorizationCodeGrant>>;
  try {
    tokens = await client.authorizationCodeGrant(configuration, callbackUrl, {
      pkceCodeVerifier: login.verifier,
      expectedState: login.state,
      expectedNonce: login.nonce,
      idTokenExpected: true,
    });
  } catch (err: unknown) {
    throw new Unauthenticated(`the login could not be completed: ${describeFailure(err)}`);
  }
  const idToken = tokens.id_token as string;
  // The access token is kept before the principal is made, so its groups are read with it.
  const claims = await deps.verifier.verifyIgnoringExpiry(idToken);
  if (deps.userInfo !== undefined) await deps.userInfo.remember(claims, tokens.access_token);
  const principal = await deps.verifier.verify(idToken);
  const reserved = reservedExternalName(principal.username, deps.localAccountNames());
  if (reserved !== undefined) throw new ReservedSubject(principal.username, principal.issuer, reserved);
  if (tokens.refresh_token !== undefined) await deps.refresh.keep(principal.tokenId, tokens.refresh_token);
  const sid = claims.payload['sid'];
  return {
    idToken, username: principal.username, subject: principal.subject ?? principal.username, tokenId: principal.tokenId, issuer: principal.issuer,
    ...(principal.displayName !== undefined ? { displayName: principal.displayName } : {}),
    ...(typeof sid === 'string' && sid !== '' ? { sid } : {}),
    expiresAt: principal.expiresAt ?? claims.exp, returnUrl: login.returnUrl,
  };
}

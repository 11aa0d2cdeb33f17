/**
 * Whether a well-signed svc token is still honoured (DESIGN §3), as a pipeline of small named
 * checks run in order; the first that fails names the reason. The account-based checks are
 * synchronous and run first; the revocation look-up (one state-backend read) runs last.
 */
import type { AccountSettings } from '../accounts/config.js';
import { Unauthenticated } from '../errors.js';
import type { Revocation } from './revocation.js';
import type { TokenClaims } from './tokens.js';

type Check = (claims: TokenClaims, account: AccountSettings) => string | undefined;

function accountEnabled(claims: TokenClaims, account: AccountSettings): string | undefined {
  return account.enabled ? undefined : `account '${claims.username}' is disabled`;
}

function hasCapability(claims: TokenClaims, account: AccountSettings): string | undefined {
  return account.capabilities.includes(claims.kind) ? undefined : `account '${claims.username}' does not have the ${claims.kind} capability`;
}

/** API tokens are revoked by deleting their record: the jti must still be listed. */
function apiTokenListed(claims: TokenClaims, account: AccountSettings): string | undefined {
  if (claims.kind !== 'apiKey') return undefined;
  return account.tokens.some((t) => t.id === claims.jti) ? undefined : `token '${claims.jti}' of account '${claims.username}' was deleted`;
}

/**
 * A session must be newer than the last password change. `iat` has whole seconds; a password
 * change stores a whole-second mtime and only commits once that second has begun (see
 * accounts.ts), so `iat >= mtime` keeps the sessions made with the new password and drops every
 * older one. API tokens survive a password change (unlike Argo CD, where users lose them).
 */
function issuedAfterPasswordChange(claims: TokenClaims, account: AccountSettings): string | undefined {
  if (claims.kind !== 'login' || account.passwordMtime === undefined) return undefined;
  return claims.iat * 1000 >= account.passwordMtime.getTime() ? undefined : `the password of account '${claims.username}' changed after this token was issued; log in again`;
}

const ACCOUNT_CHECKS: readonly Check[] = [accountEnabled, hasCapability, apiTokenListed, issuedAfterPasswordChange];

export interface ValidityDeps {
  readonly accounts: () => ReadonlyMap<string, AccountSettings>;
  readonly revocation: Revocation;
}

/** Resolves with the token's account, or throws Unauthenticated with the first failed rule. */
export async function checkValidity(claims: TokenClaims, deps: ValidityDeps): Promise<AccountSettings> {
  const account = deps.accounts().get(claims.username);
  if (account === undefined) throw new Unauthenticated(`account '${claims.username}' does not exist`);
  for (const check of ACCOUNT_CHECKS) {
    const reason = check(claims, account);
    if (reason !== undefined) throw new Unauthenticated(reason);
  }
  if (await deps.revocation.isRevoked(claims.jti)) throw new Unauthenticated('token is revoked; log in again');
  return account;
}
